"""Attention's companion (features/attention/companion.py) with a scripted agent on a fake
clock: each trigger reaches events.jsonl, status.json and the owner's inbox once per state;
the watchdog reviews a changed tree and leaves unchanged and reverted trees alone."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from specialists.events.inbox import Inbox
from specialists.runners.base import Activity, RunFinished, toolcall
from specialists.runners.testing import Call, ScriptedRunner, Step
from specialists.store.records import JobStatus
from specialists.supervise.supervisor import Supervisor
from tests.support.jobs import TEST_OWNER, new_job
from tests.support.supervising import Harness

QUIET = {"quiet_ms": 5000, "tool_ms": None, "failures": None}
TOOL = {"quiet_ms": None, "tool_ms": 8000, "failures": None}
FAILS = {"quiet_ms": None, "tool_ms": None, "failures": 3}
OFF = {"quiet_ms": None, "tool_ms": None, "failures": None}


def run_job(
    h: Harness,
    script: list[Step],
    *,
    exits_on_close: bool = True,
    **record: Any,
) -> JobStatus:
    cwd = Path(record.pop("cwd", h.tmp_path))
    rec, lock = new_job(h.store, cwd, **record)
    h.job_id = rec.id
    h.supervisor = Supervisor(
        h.store,
        rec,
        ScriptedRunner(script, clock=h.clock, exits_on_close=exits_on_close),
        tick=0.1,
        clock=h.clock,
        sleep=h.clock.sleep,
        wall=h.clock,
        handle_signals=False,
    )
    try:
        return h.supervisor.run()
    finally:
        lock.release()


def attention_events(h: Harness) -> list[dict[str, Any]]:
    return [e for e in h.events() if e["event"] == "needs_attention"]


def notices(h: Harness) -> list[Any]:
    events = Inbox(h.store.root, TEST_OWNER).pending().events
    return [e for e in events if "attention" in e.details and e.details["job_id"] == h.job_id]


def snapshot(h: Harness, into: list[JobStatus]) -> Call:
    return Call(lambda: into.append(h.store.read_status(h.job_id)))  # type: ignore[arg-type]


def test_a_quiet_agent_is_noticed_once_with_next_actions(tmp_path: Path):
    """Quiet past the threshold: one needs_attention event, status.json says it as a fact,
    the owner's inbox gets one notice naming the concrete next commands; activity clears
    the status, and the same quiet spell never notifies twice."""
    h = Harness(tmp_path)
    seen: list[JobStatus] = []
    script: list[Step] = [Activity("thinking"), 12.0, snapshot(h, seen), Activity("text")]
    script += [snapshot(h, seen), RunFinished("done")]
    st = run_job(h, script, attention=QUIET)
    assert st.status == "done"
    [event] = attention_events(h)
    assert event["attention"] == "quiet" and event["quiet_ms"] >= 5000
    during, after = seen
    assert during.needs_attention is not None and during.needs_attention.startswith("no activity")
    assert "stuck" not in during.needs_attention
    assert during.last_event_at_ms is not None
    assert after.needs_attention is None  # activity resumed
    [notice] = notices(h)
    assert notice.kind == "notice" and notice.details["attention"] == "quiet"
    assert notice.id == f"{h.job_id}.attention:notice:1"
    for command in ("status --job", "steer", "interrupt", "stop"):
        assert f"specialists {command} {h.job_id}" in notice.body
    assert "not diagnosed" in notice.body


def test_quiet_again_after_activity_is_a_new_state(tmp_path: Path):
    h = Harness(tmp_path)
    script: list[Step] = [Activity("thinking"), 6.0, Activity("text"), 6.0, RunFinished("x")]
    run_job(h, script, attention=QUIET)
    assert [e["attention"] for e in attention_events(h)] == ["quiet", "quiet"]
    assert [n.id.rsplit(":", 1)[1] for n in notices(h)] == ["1", "2"]


def test_an_open_tool_call_is_noticed_and_status_shows_it(tmp_path: Path):
    """The status names the open call and since when: facts, not a guess."""
    h = Harness(tmp_path)
    seen: list[JobStatus] = []
    script: list[Step] = [toolcall("bash", {"command": "sleep 100"}), 10.0, snapshot(h, seen)]
    script += [Activity("tool_execution_end", {"tool": "bash", "is_error": False})]
    script += [snapshot(h, seen), RunFinished("ok")]
    run_job(h, script, attention=TOOL)
    [event] = attention_events(h)
    assert event["attention"] == "tool_open" and event["tool"] == "bash"
    during, after = seen
    assert during.current_tool == "bash(sleep 100)"
    assert during.tool_open_since_ms is not None
    assert during.needs_attention and "bash" in during.needs_attention
    assert after.tool_open_since_ms is None and after.needs_attention is None
    [notice] = notices(h)
    assert notice.details["attention"] == "tool_open" and notice.details["tool"] == "bash"


def test_three_failed_mutating_calls_are_noticed(tmp_path: Path):
    h = Harness(tmp_path)
    script: list[Step] = []
    for _ in range(4):
        script += [toolcall("edit", {"path": "a.py"})]
        script += [Activity("tool_execution_end", {"tool": "edit", "is_error": True})]
    script += [RunFinished("gave up")]
    run_job(h, script, attention=FAILS)
    [event] = attention_events(h)
    assert event["attention"] == "failures" and event["count"] == 3
    [notice] = notices(h)
    assert "3 failed mutating tool calls in a row" in notice.body


def test_off_emits_nothing(tmp_path: Path):
    h = Harness(tmp_path)
    script: list[Step] = [toolcall("bash", {"command": "x"}), 30.0]
    script += [Activity("tool_execution_end", {"tool": "bash", "is_error": True})] * 3
    script += [30.0, RunFinished("ok")]
    run_job(h, script, attention=OFF)
    assert attention_events(h) == [] and notices(h) == []


def test_a_job_that_ends_as_its_notice_falls_due_emits_nothing(tmp_path: Path):
    """Adversarial: the run ends just before quiet reaches its threshold, and the agent
    takes its time to exit (the close ladder runs on past the threshold). Once the end is
    decided nothing about attention is written or posted."""
    h = Harness(tmp_path)
    script: list[Step] = [Activity("thinking"), 4.9, RunFinished("done")]
    run_job(h, script, attention=QUIET, exits_on_close=False)
    assert h.clock() - 1000.0 > 5.0  # the job really lived past the threshold
    assert attention_events(h) == [] and notices(h) == []
    assert h.kinds()[-1] == "done"


def test_a_stop_while_quiet_emits_nothing_after_the_end(tmp_path: Path):
    h = Harness(tmp_path)
    script: list[Step] = [Activity("thinking"), 4.0, h.post("stop"), 100.0]
    st = run_job(h, script, attention=QUIET)
    assert st.status == "cancelled"
    kinds = h.kinds()
    assert "needs_attention" not in kinds and kinds[-1] == "cancelled"
    assert notices(h) == []


def test_a_flood_of_events_does_not_flood_the_inbox(tmp_path: Path):
    """Adversarial: thousands of failing mutating calls and quiet spells in one run give
    at most the per-job cap of notices, and every one of them is a distinct state."""
    h = Harness(tmp_path)
    script: list[Step] = []
    for i in range(400):
        script += [Activity("tool_execution_end", {"tool": "bash", "is_error": i % 4 != 3})]
        if i % 10 == 0:
            script += [6.0]
    script += [RunFinished("ok")]
    run_job(h, script, attention={"quiet_ms": 5000, "tool_ms": None, "failures": 3})
    from specialists.features.attention.watch import MAX_RAISED

    got = notices(h)
    assert 0 < len(got) <= MAX_RAISED
    assert len({n.id for n in got}) == len(got)


# --- the watchdog --------------------------------------------------------------------------


def git_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    (path / ".gitignore").write_text("ignored/\n")
    (path / "kept.txt").write_text("one\n")
    subprocess.run(["git", "add", "-A"], cwd=path, check=True)
    subprocess.run(["git", "commit", "-qm", "base"], cwd=path, check=True)
    return path


def write(path: Path, text: str) -> Call:
    def go() -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    return Call(go)


DOG = {"enabled": True, "reviewer": "reviewer", "max_reviews": 2}
