"""pi, Claude Code and Codex jobs taken over by a successor supervisor (supervise/checkpoint.py)
on the in-process loopback node: the real supervisor and runners, agents that speak the
recorded protocols (fake pi; recorded Claude Code and Codex lines, held at a gate), real
processes and git. The first supervisor checkpoints, records events past its checkpoint and
dies; the successor reads the output again from the node and must write no event twice and
leave no gap. The same under Ray, after kill -9, is tests/ray/test_ray_takeover.py."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from specialists.runners.claude import ClaudeRunner
from specialists.runners.codex import CodexRunner
from specialists.runners.pi import PiRunner
from specialists.store.control import post_request
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.supervise.beginning import begin, take_over
from specialists.supervise.checkpoint import CHECKPOINT_FILE
from specialists.supervise.supervisor import Supervisor
from tests.integration.test_executor_loopback import SETTINGS
from tests.integration.test_executor_reattach import events_of, node, project, supervisor  # noqa: F401
from tests.support import fake_claude, fake_codex
from tests.support.jobs import new_job, wait_for

PY = sys.executable
FAKE_PI = Path(__file__).resolve().parents[1] / "support" / "fake_pi.py"

# A one-shot agent: reads its prompt, counts its start, prints the first CUT recorded
# lines, waits for the GO file, prints the rest.
GATED = """\
import os, sys, time
prompt = sys.stdin.read()
open(os.environ["STARTS"], "a").write(prompt.replace("\\n", " ") + "\\n")
lines = open(os.environ["LINES_FILE"]).read().splitlines()
cut = int(os.environ["CUT"])
for line in lines[:cut]:
    print(line, flush=True)
while not os.path.exists(os.environ["GO"]):
    time.sleep(0.02)
for line in lines[cut:]:
    print(line, flush=True)
"""

ONE_SHOT = {
    "claude": (ClaudeRunner, fake_claude.TOOL_LINES, "Hello from the mock. Done."),
    "codex": (CodexRunner, fake_codex.TOOL_LINES, None),
}


def gated_agent(tmp_path: Path, lines: list[str], cut: int) -> Path:
    agent = tmp_path / "bin" / "agent"
    agent.parent.mkdir(exist_ok=True)
    agent.write_text(f"#!{PY}\n{GATED}")
    agent.chmod(0o755)
    (tmp_path / "lines.jsonl").write_text("\n".join(lines) + "\n")
    os.environ.update(
        STARTS=str(tmp_path / "starts"),
        LINES_FILE=str(tmp_path / "lines.jsonl"),
        CUT=str(cut),
        GO=str(tmp_path / "go"),
    )
    return agent


def die_after_events(first: Supervisor, want: str) -> None:
    """One checkpointed step, then events recorded past it up to `want`, then death."""
    begin(first)
    first._step()
    die_after_events_now(first, want)


VARY = ("seq", "ts", "duration_ms", "id")  # what differs between two runs of one job


def assert_each_event_once(store: JobStore, job_id: str, baseline: str | None = None) -> list[str]:
    """seq has no gap; with `baseline` (the same job run without a crash), the events are
    exactly the baseline's, but for the notice that says the job was taken over."""
    events = events_of(store, job_id)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    notices = [e for e in events if "supervisor restarted" in str(e.get("message"))]
    assert len(notices) == 1, events
    if baseline is not None:
        mine = [_plain(e, job_id) for e in events if e not in notices]
        assert mine == [_plain(e, baseline) for e in events_of(store, baseline)]
    return [e["event"] for e in events]


def _plain(event: dict[str, Any], job_id: str) -> Any:
    kept = {k: v for k, v in event.items() if k not in VARY}
    return json.loads(json.dumps(kept).replace(job_id, "<job>"))


def uninterrupted(store: JobStore, root: Path, on: Any, make: Any, **job: Any) -> str:
    record, lock = new_job(store, root, **job)
    status = supervisor(store, record, on, make()).run()
    lock.release()
    assert status.status == "done", status.error
    return record.id


