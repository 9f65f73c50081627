"""Completion notices reach the one who asked, once: owners (owner.py) and notices
(notices.py), against real processes, real files and planted ones."""

from __future__ import annotations

import io
import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from specialists.base.owner import (
    JOB_ENV,
    OWNER_ENV,
    SESSION_ENV,
    Owner,
    is_key,
    launching_owner,
    reading_owner,
)
from specialists.events import notices
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.fronts.hooks.common import run_hook


@pytest.fixture
def state() -> Path:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists"
    (root / "jobs").mkdir(parents=True)
    return root


def put_job(
    state: Path, job_id: str, owner: list[str], status: str = "done", runner: str = "pi"
) -> None:
    job = state / "jobs" / job_id
    job.mkdir(exist_ok=True)
    (job / "job.json").write_text(json.dumps({"id": job_id, "owner": owner, "runner": runner}))
    (job / "status.json").write_text(
        json.dumps({"id": job_id, "specialist": "s", "status": status, "elapsed_s": 1})
    )


# --- owners ---------------------------------------------------------------------------------


def test_launcher_keys_in_order_of_precedence():
    """SPECIALISTS_OWNER wins; a job's id wins over the session its agent inherited."""
    env = {SESSION_ENV: "abc", JOB_ENV: "0123abcd", OWNER_ENV: "claude-mine"}
    assert launching_owner(env).keys == ("claude-mine",)
    del env[OWNER_ENV]
    assert launching_owner(env).keys == ("job-0123abcd",)
    del env[JOB_ENV]
    assert launching_owner(env).keys[0] == "claude-abc"
    assert launching_owner({OWNER_ENV: "none", SESSION_ENV: "abc"}).keys == ()


@pytest.mark.parametrize(
    "bad", ["", "x", "job-../x", "claude-a b", "claude-\x1b[31m", "agent-" + "9" * 300, "Bad-x"]
)
def test_malformed_keys_are_ignored(bad):
    assert launching_owner({OWNER_ENV: bad}).keys in ((), launching_owner({}).keys)
    assert not Owner(("claude-x",)).matches([bad])


def test_keys_are_event_owner_keys():
    """Wave 2's inboxes (events/owners.py) take our keys as they are."""
    from specialists.events.owners import is_owner

    keys = [
        *launching_owner({SESSION_ENV: "9f1c-uuid/../x y"}).keys,
        *launching_owner({JOB_ENV: "0123abcd"}).keys,
        "agent-123.456",
    ]
    assert keys and all(is_owner(k) for k in keys), keys
    assert all(is_owner(k) == is_key(k) for k in ["x-", "-x", "a-..", "ab-c..d", "A-x", "a-.x"])


def test_job_env_must_be_a_job_id():
    assert launching_owner({JOB_ENV: "../../etc"}).keys == launching_owner({}).keys


def test_reader_matches_by_any_key():
    reader = reading_owner("s1", env={SESSION_ENV: "s1"})
    assert reader.matches(["agent-1.2", "claude-s1"])
    assert not reader.matches(["claude-s2"])
    assert not reader.matches("claude-s1")  # a string is not a key list


# --- notices ---------------------------------------------------------------------------------


def inbox_events(state: Path, key: str) -> list:
    return list(Inbox(state, key).pending().events)


def test_a_notice_is_one_event_in_every_owner_key_inbox(state):
    """The end of a job reaches each key of its owner as the same `notice` event."""
    put_job(state, "0000000a", ["claude-s", "agent-1.2"])
    assert notices.retell(state, "0000000a")
    for key in ("claude-s", "agent-1.2"):
        (event,) = inbox_events(state, key)
        assert event.id == "job-0000000a:notice:1" and event.kind == "notice"
        assert event.body.startswith("Specialist 's' completed (job 0000000a, 0m01s).")
        assert "specialists result 0000000a" in event.body
        assert event.details["job_id"] == "0000000a"


def test_no_owner_no_notice_and_proc_jobs_report_their_own_end(state):
    put_job(state, "0000000b", [])
    assert notices.retell(state, "0000000b") is False
    put_job(state, "0000000c", ["claude-s"], runner="proc")
    assert notices.retell(state, "0000000c") is False  # procs/ posts its job_exit
    assert not (state / "owners").exists()


def test_the_supervisor_and_recovery_wake_the_owner_once(state):
    """The end is posted twice (a supervisor, then crash recovery), or first by
    supervise/news.py under the same id: the owner hears of it once."""
    put_job(state, "0000000d", ["claude-s"])
    Inbox(state, "claude-s").append(
        "notice", EventSource("job", "0000000d", {}), "ended", source_id="job-0000000d", seq=1
    )
    notices.retell(state, "0000000d")
    notices.retell(state, "0000000d")
    assert [e.body for e in inbox_events(state, "claude-s")] == ["ended"]


