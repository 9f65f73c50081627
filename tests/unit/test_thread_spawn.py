"""The spawn core without processes: a recording starter and the in-memory sandbox fake.

Each step of a launch can fail; these tests prove that whichever one does, nothing is left
behind (R-H7a): no thread record, no sandbox, no job that looks as if it may yet run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from specialists.base.errors import StoreError, UserError
from specialists.features.sandbox.testing import FakeSandbox
from specialists.features.threads.records import ThreadStore
from specialists.features.threads.spawn import ChildPlan, Spawned, SpawnRequest, spawn_thread
from specialists.store.records import JobRecord
from tests.support.jobs import make_record

OWNER = "claude-tests"


@dataclass
class Starter:
    fail_at: str = ""
    plans: list[ChildPlan] = field(default_factory=list)
    created: list[JobRecord] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    session: Path | None = None

    def plan(self, plan: ChildPlan) -> JobRecord:
        self.plans.append(plan)
        if self.fail_at == "plan":
            raise UserError("unknown specialist 'x'")
        return make_record(plan.cwd, prompt=plan.prompt, task=plan.prompt, runner="command")

    def create(self, record: JobRecord) -> tuple[JobRecord, object]:
        if self.fail_at == "create":
            raise StoreError("could not create the job: No space left on device")
        record = record.replace(id=f"{len(self.created):08x}")
        self.created.append(record)
        return record, record.id

    def start(self, record: JobRecord, handle: object) -> None:
        if self.fail_at == "start":
            raise StoreError("could not start the job's supervisor")
        self.started.append(record.id)

    def release(self, handle: object) -> None:
        self.released.append(str(handle))

    def session_of(self, job: JobRecord) -> str | None:
        return str(self.session) if self.session else None


def _spawn(
    tmp_path: Path, request: SpawnRequest, starter: Starter, sandboxes: FakeSandbox
) -> Spawned:
    state_root = tmp_path / ".specialists"
    return spawn_thread(
        state_root, OWNER, None, tmp_path, request, starter=starter, sandboxes=sandboxes, now_ms=1
    )


@pytest.mark.parametrize("step", ["plan", "create", "start"])
def test_a_launch_failing_at_any_step_leaves_nothing(tmp_path: Path, step: str) -> None:
    starter = Starter(fail_at=step)
    sandboxes = FakeSandbox(tmp_path)
    request = SpawnRequest("part", ("root",), fresh_context=True, sandbox=True)
    with pytest.raises((UserError, StoreError)):
        _spawn(tmp_path, request, starter, sandboxes)
    assert ThreadStore(tmp_path / ".specialists").all() == ([], [])
    assert [
        p for p in (tmp_path / ".specialists" / "threads").iterdir() if p.name.startswith("t-")
    ] == []
    assert [s for s in sandboxes.records.values() if s.removed_at_ms is None] == []
    assert starter.started == []
    if step in ("create", "start") and starter.created:
        assert starter.released == [starter.created[0].id]


def test_the_child_record_holds_parent_stack_owner_and_sandbox(tmp_path: Path) -> None:
    starter = Starter()
    sandboxes = FakeSandbox(tmp_path)
    request = SpawnRequest("part", ("root",), fresh_context=True, sandbox=True, call_id="c9")
    spawned = _spawn(tmp_path, request, starter, sandboxes)
    (record,) = starter.created
    tid = spawned.thread.id
    assert record.thread == {"id": tid, "parent": OWNER, "stack": ["root", tid]}
    assert record.owner == [OWNER] and record.sandbox == tid and record.parent_id is None
    assert record.cwd == str(spawned.sandbox.path)  # type: ignore[union-attr]
    assert starter.plans[0].prompt.startswith("[specialists thread]\nYou are thread " + tid)
    assert starter.plans[0].prompt.endswith("\n\npart")
    assert ThreadStore(tmp_path / ".specialists").get(tid) == spawned.thread
    assert spawned.thread.call_id == "c9" and starter.started == [record.id]


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