@pytest.mark.parametrize("name", ["claude", "codex"])
def test_a_one_shot_agent_is_taken_over_mid_run(project, node, tmp_path, name):  # noqa: F811
    """The agent has started a tool (its toolcall event is written after the checkpoint)
    when the supervisor dies: the successor reads on, writes the toolcall not again, the
    tool's end and the answer once, and the agent got its prompt once."""
    make, lines, answer = ONE_SHOT[name]
    translator = make()._new_translator()
    said = [translator.feed(json.loads(line), 0.0) for line in lines]
    cut = next(n for n, events in enumerate(said) if any(e.event == "toolcall" for e in events))
    agent = gated_agent(tmp_path, lines, cut + 1)
    store = JobStore(project / ".specialists", news=NEWS)
    settings = {**SETTINGS, "forward_env": ["STARTS", "LINES_FILE", "CUT", "GO"]}
    record, lock = new_job(
        store, project, runner=name, runner_options={"bin": str(agent)}, executor=settings
    )
    die_after_events(supervisor(store, record, node, make()), "toolcall")
    checkpoint = json.loads((store.job_dir(record.id) / CHECKPOINT_FILE).read_text())
    assert checkpoint["adoptable"] and checkpoint["runner"]["runner"] == name
    (tmp_path / "go").touch()
    status = supervisor(store, record, node, make(), reattach=True).run()
    lock.release()
    assert status.status == "done", (status.error, events_of(store, record.id))
    assert (tmp_path / "starts").read_text().count("\n") == 1
    job = {"runner": name, "runner_options": {"bin": str(agent)}, "executor": settings}
    baseline = uninterrupted(store, project, node, make, **job)
    kinds = assert_each_event_once(store, record.id, baseline)
    assert kinds.count("toolcall") == 1 and kinds.count("tool_execution_end") == 1, kinds
    assert kinds.count("starting") == 1 and kinds.count("run_end") == 1, kinds
    if answer is not None:
        assert store.read_result(record.id) == answer


def test_a_pi_run_is_taken_over_mid_answer(project, node, tmp_path):  # noqa: F811
    """pi streams its answer; the supervisor dies after a `text` event it wrote past its
    checkpoint. The successor restores the RPC conversation (the prompt's id answered, the
    result queries it then makes numbered as the first one would have), writes nothing
    twice, and pi got one prompt."""
    store = JobStore(project / ".specialists", news=NEWS)
    log = tmp_path / "commands.jsonl"
    os.environ.update(FAKE_PI_SCENARIO="slow", FAKE_PI_CHUNKS="80", FAKE_PI_DELAY="0.02")
    os.environ["FAKE_PI_LOG"] = str(log)
    record, lock = new_job(
        store,
        project,
        runner="pi",
        runner_options={"pi_bin": [PY, str(FAKE_PI)]},
        executor=SETTINGS,
    )
    die_after_events(supervisor(store, record, node, PiRunner()), "text")
    status = supervisor(store, record, node, PiRunner(), reattach=True).run()
    lock.release()
    assert status.status == "done", (status.error, events_of(store, record.id))
    assert store.read_result(record.id) == "".join(f"tok{i} " for i in range(80))
    commands = [json.loads(line) for line in log.read_text().splitlines()]
    log.unlink()
    job = {"runner": "pi", "runner_options": {"pi_bin": [PY, str(FAKE_PI)]}, "executor": SETTINGS}
    baseline = uninterrupted(store, project, node, PiRunner, **job)
    kinds = assert_each_event_once(store, record.id, baseline)
    # The answer's words in two windows (the opening 300 characters, then the rest), each
    # once: the successor's replay cut the text where its predecessor had.
    assert kinds.count("text") == 2 and kinds.count("run_end") == 1, kinds
    said = [e["text"] for e in events_of(store, record.id) if e["event"] == "text"]
    answer = "".join(f"tok{i} " for i in range(80))  # 470 characters
    assert said == [answer[:300], answer[300:460]]  # the opening, then an excerpt of the rest
    assert [c["type"] for c in commands].count("prompt") == 1, commands
    ids = [c.get("id") for c in commands if c.get("id")]
    assert len(ids) == len(set(ids)), ids  # no request sent twice


