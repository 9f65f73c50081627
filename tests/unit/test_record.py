"""The Record primitive: the file and memory backends behave the same; the file backend
also holds against what can be planted on a disk."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specialists.base.errors import StoreError
from specialists.store.file_record import FileRecord
from specialists.store.memory import MemoryRecord
from specialists.store.record import DocTooLong, Record


@pytest.fixture(params=["file", "memory"])
def record(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "file":
        return FileRecord(tmp_path / "rec")
    return MemoryRecord("rec")


def tear(record: Any, log: str, partial: bytes) -> None:
    """What a writer killed mid-append leaves: a last line without its newline."""
    if isinstance(record, MemoryRecord):
        record.tear(log, partial)
    else:
        with open(record.path / f"{log}.jsonl", "ab") as f:
            f.write(partial)


def test_a_document_is_replaced_whole_and_versioned(record: Record) -> None:
    assert record.read("state") is None
    record.replace("state", {"schema": 1, "n": 1})
    record.replace("state", {"schema": 1, "n": 2})
    assert record.read("state", schema=1) == {"schema": 1, "n": 2}
    record.replace("state", {"schema": 9})
    with pytest.raises(StoreError, match="newer than this specialists understands"):
        record.read("state", schema=1)
    assert record.read("state") == {"schema": 9}  # without a schema, read as it is


def test_a_claim_is_won_once_and_keeps_the_winner(record: Record) -> None:
    assert record.claim("outcome", {"by": "first"})
    assert not record.claim("outcome", {"by": "second"})
    assert record.read("outcome") == {"by": "first"}


@pytest.mark.parametrize("backend", ["file", "memory"])
def test_a_document_its_reader_would_refuse_is_not_written(backend: str, tmp_path: Path) -> None:
    """Written, it would read back as damaged (and a damaged document holds nothing)."""
    small = {"schema": 1, "n": 1}
    big = {"schema": 1, "text": "x" * 400}
    record: Any
    if backend == "file":
        record = FileRecord(tmp_path / "rec", max_doc=200)
    else:
        record = MemoryRecord("rec", max_doc=200)
    record.replace("state", small)
    with pytest.raises(DocTooLong, match="over the 200 a read takes"):
        record.replace("state", big)
    with pytest.raises(DocTooLong):
        record.claim("once", big)
    assert record.read("state") == small
    assert record.claim("once", small)


def test_a_claim_on_a_full_disk_fails_and_leaves_no_temp_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = FileRecord(tmp_path / "rec")
    record.ensure()

    def no_space(fd: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("specialists.store.file_record.write_all", no_space)
    with pytest.raises(OSError):
        record.claim("outcome", {"by": "first"})
    monkeypatch.undo()
    assert sorted(os.listdir(record.path)) == []  # neither the claim nor its temp
    assert record.claim("outcome", {"by": "second"})  # the slot is still free


def test_racing_claims_have_exactly_one_winner(record: Record) -> None:
    wins: list[int] = []
    start = threading.Barrier(8)

    def claim(n: int) -> None:
        start.wait()
        if record.claim("slot", {"by": n}):
            wins.append(n)

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
    assert record.read("slot") == {"by": wins[0]}


def test_a_log_is_read_in_order_from_an_offset_with_a_limit(record: Record) -> None:
    for n in range(5):
        record.append("log", {"n": n})
    found = record.lines("log")
    assert [e["n"] for e in found.entries] == [0, 1, 2, 3, 4] and not found.problems
    first = record.lines("log", limit=2)
    assert [e["n"] for e in first.entries] == [0, 1]
    rest = record.lines("log", start=first.end)
    assert [e["n"] for e in rest.entries] == [2, 3, 4]
    assert record.lines("log", start=found.end).entries == ()


def test_a_torn_line_is_not_taken_then_closed_and_reported_once(record: Record) -> None:
    record.append("log", {"n": 1})
    tear(record, "log", b'{"n": 2, "cut')
    before = record.lines("log")
    assert [e["n"] for e in before.entries] == [1] and not before.problems
    record.append("log", {"n": 3})  # closes the torn line: it stays on its own
    after = record.lines("log")
    assert [e["n"] for e in after.entries] == [1, 3]
    assert len(after.problems) == 1 and "line at byte" in after.problems[0]


def test_bad_and_overlong_lines_are_skipped_with_a_problem(tmp_path: Path) -> None:
    record = FileRecord(tmp_path / "rec", max_line=100)
    record.append("log", {"n": 1})
    with open(record.path / "log.jsonl", "ab") as f:
        f.write(b"[1, 2]\n" + b"x" * 500 + b"\nnot json\n")
    record.append("log", {"n": 2})
    found = record.lines("log")
    assert [e["n"] for e in found.entries] == [1, 2]
    assert len(found.problems) == 3, found.problems
    with pytest.raises(StoreError, match="too long"):
        record.append("log", {"big": "y" * 200})


def test_trim_keeps_the_newest(record: Record) -> None:
    for n in range(10):
        record.append("history", {"n": n})
    record.trim("history", 3)
    assert [e["n"] for e in record.lines("history").entries] == [7, 8, 9]
    record.trim("history", 0)
    assert record.lines("history").entries == ()


def test_rewrite_replaces_the_whole_log(record: Record) -> None:
    for n in range(5):
        record.append("history", {"n": n})
    tear(record, "history", b'{"n": 5')
    record.rewrite("history", [{"n": 1}, {"n": 3}])
    assert [e["n"] for e in record.lines("history").entries] == [1, 3]
    record.rewrite("fresh", [{"n": 0}])
    assert record.lines("fresh").entries == ({"n": 0},)


def test_the_lock_is_reentrant_in_a_thread_and_exclusive_between_threads(record: Record) -> None:
    order: list[str] = []
    inside = threading.Event()

    def other() -> None:
        inside.wait()
        with record.locked():
            order.append("other")

    t = threading.Thread(target=other)
    t.start()
    with record.locked(), record.locked():
        inside.set()
        t.join(0.2)  # the other thread cannot get in while we hold it
        order.append("mine")
    t.join(5)
    assert order == ["mine", "other"]


def test_names_cannot_leave_the_record(record: Record) -> None:
    for bad in ("../x", "a/b", ".hidden", "", "lock"):
        with pytest.raises(StoreError):
            record.read(bad)


def test_planted_files_are_never_followed(tmp_path: Path) -> None:
    record = FileRecord(tmp_path / "rec")
    record.ensure()
    secret = tmp_path / "secret.json"
    secret.write_text('{"secret": 1}')
    (record.path / "state.json").symlink_to(secret)
    with pytest.raises(StoreError, match="symbolic link"):
        record.read("state")
    os.mkfifo(record.path / "log.jsonl")
    with pytest.raises(StoreError, match="FIFO"):
        record.lines("log")
    record.replace("state", {"ok": True})  # replaces the link itself
    assert secret.read_text() == '{"secret": 1}'
    assert record.read("state") == {"ok": True}


def test_a_record_directory_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "rec").symlink_to(elsewhere)
    record = FileRecord(tmp_path / "rec")
    with pytest.raises(StoreError, match="not a directory"):
        record.replace("state", {"n": 1})
    assert list(elsewhere.iterdir()) == []


def test_files_are_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        record = FileRecord(tmp_path / "rec")
        record.replace("doc", {"n": 1})
        record.append("log", {"n": 1})
        record.claim("once", {"n": 1})
    finally:
        os.umask(old)
    assert oct(record.path.stat().st_mode & 0o777) == "0o700"
    for name in ("doc.json", "log.jsonl", "once.json"):
        assert oct((record.path / name).stat().st_mode & 0o777) == "0o600", name


def test_create_is_an_exclusive_claim_of_the_record(tmp_path: Path) -> None:
    record = FileRecord(tmp_path / "kind" / "id-1")
    assert record.create()
    assert not record.create()
    assert record.exists()


def test_a_record_is_made_whole_or_not_at_all(record: Any) -> None:
    shelf = record.sub("kind")
    item = shelf.sub("one")

    def fill(new: Record) -> None:
        new.replace("definition", {"n": 1})
        new.append("events", {"event": "created"})
        new.sub("runs").replace("1", {"slot": 1})

    def broken(new: Record) -> None:
        new.replace("definition", {"n": 2})
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        shelf.sub("two").create(broken)
    assert shelf.children() == [] and not shelf.sub("two").exists()
    assert item.create(fill)
    assert not item.create(fill)  # the name is taken: nothing is written over it
    assert shelf.children() == ["one"]
    assert item.read("definition") == {"n": 1}
    assert [e["event"] for e in item.lines("events").entries] == ["created"]
    assert item.sub("runs").read("1") == {"slot": 1} and item.children() == ["runs"]
    assert item.docs() == ["definition"]


def test_racing_creates_make_one_record(record: Any) -> None:
    wins: list[int] = []
    start = threading.Barrier(6)

    def make(n: int) -> None:
        start.wait()
        if record.sub("same").create(lambda new: new.replace("doc", {"by": n})):
            wins.append(n)

    threads = [threading.Thread(target=make, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1 and record.sub("same").read("doc") == {"by": wins[0]}
    assert record.children() == ["same"]


def test_destroy_removes_the_whole_record_and_a_missing_one_cannot_be_locked(
    record: Any,
) -> None:
    item = record.sub("gone")
    assert item.create(lambda new: new.replace("doc", {"n": 1}))
    with item.locked(create=False):
        pass
    assert item.destroy()
    assert not item.exists() and not item.destroy()
    with pytest.raises(FileNotFoundError), item.locked(create=False):
        pass
    assert not item.exists()  # the lock did not make it again
    assert record.children() == []


def test_a_log_has_a_size(record: Record) -> None:
    assert record.size("log") == 0
    record.append("log", {"n": 1})
    assert record.size("log") == len(b'{"n":1}\n')


def test_a_destroy_waits_for_the_lock_and_a_waiter_then_finds_nothing(tmp_path: Path) -> None:
    item = FileRecord(tmp_path / "kind" / "one")
    assert item.create(lambda new: new.replace("doc", {"n": 1}))
    outcome: list[str] = []
    holding = threading.Event()

    def waiter() -> None:
        holding.wait()
        try:
            with item.locked(create=False):
                outcome.append("locked")
        except FileNotFoundError:
            outcome.append("gone")

    t = threading.Thread(target=waiter)
    t.start()
    with item.locked(create=False):
        holding.set()
        t.join(0.1)
        aside = item.path.with_name(".deleted-one-x")
        os.rename(item.path, aside)  # what destroy does under the lock
    t.join(5)
    assert outcome == ["gone"] and not item.path.exists()


def test_a_stale_half_made_record_is_swept_and_hidden(tmp_path: Path) -> None:
    shelf = FileRecord(tmp_path / "kind")
    shelf.ensure()
    stale = shelf.path / ".new-old-1-abc"
    stale.mkdir()
    os.utime(stale, (0, 0))
    assert shelf.children() == []
    assert shelf.sub("fresh").create(lambda new: new.replace("doc", {}))
    assert sorted(os.listdir(shelf.path)) == ["fresh"]


def test_a_durable_record_still_reads_the_same(tmp_path: Path) -> None:
    record = FileRecord(tmp_path / "rec", durable=True)
    record.replace("doc", {"n": 1})
    record.append("log", {"n": 2})
    assert record.read("doc") == {"n": 1}
    assert [e["n"] for e in record.lines("log").entries] == [2]


def test_a_log_past_its_bound_is_read_to_the_bound_with_a_problem(tmp_path: Path) -> None:
    record = FileRecord(tmp_path / "rec", max_log=100)
    for n in range(20):
        record.append("log", {"n": n})
    found = record.lines("log")
    assert 0 < len(found.entries) < 20 and "over 100 bytes" in found.problems[0]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=20), max_size=3),
            st.binary(min_size=1, max_size=30).filter(lambda b: b"\n" not in b),
        ),
        max_size=20,
    )
)
def test_whatever_tears_happen_every_whole_append_is_read_back(steps: list[Any]) -> None:
    """Appends interleaved with tears (torn writes of random bytes): the reader gets every
    appended entry, in order, and never an entry that was not appended."""
    record = MemoryRecord("prop")
    appended: list[dict[str, Any]] = []
    for step in steps:
        if isinstance(step, dict):
            record.append("log", step)
            appended.append(step)
        else:
            tear(record, "log", step)
    entries = list(record.lines("log").entries)
    # A tear whose bytes happen to be a JSON object reads as one (the writer's call raised, so
    # its caller treats it as not written and may write it again: at-least-once).
    it = iter(entries)
    assert all(any(e == a for e in it) for a in appended)