def test_a_keep_alive_answer_is_a_notice_of_its_own(state):
    put_job(state, "0000000e", ["claude-s"], status="waiting")
    (state / "jobs" / "0000000e" / "answers").mkdir()
    (state / "jobs" / "0000000e" / "answers" / "1.txt").write_text("an answer")
    notices.retell(state, "0000000e")
    put_job(state, "0000000e", ["claude-s"], status="done")
    notices.retell(state, "0000000e")
    ids = [e.id for e in inbox_events(state, "claude-s")]
    assert ids == ["0000000e.answer:notice:1", "job-0000000e:notice:1"]
    assert "waits for a follow-up" in inbox_events(state, "claude-s")[0].body


def test_an_unreadable_status_still_tells_the_owner(state):
    put_job(state, "0000000f", ["claude-s"])
    (state / "jobs" / "0000000f" / "status.json").write_text("{not json")
    notices.retell(state, "0000000f")
    (event,) = inbox_events(state, "claude-s")
    assert "status is unreadable" in event.body and "feed --job 0000000f" in event.body


def test_prune_bounds_the_notices(state, monkeypatch):
    """Expired notices, those of collected jobs, and the oldest past MAX_NOTICES go."""
    monkeypatch.setattr(notices, "MAX_NOTICES", 3)
    for i in range(5):
        put_job(state, f"{i:08x}", ["claude-s"])
        notices.retell(state, f"{i:08x}")
    put_job(state, "0000dead", ["claude-s"])
    notices.retell(state, "0000dead")
    shutil.rmtree(state / "jobs" / "0000dead")  # collected
    assert notices.prune(state) == []
    assert [e.details["job_id"] for e in inbox_events(state, "claude-s")] == [
        "00000002",
        "00000003",
        "00000004",
    ]
    assert notices.prune(state, now=time.time() + notices.NOTICE_TTL_S + 1) == []
    assert inbox_events(state, "claude-s") == []


def test_clear_drops_only_that_jobs_notice(state):
    for job_id in ("00000011", "00000012"):
        put_job(state, job_id, ["claude-s"])
        notices.retell(state, job_id)
    notices.clear(state, "00000011")
    notices.clear(state, "00000011")  # twice is fine
    notices.clear(state, "../../x")  # not an id: nothing happens
    assert [e.details["job_id"] for e in inbox_events(state, "claude-s")] == ["00000012"]


def test_wave_one_markers_become_events_and_planted_files_never_hang(state):
    """`.specialists/ready/` of wave 1: a marker of a live job becomes its notice event; a
    FIFO named like a marker (which would hang a blocking open) and a stale claim are
    removed; the directory goes."""
    ready = state / "ready"
    ready.mkdir()
    put_job(state, "00000013", ["claude-s"])
    (ready / "00000013").write_text("claude-s\n")
    os.mkfifo(ready / "00000014")
    (ready / ".00000015.99.claim").write_text("claude-s\n")
    assert notices.prune(state) == []
    assert not ready.exists()
    assert [e.details["job_id"] for e in inbox_events(state, "claude-s")] == ["00000013"]


# --- the hook, per session ------------------------------------------------------------------


def call_hook(session: str) -> str:
    out = io.StringIO()
    data = json.dumps({"session_id": session, "hook_event_name": "UserPromptSubmit"})
    assert run_hook("user-prompt-submit", io.StringIO(data), out) == 0
    if not out.getvalue():
        return ""
    return str(json.loads(out.getvalue())["hookSpecificOutput"]["additionalContext"])


def test_concurrent_sessions_each_get_only_their_own_notices(state):
    """Eight sessions prompt at once over 40 notices: each sees exactly its five, once."""
    sessions = [f"s{n}" for n in range(8)]
    expected: dict[str, set[str]] = {s: set() for s in sessions}
    for i in range(40):
        job_id, session = f"{i:08x}", sessions[i % 8]
        put_job(state, job_id, [f"claude-{session}"])
        notices.retell(state, job_id)
        expected[session].add(job_id)
    seen: dict[str, list[str]] = {s: [] for s in sessions}
    start = threading.Barrier(len(sessions) * 2)

    def prompt(session: str) -> None:
        start.wait()
        text = call_hook(session)
        seen[session].extend(part[:8] for part in text.split("(job ")[1:])

    threads = [threading.Thread(target=prompt, args=(s,)) for s in sessions * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for session in sessions:
        assert sorted(seen[session]) == sorted(expected[session]), session
        assert inbox_events(state, f"claude-{session}") == []