def test_a_claude_job_waiting_between_runs_is_taken_over_and_answers_a_follow_up(
    project,  # noqa: F811
    node,  # noqa: F811
    tmp_path,
):
    """A keep-alive job has answered and waits; no agent process runs. Its successor takes
    it over from an idle checkpoint (no cursor): it is `waiting` with the first answer, and
    a follow-up starts a new process on the node resuming the same session."""
    store = JobStore(project / ".specialists", news=NEWS)
    log = tmp_path / "claude.jsonl"
    os.environ.update(FAKE_CLAUDE_SCENARIO="text", FAKE_CLAUDE_LOG=str(log))
    agent = fake_claude.install(tmp_path / "bin")
    record, lock = new_job(
        store,
        project,
        runner="claude",
        runner_options={"bin": str(agent)},
        executor=SETTINGS,
        keep_alive=True,
    )
    first = supervisor(store, record, node, ClaudeRunner())
    begin(first)
    inner = first.runner.inner  # type: ignore[attr-defined]
    waiting = lambda: first.status.status == "waiting" and inner._proc is None  # noqa: E731
    wait_for(lambda: first._step() or waiting(), what="the first answer, its process gone")
    first._step()  # the idle checkpoint
    first.recorder.writer.close()
    checkpoint = json.loads((store.job_dir(record.id) / CHECKPOINT_FILE).read_text())
    assert checkpoint["adoptable"] and checkpoint["cursor"] is None, checkpoint
    assert checkpoint["job"]["answers"] == 1
    second = supervisor(store, record, node, ClaudeRunner(), reattach=True)
    take_over(second)
    assert second.status.status == "waiting" and second.state.answers == 1
    post_request(store.job_dir(record.id), "follow_up", "and once more")
    wait_for(lambda: second._step() or second.state.answers == 2, what="the follow-up's answer")
    post_request(store.job_dir(record.id), "stop")
    while not second.recorder.finished:
        second._step()
    second.recorder.writer.close()
    lock.release()
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["stdin"] for r in runs] == ["do it", "and once more"]
    session = runs[0]["argv"][runs[0]["argv"].index("--session-id") + 1]
    assert runs[1]["argv"][runs[1]["argv"].index("--resume") + 1] == session
    kinds = assert_each_event_once(store, record.id)
    assert kinds.count("starting") == 1 and kinds.count("run_end") == 2, kinds


def checkpointed_command_job(store: JobStore, root: Path, on: Any, tmp_path: Path) -> Any:
    """A command job on the node, its first checkpoint written, its supervisor gone."""
    from specialists.runners.command import CommandRunner
    from tests.integration.test_executor_reattach import command_job

    record, lock = command_job(store, root, tmp_path)
    first = supervisor(store, record, on, CommandRunner())
    begin(first)
    first._step()
    first.recorder.writer.close()
    path = store.job_dir(record.id) / CHECKPOINT_FILE
    return record, lock, path, json.loads(path.read_text())


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda c: c["runner"].pop("stdout_bytes"), "its checkpoint is damaged: KeyError"),
        (lambda c: c.update(runner_name="pi"), "is of the 'pi' runner, not 'command'"),
        (lambda c: c["runner"].update(runner="native"), "state of the 'native' runner"),
        (lambda c: c.update(v=1), "is of version 1, not 2"),
        (lambda c: c["cursor"].update(seq=10**6), "from item 1000000, past the"),
        (lambda c: c.pop("job"), "its checkpoint is unreadable: KeyError('job')"),
    ],
    ids=["damaged", "other-runner", "other-runner-state", "old-version", "cursor-past", "no-job"],
)
def test_a_checkpoint_that_does_not_fit_ends_the_job_saying_why(
    project,  # noqa: F811
    node,  # noqa: F811
    tmp_path,
    damage,
    said,
):
    """A damaged checkpoint, one of another runner or version, or a cursor past what the
    node holds of the agent's output: the successor does not guess. The job ends `error`
    with the reason (the agent's lease then ends it, as after any crash)."""
    from specialists.runners.command import CommandRunner

    store = JobStore(project / ".specialists", news=NEWS)
    record, lock, path, checkpoint = checkpointed_command_job(store, project, node, tmp_path)
    damage(checkpoint)
    path.write_text(json.dumps(checkpoint))
    status = supervisor(store, record, node, CommandRunner(), reattach=True).run()
    lock.release()
    assert status.status == "error"
    assert said in (status.error or ""), status.error
    assert (status.error or "").startswith("supervisor crashed")


