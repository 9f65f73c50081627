"""store/kinds.py declares every on-disk format: the stores, run over a temporary root, write
nothing it does not declare, and a store written by 0.1.0 holds nothing undeclared either."""

from __future__ import annotations

import tarfile
from pathlib import Path

from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.events.timers import TimerStore
from specialists.features.asks import files as asks
from specialists.features.asks.model import Ask, AskOutcome
from specialists.features.gates import memo
from specialists.features.gates.evidence import write_evidence
from specialists.features.missions import ops as missions
from specialists.features.missions.state import state_set
from specialists.features.missions.store import MissionStore
from specialists.features.procs.exit import ExitSummary, write_summary
from specialists.features.sandbox.backend import Sandbox
from specialists.features.sandbox.handoff_manifest import HandoffManifest
from specialists.features.sandbox.meta import MetaStore
from specialists.features.schedules import ops as schedules
from specialists.features.schedules.model import SpecialistTarget
from specialists.features.schedules.store import ScheduleStore
from specialists.features.schedules.triggers import EveryTrigger
from specialists.features.threads.records import Closed, Closing, ThreadRecord, ThreadStore
from specialists.features.workflows.journal import Journal
from specialists.features.workflows.receipt import write_receipt
from specialists.native.breaker import CircuitBreaker
from specialists.store import index
from specialists.store.file_record import FileRecord
from specialists.store.jobs import JobStore
from specialists.store.kinds import KINDS, undeclared, undeclared_names
from specialists.store.memory import MemoryRecord
from specialists.store.writer import JobWriter
from tests.support.jobs import new_job

FIXTURE = Path(__file__).parents[1] / "fixtures" / "store-0.1.0.tar.gz"
T0 = 1_800_000_000_000
SRC = EventSource("sleep", "c1")


def test_what_the_stores_write_is_all_declared(tmp_path: Path) -> None:
    root = tmp_path / "project" / ".specialists"
    user = tmp_path / "user"
    project = root.parent
    project.mkdir()

    inbox = Inbox(root, "claude-s1")
    inbox.append("notice", SRC, "x" * 10_000, source_id="j", seq=1)  # spilled
    inbox.ack(inbox.pending())
    TimerStore(root, "claude-s1").set(T0, now_ms=T0, source=SRC)
    TimerStore(root, "claude-s1").fire_due(T0)

    sched = ScheduleStore(root)
    hour = 3_600_000
    schedules.create(
        sched,
        trigger=EveryTrigger("every", hour, T0, "1h"),
        target=SpecialistTarget("specialist", "echo", "hi"),
        now_ms=T0,
        schedule_id="s1",
    )
    with sched.locked("s1"):
        sched.record("s1", {"ts": T0, "outcome": "fired"})
        sched.write_receipt("s1", T0, {"slot_ms": T0, "outcome": "fired"})

    store = JobStore(root, news=None)
    record, lock = new_job(store, project)
    job_dir = store.job_dir(record.id)
    writer = JobWriter(store, record.id)
    writer.append_event("starting")
    writer.write_result("done")
    made = asks.create(
        job_dir, lambda n: Ask(f"{record.id}:{n}", record.id, "question", "q", T0, 5.0, (), "c")
    )
    asks.claim(job_dir, 1, AskOutcome("timeout", T0))
    assert made.job_id == record.id
    Journal(job_dir).append({"e": "start"})
    write_receipt(job_dir, {"version": 1, "workflow": record.id, "children": {}})
    write_summary(job_dir, ExitSummary())
    write_evidence(job_dir, "gate", {"kind": "gate", "command": "true"})
    index.save(store, {})
    lock.release()

    missions_store = MissionStore(root, index_dir=user / "missions")
    missions.create(missions_store, title="t", mission_id="m1")
    state_set(root, "m1", "k", 1, store=missions_store)
    missions_store._point(record.id, "m1")

    threads = ThreadStore(root)
    tid = threads.reserve()
    threads.write(ThreadRecord(tid, "claude-s1", ("root", tid), record.id, "x", True, "pi", T0))
    threads.append_report(tid, "report", T0)
    threads.begin_close(tid, Closing("child", None, T0))
    threads.finish_close(tid, Closed(by="child", at_ms=T0, failed=False, final="done"))
    with threads.spawning("claude-s1"):
        threads.record_failed_launch("claude-s1", T0)

    meta = MetaStore(root / "sandboxes")
    sandbox = Sandbox(
        "t1", root / "sandboxes" / "t1", "sandbox-t1", "HEAD", "a" * 40, project, None, T0
    )
    with meta.locked():
        meta.write(sandbox)

    from specialists.features.sandbox import handoff, handoff_manifest

    handoff.update(
        project,
        "h1",
        lambda _: HandoffManifest(
            id="h1", origin=str(project), base_sha="a" * 40, created_at_ms=T0
        ),
    )
    assert handoff_manifest.read_manifest(handoff_manifest.manifest_path(project, "h1")).id == "h1"

    key = "b" * 64
    memo.store(project, memo.MemoEntry(key, "true", 0, 1, "", T0, None))
    CircuitBreaker("mock/model", directory=user / "breakers").record_failure("boom")

    assert undeclared(root) == []
    assert undeclared(user, user=True) == []
    written = {p.relative_to(root).parts[0] for p in root.rglob("*")}
    assert {
        "owners",
        "schedules",
        "jobs",
        "missions",
        "threads",
        "sandboxes",
        "handoffs",
    } <= written


def test_a_store_written_by_0_1_0_holds_nothing_undeclared() -> None:
    """Every file in the release's fixture is a declared file (git's worktrees aside)."""
    with tarfile.open(FIXTURE) as tar:
        members = [m for m in tar.getmembers() if not m.isdir()]
    state, user = "project/.specialists/", "home/.state/specialists/"
    names = [m.name[len(state) :] for m in members if m.name.startswith(state)]
    assert len(names) > 100
    assert undeclared_names(names) == []
    home = [m.name[len(user) :] for m in members if m.name.startswith(user)]
    assert home and undeclared_names(home, user=True) == []


def test_each_kind_names_its_files_once_and_opens_records_with_its_bounds(tmp_path: Path) -> None:
    names = [k.name for k in KINDS]
    assert len(names) == len(set(names))
    for kind in KINDS:
        assert kind.what and kind.files and (kind.where or kind.name == "person-files")
        rec = kind.record(tmp_path / kind.name)
        assert isinstance(rec, FileRecord)
        assert (rec.max_doc, rec.max_line, rec.durable) == (
            kind.max_doc,
            kind.max_line,
            kind.durable,
        )
        files = [f.name for f in kind.files]
        assert len(files) == len(set(files)), kind.name
        for f in kind.files:
            assert f.form != "log" or f.name.endswith(".jsonl"), f
            assert f.form not in ("doc", "claim") or f.name.endswith(".json"), f


def test_a_store_on_memory_writes_no_file(tmp_path: Path) -> None:
    """The stores that take a root Record run on MemoryRecord: nothing touches the disk."""
    sched = ScheduleStore(tmp_path / "nowhere", records=MemoryRecord("schedules"))
    schedules.create(
        sched,
        trigger=EveryTrigger("every", 3_600_000, T0, "1h"),
        target=SpecialistTarget("specialist", "echo", "hi"),
        now_ms=T0,
        schedule_id="s1",
    )
    assert sched.ids() == ["s1"] and sched.load("s1")[0].id == "s1"
    assert not (tmp_path / "nowhere").exists()
