"""timers/: zone math across DST, durable set/fire/cancel, restart, caps and damage."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from specialists.base.errors import UserError
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.events.timers import COMPACT_BYTES, KEEP_DONE, TimerStore
from specialists.events.wake import wait_for_wake
from specialists.events.zone import wall_time_to_epoch
from specialists.store.memory import MemoryRecord

OWNER = "job-0123abcd"
SRC = EventSource("sleep", "call_1", {"seconds": 5})
T0 = 1_800_000_000_000  # ms


class FakeTime:
    """Wall time that only moves when slept on."""

    def __init__(self, start_s: float) -> None:
        self.t = start_s
        self.slept: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / ".specialists"


class Owner:
    """One owner's timers and inbox on a MemoryRecord: the timers' logic is the store's, so
    it needs no disk (the file backend behaves the same: tests/unit/test_record.py); the
    tests of damage and crashes below use the disk."""

    def __init__(self) -> None:
        self.record = MemoryRecord("owners/" + OWNER)

    def inbox(self) -> Inbox:
        return Inbox(Path("/nonexistent"), OWNER, record=self.record)

    def timers(self, **kw: int) -> TimerStore:
        return TimerStore(Path("/nonexistent"), OWNER, inbox=self.inbox(), **kw)


@pytest.fixture
def owner() -> Owner:
    return Owner()


# --- zone math (R-T6) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("date", "time", "zone", "expected_utc"),
    [
        ("2026-07-01", "12:00", "UTC", "2026-07-01T12:00:00"),
        ("2026-07-01", "12:00:30", "Europe/Berlin", "2026-07-01T10:00:30"),
        # spring forward: 02:30 does not exist; it moves forward to 03:30 local
        ("2026-03-08", "02:30", "America/New_York", "2026-03-08T07:30:00"),
        ("2026-03-29", "02:30", "Europe/Berlin", "2026-03-29T01:30:00"),
        # fall back: 01:30 happens twice; the earlier instant wins
        ("2026-11-01", "01:30", "America/New_York", "2026-11-01T05:30:00"),
        ("2026-10-25", "02:30", "Europe/Berlin", "2026-10-25T00:30:00"),
        ("2028-02-29", "00:00", "Asia/Tokyo", "2028-02-28T15:00:00"),
    ],
)
def test_wall_times_resolve_to_the_right_instant(
    date: str, time: str, zone: str, expected_utc: str
) -> None:
    assert wall_time_to_epoch(date, time, zone) == utc(expected_utc)


def test_year_zero_is_a_valid_date_long_past() -> None:
    assert wall_time_to_epoch("0000-01-01", "00:00", "UTC") == float("-inf")


@pytest.mark.parametrize(
    ("date", "time", "zone", "message"),
    [
        ("2026-02-29", "00:00", "UTC", "no such day"),
        ("2026-13-01", "00:00", "UTC", "no such day"),
        ("26-01-01", "00:00", "UTC", "YYYY-MM-DD"),
        ("2026-01-01", "24:00", "UTC", "out of range"),
        ("2026-01-01", "7pm", "UTC", "HH:MM"),
        ("2026-01-01", "10:00", "Mars/Olympus", "unknown time zone"),
        ("2026-01-01", "10:00", "../../etc/passwd", "time zone"),
        ("2026-01-01", "10:00", "/etc/localtime", "invalid time zone"),
        ("2026-01-01", "10:00", "", "invalid time zone"),
    ],
)
def test_bad_dates_times_and_zones_are_one_clear_error(
    date: str, time: str, zone: str, message: str
) -> None:
    with pytest.raises(UserError) as info:
        wall_time_to_epoch(date, time, zone)
    assert message in info.value.one_line()


# --- set, fire, cancel ------------------------------------------------------------------------


def test_a_timer_fires_once_into_the_inbox_even_when_asked_twice(owner: Owner) -> None:
    store = owner.timers()
    timer = store.set(T0 + 5000, now_ms=T0, note="check the build", source=SRC)
    assert store.fire_due(T0 + 4999) == []
    fired = store.fire_due(T0 + 5000)
    assert [e.id for e in fired] == [f"{timer.id}:timer:1"]
    assert store.fire_due(T0 + 9000) == []
    batch = owner.inbox().take()
    assert [e.body for e in batch.events] == [f"Timer {timer.id} fired: check the build"]
    assert batch.events[0].source == SRC


def test_a_crash_between_event_and_fire_record_does_not_wake_twice(root: Path) -> None:
    store = TimerStore(root, OWNER)
    timer = store.set(T0, now_ms=T0, source=SRC)
    store.fire_due(T0)
    # Undo the fire record as if the process died after appending the event.
    lines = store.path.read_bytes().splitlines(keepends=True)
    store.path.write_bytes(b"".join(lines[:-1]))
    assert TimerStore(root, OWNER).pending()[0].id == timer.id
    TimerStore(root, OWNER).fire_due(T0 + 10)
    batch = Inbox(root, OWNER).take()
    assert len(batch.events) == 1 and batch.duplicates == 1


def test_timers_survive_a_restart_and_overdue_ones_say_how_late(owner: Owner) -> None:
    owner.timers().set(T0 + 1000, now_ms=T0, note="a", source=SRC)
    owner.timers().set(T0 + 60_000, now_ms=T0, note="b", source=SRC)
    later = owner.timers()  # a new process
    assert [t.note for t in later.pending()] == ["a", "b"]
    fired = later.fire_due(T0 + 43_500)
    assert [e.body.split(": ")[1] for e in fired] == ["a (late by 42 s)"]
    assert later.next_due_ms() == T0 + 60_000


def test_cancel_is_idempotent_and_reports_the_state(owner: Owner) -> None:
    store = owner.timers()
    a = store.set(T0 + 1000, now_ms=T0, source=SRC)
    b = store.set(T0 + 2000, now_ms=T0, source=SRC)
    first = store.cancel(a.id, now_ms=T0)
    again = store.cancel(a.id, now_ms=T0)
    assert (first.state, first.changed, again.state, again.changed) == (
        "cancelled",
        True,
        "cancelled",
        False,
    )
    store.fire_due(T0 + 5000)
    assert store.cancel(b.id, now_ms=T0 + 6000).state == "fired"
    with pytest.raises(UserError, match="no timer"):
        store.cancel("tm-nope", now_ms=T0)
    assert owner.inbox().take().ids == (f"{b.id}:timer:1",)


def test_cancel_all_cancels_only_pending(owner: Owner) -> None:
    store = owner.timers()
    for n in range(3):
        store.set(T0 + n, now_ms=T0, source=SRC)
    store.fire_due(T0)
    outcomes = store.cancel_all(now_ms=T0)
    assert len(outcomes) == 2 and all(o.changed for o in outcomes)
    assert store.pending() == []


def test_the_cap_refuses_and_lists_what_is_pending(owner: Owner) -> None:
    store = owner.timers(max_pending=2)
    store.set(T0 + 1, now_ms=T0, note="first", source=SRC)
    store.set(T0 + 2, now_ms=T0, note="second", source=SRC)
    with pytest.raises(UserError, match=r"too many pending timers \(2 of 2\).*first.*second"):
        store.set(T0 + 3, now_ms=T0, source=SRC)
    store.fire_due(T0 + 1)
    store.set(T0 + 3, now_ms=T0, source=SRC)  # room again


def test_ids_are_never_reused(owner: Owner, monkeypatch: pytest.MonkeyPatch) -> None:
    store = owner.timers()
    first = store.set(T0, now_ms=T0, source=SRC)
    store.fire_due(T0)
    same = bytes.fromhex(first.id[3:])
    draws = iter([same, same, b"\x01" * 6])
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))
    second = store.set(T0, now_ms=T0, source=SRC)
    assert second.id == "tm-" + "01" * 6


def test_a_failed_write_is_an_error_never_a_silent_success(root: Path) -> None:
    store = TimerStore(root, OWNER)
    timer = store.set(T0 + 1000, now_ms=T0, source=SRC)
    os.chmod(store.path, 0o400)
    try:
        if os.access(store.path, os.W_OK):  # root ignores modes: replace the file by a dir
            os.chmod(store.path, 0o600)
            content = store.path.read_bytes()
            store.path.unlink()
            store.path.mkdir()
            with pytest.raises(OSError):
                store.cancel(timer.id, now_ms=T0)
            store.path.rmdir()
            store.path.write_bytes(content)
        else:
            with pytest.raises(OSError):
                store.cancel(timer.id, now_ms=T0)
    finally:
        if store.path.is_file():
            os.chmod(store.path, 0o600)
    assert store.pending()[0].id == timer.id


def test_damaged_records_are_reported_and_the_rest_still_apply(root: Path) -> None:
    store = TimerStore(root, OWNER)
    store.set(T0 + 1, now_ms=T0, note="kept", source=SRC)
    with open(store.path, "ab") as f:
        f.write(b"garbage\n")
        f.write(b'{"op":"set","id":"tm-x","due_ms":"soon","created_ms":1}\n')
        f.write(b'{"op":"fire","id":"tm-unknown","at_ms":1}\n')
        f.write(b'{"op":"explode","id":"tm-y"}\n')
        f.write(b"[" * 20_000 + b"\n")
        f.write(b'{"op":"set","id":"tm-cut"')  # a crash mid-write
    fold = store.fold()
    assert [t.note for t in fold.pending()] == ["kept"]
    assert len(fold.problems) == 5  # the cut line may still be being written: not read yet
    store.set(T0 + 2, now_ms=T0, note="after", source=SRC)  # the cut line is closed first
    assert [t.note for t in store.pending()] == ["kept", "after"]
    assert len(store.fold().problems) == 6  # and reported, once closed


def test_a_long_history_is_compacted_and_a_new_timer_still_fires(root: Path) -> None:
    # An agent that slept in a loop for weeks: a log past the owner's read bound. A timer set
    # after it was never read back, so it never fired, and a fire record past it was lost.
    store = TimerStore(root, OWNER)
    waiting = store.set(T0 + 10**9, now_ms=T0, note="still waiting", source=SRC)
    note = "x" * 400
    with open(store.path, "a") as f:
        for n in range(16_000):
            tid = f"tm-{n:012x}"
            source = {"tool": "sleep", "call_id": "c", "args": {"seconds": 60, "note": note}}
            f.write(json.dumps({"op": "set", "id": tid, "due_ms": T0, "created_ms": T0,
                                "note": note, "source": source}) + "\n")  # fmt: skip
            f.write(json.dumps({"op": "fire", "id": tid, "at_ms": T0 + n}) + "\n")
    assert store.path.stat().st_size > 8 << 20
    new = store.set(T0 + 5000, now_ms=T0, note="wake me", source=SRC)
    fold = store.fold()
    assert [t.note for t in fold.pending()] == ["wake me", "still waiting"]
    assert fold.problems == ()
    assert store.path.stat().st_size <= COMPACT_BYTES
    done = [t for t in fold.timers.values() if t.state != "pending"]
    assert len(done) == KEEP_DONE  # the latest done ones: a cancel of one says how it ended
    assert store.cancel(done[-1].id, now_ms=T0) == (done[-1].id, "fired", False)
    assert [e.body for e in store.fire_due(T0 + 5000)] == [f"Timer {new.id} fired: wake me"]
    assert store.fire_due(T0 + 6000) == []
    assert [t.id for t in store.pending()] == [waiting.id]


# --- waiting --------------------------------------------------------------------------------


def test_wait_for_wake_sleeps_until_the_timer_and_not_much_longer(root: Path) -> None:
    clock = FakeTime(T0 / 1000)
    TimerStore(root, OWNER).set(T0 + 5_000, now_ms=T0, source=SRC)
    woke = wait_for_wake(root, OWNER, 60, now=clock.now, sleep=clock.sleep)
    assert woke is True
    assert 5.0 <= clock.now() - T0 / 1000 <= 5.03
    assert Inbox(root, OWNER).take().events[0].kind == "timer"


def test_wait_for_wake_times_out_and_can_be_ended_early(root: Path) -> None:
    clock = FakeTime(T0 / 1000)
    assert wait_for_wake(root, OWNER, 2, now=clock.now, sleep=clock.sleep) is False
    assert clock.now() - T0 / 1000 == pytest.approx(2.0)
    assert (
        wait_for_wake(root, OWNER, 60, now=clock.now, sleep=clock.sleep, until=lambda: True)
        is False
    )
