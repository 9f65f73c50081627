"""The spawn core without processes: the one start with its supervisor launch faked (the
`supervisors` fixture) and the in-memory sandbox fake.

Each step of a launch can fail; these tests prove that whichever one does, nothing is left
behind (R-H7a): no thread record, no sandbox, no job that looks as if it may yet run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specialists.base.errors import StoreError, UserError
from specialists.features.sandbox.testing import FakeSandbox
from specialists.features.threads.records import ThreadStore
from specialists.features.threads.spawn import Spawned, SpawnRequest, spawn_thread
from specialists.store.jobs import JobStore
from tests.support.starting import FakeSupervisors

OWNER = "claude-tests"


def failing(step: str, monkeypatch: pytest.MonkeyPatch, fake: FakeSupervisors) -> dict[str, Any]:
    """Make a launch fail at `step`: its planning (an unknown specialist: a refusal), the
    job's creation or its supervisor's start (a full disk). The request's extra fields."""
    if step == "plan":
        return {"specialist": "no-such-specialist"}
    if step == "create":

        def refuse(*_args: object) -> None:
            raise StoreError("could not create the job: No space left on device")

        monkeypatch.setattr("specialists.supervise.start.create_job", refuse)
    if step == "start":
        fake.fail = "No space left on device"
    return {}


def _spawn(tmp_path: Path, request: SpawnRequest, sandboxes: FakeSandbox) -> Spawned:
    state_root = tmp_path / ".specialists"
    return spawn_thread(state_root, OWNER, None, tmp_path, request, sandboxes=sandboxes, now_ms=1)


@pytest.mark.parametrize("step", ["plan", "create", "start"])
def test_a_launch_failing_at_any_step_leaves_nothing(
    tmp_path: Path, step: str, monkeypatch: pytest.MonkeyPatch, supervisors: FakeSupervisors
) -> None:
    sandboxes = FakeSandbox(tmp_path)
    extra = failing(step, monkeypatch, supervisors)
    request = SpawnRequest("part", ("root",), fresh_context=True, sandbox=True, **extra)
    with pytest.raises((UserError, StoreError)):
        _spawn(tmp_path, request, sandboxes)
    assert ThreadStore(tmp_path / ".specialists").all() == ([], [])
    assert [
        p for p in (tmp_path / ".specialists" / "threads").iterdir() if p.name.startswith("t-")
    ] == []
    assert [s for s in sandboxes.records.values() if s.removed_at_ms is None] == []
    assert supervisors.started == []
    jobs = JobStore(tmp_path / ".specialists", news=None)
    left = [jobs.read_status(j) for j in jobs.list_ids()]
    # A job whose supervisor could not start keeps its recorded error; none may yet run.
    assert [st.status if st else None for st in left] == (["error"] if step == "start" else [])


def test_the_child_record_holds_parent_stack_owner_and_sandbox(
    tmp_path: Path, supervisors: FakeSupervisors
) -> None:
    sandboxes = FakeSandbox(tmp_path)
    request = SpawnRequest("part", ("root",), fresh_context=True, sandbox=True, call_id="c9")
    spawned = _spawn(tmp_path, request, sandboxes)
    (record,) = supervisors.started
    tid = spawned.thread.id
    assert record.thread == {"id": tid, "parent": OWNER, "stack": ["root", tid]}
    assert record.owner == [OWNER] and record.sandbox == tid and record.parent_id is None
    assert record.cwd == str(spawned.sandbox.path)  # type: ignore[union-attr]
    assert record.prompt.startswith("[specialists thread]\nYou are thread " + tid)
    assert record.prompt.endswith("\n\npart")
    assert ThreadStore(tmp_path / ".specialists").get(tid) == spawned.thread
    assert spawned.thread.call_id == "c9" and spawned.thread.job_id == record.id


def test_assess_coverage_through_the_tool_finds_gaps_and_refuses_bad_ranges(
    tmp_path: Path,
) -> None:
    """R-RLM3 through the table: overlapping reads never hide a gap; a range that ends before
    it starts and a sparse array are one clear error each."""
    from tests.support.threads import call, root_caller

    who = root_caller(tmp_path)
    assigned = [{"source": "a.py", "start_line": 1, "end_line": 100}]
    reports = [
        {"coverage": [{"source": "a.py", "start_line": 1, "end_line": 40, "status": "read"}]},
        {"coverage": [{"source": "a.py", "start_line": 30, "end_line": 60, "status": "read"}]},
        {"coverage": [{"source": "a.py", "start_line": 61, "end_line": 70, "status": "failed"}]},
    ]
    reply = call("assess_coverage", {"assigned": assigned, "reports": reports}, who)
    assert not reply.is_error, reply.text
    assert reply.data["missing"] == [["a.py", 61, 100]] and reply.data["read_lines"] == 60
    assert "failed" in reply.text
    backwards = [{"source": "a.py", "start_line": 9, "end_line": 3}]
    bad = call("assess_coverage", {"assigned": backwards, "reports": []}, who)
    assert bad.is_error and "\n" not in bad.text
    sparse = call("assess_coverage", {"assigned": [None], "reports": []}, who)
    assert sparse.is_error
