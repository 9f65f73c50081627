"""Hook JSON contract: what Claude Code reads from `specialists hook ...` (in-process)."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import pytest

from specialists.base.display import duration
from specialists.base.owner import SESSION_ENV
from specialists.catalog.discovery import source_dirs
from specialists.events import notices
from specialists.events.inbox import Inbox
from specialists.fronts.hooks import delivery, names, session_start
from specialists.fronts.hooks.common import run_hook
from specialists.store.news import NEWS
from specialists.store.paths import user_state_dir

SESSION = "test-session"  # the Claude Code session these hooks run in (see `session`)


@pytest.fixture(autouse=True)
def session(monkeypatch: pytest.MonkeyPatch) -> str:
    """Hooks run inside a Claude Code session, which exports its id to them."""
    monkeypatch.setenv(SESSION_ENV, SESSION)
    return SESSION


@pytest.fixture
def project() -> Path:
    return Path(os.environ["SPECIALISTS_PROJECT_ROOT"])


@pytest.fixture
def state(project: Path) -> Path:
    return project / ".specialists"


def put_job(
    state: Path, job_id: str, *, ready: bool = True, owner: str = SESSION, **status: object
) -> Path:
    """A job with a status and (ready=True) its notice event for Claude Code session `owner`."""
    job = state / "jobs" / job_id
    job.mkdir(parents=True, exist_ok=True)
    data = {"id": job_id, "specialist": "overthinker", "status": "done", "elapsed_s": 107.2}
    data.update(status)
    (job / "status.json").write_text(json.dumps(data))
    record = {"id": job_id, "specialist": "overthinker", "runner": "pi"}
    (job / "job.json").write_text(json.dumps({**record, "owner": [f"claude-{owner}"]}))
    if ready:
        assert notices.retell(state, job_id)
    return job


def pending(state: Path, owner: str = SESSION) -> list[str]:
    return [e.id for e in Inbox(state, f"claude-{owner}").pending().events]


def call(event: str, stdin: str = "{}") -> tuple[int, str]:
    out = io.StringIO()
    code = run_hook(event, io.StringIO(stdin), out)
    return code, out.getvalue()


def reply(text: str, event: str) -> str:
    assert text.endswith("\n") and text.count("\n") == 1, "one JSON line"
    doc = json.loads(text)
    assert set(doc) == {"hookSpecificOutput"}
    inner = doc["hookSpecificOutput"]
    assert set(inner) == {"hookEventName", "additionalContext"}
    assert inner["hookEventName"] == event
    assert isinstance(inner["additionalContext"], str) and inner["additionalContext"]
    return inner["additionalContext"]


def hook_log() -> str:
    path = Path(user_state_dir()) / "hooks.log"
    return path.read_text() if path.exists() else ""


# --------------------------------------------------------------------------- UserPromptSubmit


def test_nothing_to_say_prints_nothing_at_all(state):
    assert call("user-prompt-submit") == (0, "")
    (state / "owners" / f"claude-{SESSION}").mkdir(parents=True)
    assert call("user-prompt-submit") == (0, "")


def test_a_finished_job_is_one_event_in_the_seed_format_delivered_once(state):
    put_job(state, "a1b2c3d4")
    code, out = call(
        "user-prompt-submit", '{"prompt": "hi", "hook_event_name": "UserPromptSubmit"}'
    )
    assert code == 0
    assert reply(out, "UserPromptSubmit") == (
        "[specialists event] notice from run (a1b2c3d4)\n"
        'original_args: {"specialist":"overthinker"}\n'
        "---\n"
        "Specialist 'overthinker' completed (job a1b2c3d4, 1m47s). "
        "Run: specialists result a1b2c3d4 (MCP tool: result)"
    )
    assert pending(state) == []
    assert call("user-prompt-submit") == (0, "")  # never repeated


def test_a_keep_alive_answer_is_announced_once_then_the_end_again(state):
    job = put_job(state, "a1b2c3d4", ready=False, status="waiting", elapsed_s=30)
    (job / "answers").mkdir()
    (job / "answers" / "1.txt").write_text("first answer")
    notices.retell(state, "a1b2c3d4")
    assert "answered (job a1b2c3d4, 0m30s) and waits for a follow-up" in reply(
        call("user-prompt-submit")[1], "UserPromptSubmit"
    )
    assert call("user-prompt-submit") == (0, "")
    put_job(state, "a1b2c3d4", status="done", elapsed_s=95)  # the job ends: a new event
    assert "completed (job a1b2c3d4, 1m35s)" in reply(
        call("user-prompt-submit")[1], "UserPromptSubmit"
    )


def test_failed_and_cancelled_events_point_at_feed_in_inbox_order(state):
    put_job(
        state, "0badc0de", status="error", elapsed_s=12, error="agent exited with code 3\nTrace"
    )
    put_job(state, "0cafe000", status="cancelled", specialist="reviewer", elapsed_s=3)
    text = reply(call("user-prompt-submit")[1], "UserPromptSubmit")
    first, second = text.split("\n\n")
    assert first.endswith(
        "Specialist 'overthinker' failed (job 0badc0de, 0m12s): agent exited with code 3 Trace. "
        "Run: specialists feed --job 0badc0de (MCP tool: feed)"
    )
    assert second.endswith(
        "Specialist 'reviewer' was cancelled (job 0cafe000, 0m03s). "
        "Run: specialists feed --job 0cafe000 (MCP tool: feed)"
    )


def test_a_long_error_stays_short(state):
    put_job(state, "a1b2c3d4", status="error", error="x" * 5000)
    assert len(call("user-prompt-submit")[1].encode()) <= 600


def test_an_expired_notice_is_acknowledged_unseen(state, monkeypatch):
    put_job(state, "a1b2c3d4")
    later = time.time() + notices.NOTICE_TTL_S + 60
    monkeypatch.setattr(time, "time", lambda: later)
    assert call("user-prompt-submit") == (0, "")
    assert pending(state) == [] and "older than 48 h" in hook_log()


def test_unreadable_status_still_reports(state):
    job = put_job(state, "a1b2c3d4", ready=False)
    (job / "status.json").write_text("{not json")
    notices.retell(state, "a1b2c3d4")
    text = reply(call("user-prompt-submit")[1], "UserPromptSubmit")
    assert "a1b2c3d4" in text and "unreadable" in text


def test_at_most_ten_events_then_a_line_and_the_rest_next_time(state):
    for i in range(13):
        put_job(state, f"{i:08x}")
    text = reply(call("user-prompt-submit")[1], "UserPromptSubmit")
    assert text.count("[specialists event]") == 10
    assert text.endswith(delivery.MORE)
    assert len(pending(state)) == 3
    assert reply(call("user-prompt-submit")[1], "UserPromptSubmit").count("(job ") == 3


def test_events_stay_pending_when_the_output_cannot_be_written(state):
    """At-least-once: nothing is acknowledged unless the reply reached stdout."""
    put_job(state, "a1b2c3d4")

    class Broken(io.StringIO):
        def write(self, s: str) -> int:
            raise BrokenPipeError

    assert run_hook("user-prompt-submit", io.StringIO("{}"), Broken()) == 0
    assert pending(state) == ["job-a1b2c3d4:notice:1"]
    assert "closed stdout" in hook_log()


def test_a_damaged_inbox_line_is_logged_and_later_events_still_arrive(state):
    put_job(state, "0000000a")
    inbox = state / "owners" / f"claude-{SESSION}" / "events.jsonl"
    with open(inbox, "ab") as f:
        f.write(b'{"id": "half a line, then garbage\xff\n[1, 2]\n')
    put_job(state, "0000000b")
    text = reply(call("user-prompt-submit")[1], "UserPromptSubmit")
    assert "(job 0000000a" in text and "(job 0000000b" in text
    assert pending(state) == [] and "at byte" in hook_log()


def test_only_this_sessions_events_are_taken(state):
    put_job(state, "0000000a", owner="another-session")
    assert call("user-prompt-submit") == (0, "")
    assert pending(state, "another-session") == ["job-0000000a:notice:1"]


@pytest.mark.parametrize("stdin", ["", "not json at all", "[1, 2]", "\x00\xff"])
def test_any_stdin_is_tolerated(state, stdin):
    put_job(state, "a1b2c3d4")
    code, out = call("user-prompt-submit", stdin)
    assert code == 0 and "a1b2c3d4" in reply(out, "UserPromptSubmit")
    if stdin.strip() and stdin != "\x00\xff":
        assert "stdin is" in hook_log()


def test_cwd_from_hook_input_finds_the_project(tmp_path, monkeypatch):
    monkeypatch.delenv("SPECIALISTS_PROJECT_ROOT")
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    put_job(other / ".specialists", "a1b2c3d4")
    (other / "sub").mkdir()
    out = call("user-prompt-submit", json.dumps({"cwd": str(other / "sub")}))[1]
    assert "a1b2c3d4" in reply(out, "UserPromptSubmit")


def test_broken_store_prints_nothing_exits_zero(state):
    state.mkdir()
    (state / "owners").write_text("a file where a directory belongs")
    assert call("user-prompt-submit") == (0, "")


# --------------------------------------------------------------------------- SessionStart


def test_session_start_lists_specialists_by_file_name(project):
    text = reply(call("session-start", '{"source": "startup"}')[1], "SessionStart")
    assert text.startswith("[specialists] available: debugger, doc-writer, executor,")
    assert "active" not in text
    (project / "specialists").mkdir()
    (project / "specialists" / "mine.specialist.yaml").write_text("not parsed")
    (project / ".claude" / "agents").mkdir(parents=True)
    (project / ".claude" / "agents" / "helper.md").write_text("---\n")
    text = reply(call("session-start")[1], "SessionStart")
    assert "helper" in text and "mine" in text


def test_session_start_shows_live_jobs_only(state):
    now_ms = int(time.time() * 1000)
    put_job(state, "a1b2c3d4", ready=False, status="running", started_at_ms=now_ms - 62_000)
    put_job(state, "0000dead", ready=False, status="running", started_at_ms=now_ms)
    stale = time.time() - 3600
    os.utime(state / "jobs" / "0000dead" / "status.json", (stale, stale))  # supervisor gone
    put_job(state, "0000d0e0", status="done")
    text = reply(call("session-start")[1], "SessionStart")
    first = text.splitlines()[0]
    assert first.startswith("[specialists] 1 active job(s): a1b2c3d4 overthinker running 1m0")
    assert "0000dead" not in text
    assert "events for this session are waiting" in text
    assert pending(state) == ["job-0000d0e0:notice:1"]  # session-start consumes nothing


def test_session_start_dirs_mirror_the_catalog(project):
    mine = [(Path(p), k) for p, k in names.definition_dirs(project)]
    theirs = [(d.path, d.kind) for d in source_dirs(project)]
    assert mine == theirs


def test_names_are_found_as_deep_as_the_catalog_looks_and_no_deeper(project):
    """The hook's walk (text paths, no YAML) finds the definition files the catalog's does:
    the same depth limit, hidden directories skipped, agents only as .md."""
    from specialists.catalog.discovery import MAX_DEPTH, definition_files

    place = project / "specialists"
    for depth in range(MAX_DEPTH + 3):
        place = place / f"d{depth}"
        place.mkdir(parents=True)
        (place / f"at{depth}.specialist.yaml").write_text("x")
    (project / "specialists" / ".hidden").mkdir()
    (project / "specialists" / ".hidden" / "secret.specialist.yaml").write_text("x")
    (project / "specialists" / "notes.md").write_text("x")  # not an agent directory
    (project / ".claude" / "agents" / "sub").mkdir(parents=True)
    (project / ".claude" / "agents" / "sub" / "helper.md").write_text("x")
    found = names.specialist_names(project)
    catalog = {p.name.split(".")[0] for d in source_dirs(project)[:4] for p in definition_files(d)}
    assert catalog <= set(found), catalog - set(found)
    assert {n for n in found if n.startswith("at")} == {n for n in catalog if n.startswith("at")}
    assert f"at{MAX_DEPTH - 1}" in found and f"at{MAX_DEPTH}" not in found
    assert {"secret", "notes"}.isdisjoint(found) and "helper" in found


def test_session_start_survives_a_broken_store(state):
    state.mkdir()
    (state / "jobs").write_text("not a dir")
    code, out = call("session-start")
    assert code == 0  # names still listed or nothing: never a failure
    assert out == "" or "available" in reply(out, "SessionStart")


# --------------------------------------------------------------------------- helpers


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0m00s"), (12.4, "0m12s"), (107, "1m47s"), (3725, "1h02m")]
)
def test_format_elapsed(seconds, text):
    assert duration(seconds) == text


def test_session_start_reads_the_finished_jobs_index_as_status_writes_it(state):
    from specialists.store import index
    from specialists.store.jobs import JobStore
    from specialists.store.records import JobStatus

    put_job(state, "a1b2c3d4", ready=False, status="done")
    store = JobStore(state, news=NEWS)
    index.save(
        store,
        {
            "a1b2c3d4": index.Finished.of(
                JobStatus.from_dict(
                    json.loads((state / "jobs" / "a1b2c3d4" / "status.json").read_text())
                )
            )
        },
    )
    assert session_start.finished_ids(state / "jobs") == frozenset({"a1b2c3d4"})
    (state / "jobs" / index.INDEX_NAME).write_text("{damaged")
    assert session_start.finished_ids(state / "jobs") == frozenset()


def test_session_start_names_open_missions_for_recovery_after_compaction(state, tmp_path):
    """The head of each mission.json, as the missions store writes it, says which are open;
    a closed, a damaged or a FIFO mission is left out and never blocks the hook."""
    from specialists.features.missions import model, ops
    from specialists.features.missions.store import MissionStore

    store = MissionStore(state, index_dir=tmp_path / "index")
    for mid in ("open1", "done1", "paused1", "fifo1"):
        ops.create(store, title="t" * 200, objective="o" * 4000, mission_id=mid)
    store.update("done1", lambda m: (model.close(m, "completed", "ok", 1), None))
    store.update("paused1", lambda m: (model.set_paused(m, True, 1), None))
    (store.dir("fifo1") / "mission.json").unlink()
    os.mkfifo(store.dir("fifo1") / "mission.json")
    text = reply(call("session-start")[1], "SessionStart")
    line = next(x for x in text.splitlines() if "mission" in x)
    assert line.startswith("[specialists] 2 open mission(s): open1, paused1.")
    assert "specialists mission list, then specialists mission show <id>" in line


def test_session_start_skips_a_planted_status_without_blocking(state, tmp_path):
    """A FIFO, a symlink and an oversized file as status.json are each skipped (and logged);
    the FIFO is never opened for a blocking read, and the live job beside them is listed."""
    put_job(state, "0000000a", ready=False, status="running")
    for job_id in ("0000000b", "0000000c", "0000000d"):
        (state / "jobs" / job_id).mkdir(parents=True)
    os.mkfifo(state / "jobs" / "0000000b" / "status.json")
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"id": "0000000c", "status": "running", "specialist": "x"}))
    (state / "jobs" / "0000000c" / "status.json").symlink_to(secret)
    huge = b'{"status": "running", "pad": "' + b"a" * session_start.MAX_STATUS_BYTES + b'"}'
    (state / "jobs" / "0000000d" / "status.json").write_bytes(huge)
    found = session_start.active_jobs(state)
    assert [s["id"] for s in found] == ["0000000a"]
