"""The tests of tests/unit/test_control.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import multiprocessing
import signal
import subprocess
import sys
from pathlib import Path

from specialists.base.errors import UserError
from specialists.store import keys
from specialists.store.control import post_request
from specialists.store.jobs import JobStore
from specialists.supervise.start import session_key, start
from tests.support.jobs import new_job, take_requests
from tests.support.starting import FakeSupervisors
from tests.unit.test_control import (
    _job,
    continuing,
    store,  # noqa: F401 - fixtures
)


def _continue(root: str, source: str, go, out, stop) -> None:  # type: ignore[no-untyped-def]
    store = JobStore(Path(root), news=None)
    go.wait()
    try:
        out.put(start(store, continuing(store, source), check=False).id)
    except UserError:
        out.put(None)
    stop.wait(60)  # the winner's "supervisor" (this process, its lock) lives until then


def test_concurrent_continuations_from_processes_exactly_one_starts(
    store: JobStore,
    supervisors: FakeSupervisors,
) -> None:
    source = _job(store, "aaaaaaaa", status="done", session_file="/x")
    ctx = multiprocessing.get_context("fork")  # the children keep the faked supervisor launch
    go, out, stop = ctx.Event(), ctx.Queue(), ctx.Event()
    args = (str(store.root), source, go, out, stop)
    procs = [ctx.Process(target=_continue, args=args) for _ in range(6)]
    for p in procs:
        p.start()
    go.set()
    won = [r for r in (out.get(timeout=60) for _ in procs) if r is not None]
    stop.set()
    for p in procs:
        p.join(60)
    assert len(won) == 1 and keys.holder(store.root, session_key(source)) == won[0]
    assert sorted(store.list_ids()) == sorted([source, won[0]])  # the refused left nothing


# --- control requests as events (store/control.py) -------------------------------------------

_ACT_THEN_DIE = """
import os, signal, sys
from pathlib import Path
from specialists.store.control import read_requests
from specialists.store.jobs import JobStore
from specialists.store.writer import JobWriter

store = JobStore(Path(sys.argv[1]), news=None)
writer = JobWriter(store, sys.argv[2])

def act(request):
    writer.append_event("steer_ack", request=request.id, delivered=True)  # acted on
    os.kill(os.getpid(), signal.SIGKILL)  # before the cursor moves

read_requests(store.job_dir(sys.argv[2]), act)
"""


def test_a_supervisor_killed_9_after_acting_leaves_its_request_acted_on_once(
    tmp_path: Path,
) -> None:
    store = JobStore(tmp_path / ".specialists", news=None)
    record, lock = new_job(store, tmp_path)
    try:
        first = post_request(store.job_dir(record.id), "steer", "one")
        second = post_request(store.job_dir(record.id), "steer", "two")
        child = subprocess.run([sys.executable, "-c", _ACT_THEN_DIE, str(store.root), record.id])
        assert child.returncode == -signal.SIGKILL
        requests, problems = take_requests(store.job_dir(record.id))  # its successor
        assert [r.id for r in requests] == [second.id] and problems == []
        acks = [e for e in store.read_events(record.id) if e["event"] == "steer_ack"]
        assert [e["request"] for e in acks] == [first.id]
    finally:
        lock.release()


def _send(job_dir: str, n: int, out) -> None:  # type: ignore[no-untyped-def]
    out.put((n, [post_request(Path(job_dir), "steer", f"{n}-{i}").id for i in range(25)]))


def test_senders_in_many_processes_lose_nothing(tmp_path: Path) -> None:
    store = JobStore(tmp_path / ".specialists", news=None)
    record, lock = new_job(store, tmp_path)
    job_dir = store.job_dir(record.id)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_send, args=(str(job_dir), n, out)) for n in range(4)]
    for p in procs:
        p.start()
    got: list[str] = []
    while any(p.is_alive() for p in procs):  # the supervisor reads while they write
        got += [r.id for r in take_requests(job_dir)[0]]
    sent = dict(out.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(60)
    got += [r.id for r in take_requests(job_dir)[0]]
    lock.release()
    assert sorted(got) == sorted(i for ids in sent.values() for i in ids)
    for ids in sent.values():
        assert [i for i in got if i in ids] == ids
