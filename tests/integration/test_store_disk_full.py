"""A full disk never leaves a job looking alive (issue 7 item 2), on a real 256 KiB tmpfs.

The store is mounted on a small tmpfs and filled to the last byte; the tests then prove that
a job's last words (result, final event, final status, its owner's notice) still land, once, from
the room reserved at creation or after waiting for space; that readers never append a
second end; and that a launch that fails half-way leaves nothing behind.
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from specialists.base.errors import StoreError
from specialists.store import writer as writer_module
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.store.recovery import CRASHED
from specialists.store.view import current_status, overview
from specialists.store.writer import JobWriter, mark_ended
from specialists.supervise import news
from tests.support.jobs import job_end, make_record, new_job, notice_ids
from tests.support.tmpfs import fill, small_tmpfs

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def store(tmp_path: Path):
    with small_tmpfs(tmp_path / "fs") as fs:
        yield JobStore(fs / ".specialists", news=NEWS)


def terminal_events(store: JobStore, job_id: str) -> list[dict]:
    return [e for e in store.read_events(job_id) if e["event"] in ("done", "error", "cancelled")]


def dead_supervisor(store: JobStore, job_id: str) -> None:
    """Mark the job running under a supervisor that no longer exists."""
    st = store.read_status(job_id)
    st.status = "running"
    st.supervisor_pid, st.supervisor_start_time = 2**22 + 4321, 1  # no such process
    JobWriter(store, job_id).write_status(st)


def test_the_last_words_land_from_the_reserve_on_a_full_disk(store, tmp_path):
    record, lock = new_job(store, tmp_path)
    writer = JobWriter(store, record.id)
    status = store.read_status(record.id)
    status.status = "running"
    filler = fill(store.root)
    assert writer.write_status(status) is False  # the old status.json stays whole
    writer.append_event("text")  # dropped and counted, seq unchanged
    assert writer.lost_events == 1
    assert writer.write_result("the answer") is None
    mark_ended(status, "done", None, status.started_at_ms + 1000)
    # As its supervisor ends it: the one teller around the final event and status, whose
    # completion notice lands in the room the spent reserve left.
    ending = job_end(store, record, "done", answer="the answer", status=status)
    written = []

    def record_end() -> None:  # as the supervisor's (ending.py): the final once, then the status
        if written:
            writer.write_status(status)  # no longer `telling`
        else:
            written.append(writer.write_final(status, "done", duration_ms=1000))

    assert news.tell(ending, record_end) == []
    writer.close()
    lock.release()
    on_disk = store.read_status(record.id)
    assert on_disk.status == "done" and on_disk.events == 1
    assert store.read_result(record.id) == "the answer"
    final = terminal_events(store, record.id)
    assert len(final) == 1 and final[0]["unrecorded_events"] == 1
    assert notice_ids(store, record.id) == [f"job-{record.id}:notice:1"]
    assert not (store.job_dir(record.id) / ".reserve").exists()
    filler.unlink()
    assert current_status(store, record.id).status == "done"  # and nothing more appended
    assert len(store.read_events(record.id)) == 1


def test_the_last_words_wait_for_space_once_the_reserve_is_spent(store, tmp_path):
    record, lock = new_job(store, tmp_path)
    waiting = threading.Event()

    def sleep(seconds: float) -> None:
        waiting.set()
        threading.Event().wait(min(seconds, 0.05))

    writer = JobWriter(store, record.id, patience_s=60, sleep=sleep)
    status = store.read_status(record.id)
    (store.job_dir(record.id) / ".reserve").unlink()  # someone else's data took its place
    filler = fill(store.root)
    mark_ended(status, "error", "agent exited with code 1", status.started_at_ms + 5)
    thread = threading.Thread(target=writer.write_final, args=(status, "error"))
    thread.start()
    assert waiting.wait(30), "the writer did not wait for space"
    assert store.read_status(record.id).status == "starting"  # nothing half-written
    filler.unlink()  # space returns
    thread.join(30)
    assert not thread.is_alive()
    lock.release()
    assert store.read_status(record.id).error == "agent exited with code 1"
    assert len(terminal_events(store, record.id)) == 1


def test_readers_on_a_full_disk_record_the_end_once_when_space_returns(store, tmp_path):
    record, lock = new_job(store, tmp_path)
    lock.release()
    dead_supervisor(store, record.id)
    (store.job_dir(record.id) / ".reserve").unlink()
    filler = fill(store.root)
    for _ in range(3):  # every reader sees the job dead; none can record it yet
        assert current_status(store, record.id).status == "error"
    assert terminal_events(store, record.id) == []
    filler.unlink()
    for _ in range(3):
        assert current_status(store, record.id).error == CRASHED
    assert len(terminal_events(store, record.id)) == 1


def test_a_reader_adopts_the_end_the_supervisor_wrote_and_appends_nothing(
    store, tmp_path, monkeypatch
):
    """The supervisor wrote its final event, then died or found no room for status.json."""
    record, lock = new_job(store, tmp_path)
    writer = JobWriter(store, record.id)
    cause = "no space left on device: the job's files could not be written (free some space)"
    writer.append_event("error", error=cause)
    writer.close()
    lock.release()
    dead_supervisor(store, record.id)
    before = len(store.read_events(record.id))
    for _ in range(3):
        st = current_status(store, record.id)
        assert st.status == "error" and st.error == cause
    assert len(store.read_events(record.id)) == before
    assert store.read_status(record.id).error == cause  # and recorded


def test_a_status_that_cannot_be_written_is_adopted_later_not_appended_again(
    store, tmp_path, monkeypatch
):
    record, lock = new_job(store, tmp_path)
    lock.release()
    dead_supervisor(store, record.id)

    def no_room(self, status):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(writer_module.JobWriter, "_put_status", no_room)
        assert current_status(store, record.id).error == CRASHED  # event written, status not
    assert store.read_status(record.id).status == "running"
    for _ in range(3):
        assert current_status(store, record.id).error == CRASHED
    assert len(terminal_events(store, record.id)) == 1


def test_a_launch_that_finds_no_space_leaves_nothing_behind(store, tmp_path):
    from specialists.supervise.launch import create_job

    store.ensure_dirs()
    filler = fill(store.root)
    with pytest.raises(StoreError, match="could not create the job: No space left"):
        create_job(store, make_record(tmp_path))
    assert store.list_ids() == []
    filler.unlink()
    # A reserve's worth short: job.json fits, the reserve does not.
    filler = fill(store.root)
    os.truncate(filler, filler.stat().st_size - 16384)
    with pytest.raises(StoreError, match="No space left"):
        create_job(store, make_record(tmp_path))
    assert store.list_ids() == []
    assert overview(store) == ([], [], [])


def test_a_launch_that_fails_half_way_is_removed(store, tmp_path, monkeypatch):
    from specialists.supervise import launch

    def fails(*args, **kwargs):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(launch, "make_reserve", fails)
    with pytest.raises(StoreError, match="could not create the job: Input/output error"):
        launch.create_job(store, make_record(tmp_path))
    assert store.list_ids() == []


def test_a_supervisor_that_cannot_be_started_ends_the_job(store, tmp_path, monkeypatch):
    from specialists.supervise import launch

    record, lock = launch.create_job(store, make_record(Path("/nonexistent-dir")))
    with pytest.raises(StoreError, match="could not start the job's supervisor"):
        launch.spawn_supervisor(store, record, lock)
    st = current_status(store, record.id)
    assert st.status == "error" and "could not start" in st.error
    assert len(terminal_events(store, record.id)) == 1