def test_output_the_node_dropped_after_the_cursor_is_refused(
    project,  # noqa: F811
    node,  # noqa: F811
    tmp_path,
):
    """The node acknowledged past the checkpoint (a supervisor that read without
    checkpointing): the output after the cursor is gone, so the successor refuses rather
    than read on with a hole."""
    from specialists.runners.command import CommandRunner

    store = JobStore(project / ".specialists", news=NEWS)
    record, lock, _, checkpoint = checkpointed_command_job(store, project, node, tmp_path)
    (tmp_path / "first").touch()
    proc_id = checkpoint["cursor"]["proc"]
    proc = node.core.procs[proc_id]
    wait_for(lambda: proc.seq > 0, what="output on the node")
    node.call_sync("read", proc_id, proc.seq, 0.0, proc.seq)  # acknowledges all of it
    status = supervisor(store, record, node, CommandRunner(), reattach=True).run()
    lock.release()
    assert status.status == "error"
    assert "has dropped the agent's output after item 0" in (status.error or ""), status.error


def test_a_job_waiting_for_a_timer_is_taken_over_and_the_timer_wakes_it(
    project,  # noqa: F811
    node,  # noqa: F811
    tmp_path,
):
    """A Claude job answered with a timer of its own pending, so it waits for work (no
    process runs); its supervisor dies. The successor comes back waiting for the same work,
    the timer fires and wakes the agent (a second run, resuming the session, told of the
    timer), and that answer ends the job."""
    import time

    from specialists.events.model import EventSource
    from specialists.events.timers import TimerStore

    store = JobStore(project / ".specialists", news=NEWS)
    log = tmp_path / "claude.jsonl"
    os.environ.update(FAKE_CLAUDE_SCENARIO="text", FAKE_CLAUDE_LOG=str(log))
    agent = fake_claude.install(tmp_path / "bin")
    record, lock = new_job(
        store, project, runner="claude", runner_options={"bin": str(agent)}, executor=SETTINGS
    )
    now = time.time()
    TimerStore(store.root, f"job-{record.id}").set(
        int((now + 4) * 1000),
        now_ms=int(now * 1000),
        note="look again",
        source=EventSource("sleep"),
    )
    first = supervisor(store, record, node, ClaudeRunner())
    begin(first)
    inner = first.runner.inner  # type: ignore[attr-defined]
    waiting = lambda: first.state.waiting_for_work and inner._proc is None  # noqa: E731
    wait_for(lambda: first._step() or waiting(), what="the wait, with the run's process gone")
    first._step()
    first.recorder.writer.close()
    checkpoint = json.loads((store.job_dir(record.id) / CHECKPOINT_FILE).read_text())
    assert checkpoint["job"]["waiting_for_work"] and checkpoint["cursor"] is None, checkpoint
    status = supervisor(store, record, node, ClaudeRunner(), reattach=True).run()
    lock.release()
    assert status.status == "done", (status.error, events_of(store, record.id))
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(runs) == 2 and "look again" in runs[1]["stdin"], runs
    kinds = assert_each_event_once(store, record.id)
    assert kinds.count("woken") == 1 and kinds.count("run_end") == 2, kinds


def test_a_second_successor_racing_the_first_leaves_the_job_alone(
    project,  # noqa: F811
    node,  # noqa: F811
    tmp_path,
):
    """While one successor holds the job's lock (recovery hands it its descriptor), a second
    `python -m specialists.supervise <job> --reattach` cannot take the lock: it exits 1
    without adopting the agent or writing a line (so events are not read and written twice).
    That recovery starts one successor only is test_executor_reattach.py's
    test_recovery_hands_the_job_to_a_new_supervisor_and_a_second_reader_waits."""
    import subprocess

    store = JobStore(project / ".specialists", news=NEWS)
    record, lock, path, _ = checkpointed_command_job(store, project, node, tmp_path)
    job_dir = store.job_dir(record.id)
    before = [(job_dir / name).read_bytes() for name in ("events.jsonl", "status.json")]
    second = subprocess.run(
        [PY, "-m", "specialists", "_supervise", str(job_dir), "--reattach"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    lock.release()
    assert second.returncode == 1, second.stderr
    assert "held by another supervisor" in second.stderr
    assert [(job_dir / name).read_bytes() for name in ("events.jsonl", "status.json")] == before
    assert json.loads(path.read_text())["adoptable"]


def test_a_pi_job_is_taken_over_in_its_second_run(project, node, tmp_path):  # noqa: F811
    """A keep-alive pi job answered, took a follow-up, and is streaming the second answer
    when its supervisor dies (its `text` written past the checkpoint). The successor knows
    the first answer and the run count, reads the second run on, and comes back waiting
    with both answers; pi got two prompts, no request twice."""
    store = JobStore(project / ".specialists", news=NEWS)
    log = tmp_path / "commands.jsonl"
    os.environ.update(FAKE_PI_SCENARIO="slow", FAKE_PI_CHUNKS="60", FAKE_PI_DELAY="0.02")
    os.environ["FAKE_PI_LOG"] = str(log)
    options = {"pi_bin": [PY, str(FAKE_PI)]}
    record, lock = new_job(
        store, project, runner="pi", runner_options=options, executor=SETTINGS, keep_alive=True
    )
    first = supervisor(store, record, node, PiRunner())
    begin(first)
    wait_for(lambda: first._step() or first.status.status == "waiting", what="the first answer")
    post_request(store.job_dir(record.id), "follow_up", "and once more")
    wait_for(lambda: first._step() or first.status.status == "running", what="the second run")
    die_after_events_now(first, "text")
    second = supervisor(store, record, node, PiRunner(), reattach=True)
    take_over(second)
    assert second.state.answers == 1 and second.state.last_answer is not None
    wait_for(lambda: second._step() or second.state.answers == 2, what="the second answer")
    post_request(store.job_dir(record.id), "stop")
    while not second.recorder.finished:
        second._step()
    second.recorder.writer.close()
    lock.release()
    assert store.read_status(record.id).status == "done"  # type: ignore[union-attr]
    kinds = assert_each_event_once(store, record.id)
    assert kinds.count("run_end") == 2 and kinds.count("text") == 4, kinds  # 2 windows a run
    said = "".join(e["text"] for e in events_of(store, record.id) if e["event"] == "text")
    assert said == 2 * "".join(f"tok{i} " for i in range(60))  # every word once
    commands = [json.loads(line) for line in log.read_text().splitlines()]
    assert [c["type"] for c in commands].count("prompt") == 2, commands
    ids = [c.get("id") for c in commands if c.get("id")]
    assert len(ids) == len(set(ids)), ids


def die_after_events_now(first: Supervisor, want: str) -> None:
    """Events recorded past the last checkpoint up to `want`, then death."""
    seen: list[Any] = []

    def read() -> bool:
        for ev in first.runner.poll(0.2):
            first.on_runner_event(ev)
            seen.append(ev)
        # The checkpointed step may already have recorded it (a fast agent): the log says so.
        recorded = [e["event"] for e in events_of(first.store, first.record.id)]
        return any(getattr(ev, "event", None) == want for ev in seen) or want in recorded

    wait_for(read, what=f"a {want} event")
    first.recorder.writer.close()
