"""Schedules: cron and zone math, catch-up, overlap, one job per slot, the store, bad input
(issue 12).

Everything here runs on a fake clock (`specialists.base.clock.FakeClock`) and the one start
with its supervisor launch faked (the `supervisors` fixture): the jobs are real, on the test's
store, and none runs. The cores take the instant as an argument, so a DST night or a week of
downtime is one call, not a wait.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specialists.base.clock import FakeClock
from specialists.base.errors import NotFound, UserError
from specialists.features.schedules import ops
from specialists.features.schedules.cron import next_fire_ms, parse_cron, wall_instant_ms
from specialists.features.schedules.decide import MAX_SCAN, ON_TIME_MS, plan_firing
from specialists.features.schedules.fire import run_due, run_now
from specialists.features.schedules.loop import serve, wake_in_s
from specialists.features.schedules.model import SpecialistTarget, WorkflowTarget
from specialists.features.schedules.store import MAX_RECEIPTS, ScheduleStore
from specialists.features.schedules.triggers import (
    AtTrigger,
    CronTrigger,
    EveryTrigger,
    parse_trigger,
)
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from tests.support.jobs import ECHO_SPEC
from tests.support.starting import FakeSupervisors

MIN = 60_000
HOUR = 3_600_000
DAY = 86_400_000
TARGET = SpecialistTarget("specialist", "echo", "hello")


def utc_ms(*args: int) -> int:
    return int(datetime(*args, tzinfo=UTC).timestamp() * 1000)


def local(ms: int, zone: str) -> str:
    return datetime.fromtimestamp(ms / 1000, ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M %z")


def fires(expr: str, zone: str, after_ms: int, n: int) -> list[str]:
    out, at = [], after_ms
    for _ in range(n):
        at = next_fire_ms(parse_cron(expr), zone, at)
        out.append(local(at, zone))
    return out


@pytest.fixture
def store(tmp_path: Path) -> ScheduleStore:
    return ScheduleStore(tmp_path / ".specialists")


@dataclass
class Launched:
    """The jobs the firings started (real ones, on the test's store; none runs)."""

    jobs: JobStore
    supervisors: FakeSupervisors

    def launched(self) -> list[tuple[str, int, str]]:
        """(schedule id, slot, job id) per started job, from its start key."""
        out = []
        for record in self.supervisors.started:
            _kind, sid, slot = str(record.start_key).split(":")
            out.append((sid, int(slot), record.id))
        return out

    def finish_all(self) -> None:
        self.supervisors.finish()


@pytest.fixture
def launcher(store: ScheduleStore, supervisors: FakeSupervisors) -> Launched:
    project = store.root.parent.parent
    (project / "specialists").mkdir(exist_ok=True)
    (project / "specialists" / "echo.specialist.yaml").write_text(ECHO_SPEC)
    return Launched(JobStore(store.root.parent, news=NEWS), supervisors)


def make(store: ScheduleStore, trigger, now_ms: int, sid: str = "s1", **kw) -> None:
    ops.create(store, trigger=trigger, target=TARGET, now_ms=now_ms, schedule_id=sid, **kw)


# --- cron in a zone -------------------------------------------------------------------------


def test_spring_gap_fires_once_at_the_first_instant_after_it_in_berlin():
    """02:30 does not exist on 2026-03-29 in Berlin: it fires at 03:00 CEST, once."""
    got = fires("30 2 * * *", "Europe/Berlin", utc_ms(2026, 3, 28, 12), 3)
    assert got == [
        "2026-03-29 03:00 +0200",
        "2026-03-30 02:30 +0200",
        "2026-03-31 02:30 +0200",
    ]


def test_several_gap_times_collapse_into_one_firing_in_new_york():
    """*/15 in the missing 02:00 hour (2026-03-08, New York): one firing at 03:00, then on."""
    got = fires("*/15 2,3 * * *", "America/New_York", utc_ms(2026, 3, 8, 5), 5)
    assert got == [
        "2026-03-08 03:00 -0400",
        "2026-03-08 03:15 -0400",
        "2026-03-08 03:30 -0400",
        "2026-03-08 03:45 -0400",
        "2026-03-09 02:00 -0400",
    ]


def test_autumn_overlap_fires_once_at_the_first_of_the_two_instants():
    """02:30 happens twice on 2026-10-25 in Berlin: once, at 02:30 CEST (+0200)."""
    got = fires("30 2 * * *", "Europe/Berlin", utc_ms(2026, 10, 24, 12), 2)
    assert got == ["2026-10-25 02:30 +0200", "2026-10-26 02:30 +0100"]
    hourly = fires("0 * * * *", "America/New_York", utc_ms(2026, 11, 1, 4), 3)
    assert hourly == [
        "2026-11-01 01:00 -0400",  # the repeated 01:00 (-0500) does not fire again
        "2026-11-01 02:00 -0500",
        "2026-11-01 03:00 -0500",
    ]


def test_cron_fields_names_steps_and_the_day_rule():
    assert fires("0 9 * * mon-fri", "UTC", utc_ms(2026, 12, 4, 10), 2) == [
        "2026-12-07 09:00 +0000",  # Friday 10:00 -> Monday
        "2026-12-08 09:00 +0000",
    ]
    # Both day fields restricted: either matches (the 1st, or any Sunday).
    assert fires("0 0 1 * 0", "UTC", utc_ms(2026, 11, 28), 3) == [
        "2026-11-29 00:00 +0000",
        "2026-12-01 00:00 +0000",
        "2026-12-06 00:00 +0000",
    ]
    assert fires("@yearly", "UTC", utc_ms(2026, 6, 1), 1) == ["2027-01-01 00:00 +0000"]
    assert fires("0 0 29 feb *", "UTC", utc_ms(2097, 1, 1), 1) == ["2104-02-29 00:00 +0000"]
    assert fires("0 12 * * 7", "UTC", utc_ms(2026, 12, 1), 1) == ["2026-12-06 12:00 +0000"]


@pytest.mark.parametrize(
    ("expr", "says"),
    [
        ("* * * *", "4 fields"),
        ("61 * * * *", "out of range"),
        ("* 24 * * *", "out of range"),
        ("5-1 * * * *", "backwards"),
        ("*/0 * * * *", "out of range"),
        ("x * * * *", "invalid cron minute"),
        ("0 0 30 2 *", "never fires"),
        ("@often", "unknown cron macro"),
        ("", "invalid cron"),
        ("١ * * * *", "invalid cron minute"),  # a non-ASCII digit
    ],
)
def test_malformed_cron_is_one_clear_error(expr, says):
    with pytest.raises(UserError, match=says):
        parse_cron(expr)


# --- triggers -------------------------------------------------------------------------------


def test_triggers_need_exactly_one_and_a_zone_for_cron():
    now = utc_ms(2026, 12, 1)
    with pytest.raises(UserError, match="no trigger"):
        parse_trigger(at=None, every=None, cron=None, zone=None, now_ms=now)
    with pytest.raises(UserError, match="two triggers"):
        parse_trigger(at="+5m", every="1h", cron=None, zone=None, now_ms=now)
    with pytest.raises(UserError, match="named time zone"):
        parse_trigger(at=None, every=None, cron="* * * * *", zone=None, now_ms=now)
    with pytest.raises(UserError, match="unknown time zone"):
        parse_trigger(at=None, every=None, cron="* * * * *", zone="Mars/Base", now_ms=now)
    with pytest.raises(UserError, match="invalid time zone"):
        parse_trigger(at=None, every=None, cron="* * * * *", zone="/etc/passwd", now_ms=now)
    with pytest.raises(UserError, match="no time zone"):
        parse_trigger(at="2026-12-01T15:00", every=None, cron=None, zone=None, now_ms=now)
    with pytest.raises(UserError, match="relative"):
        parse_trigger(at="+5m", every=None, cron=None, zone="UTC", now_ms=now)
    with pytest.raises(UserError, match="has an offset already"):
        parse_trigger(at="2026-12-01T15:00Z", every=None, cron=None, zone="UTC", now_ms=now)
    with pytest.raises(UserError, match="between 1m"):
        parse_trigger(at=None, every="0m", cron=None, zone=None, now_ms=now)
    with pytest.raises(UserError, match="invalid every"):
        parse_trigger(at=None, every="5s", cron=None, zone=None, now_ms=now)


def test_at_forms_resolve_to_instants():
    now = utc_ms(2026, 12, 1)
    rel = parse_trigger(at="+30m", every=None, cron=None, zone=None, now_ms=now)
    assert rel.next_after(now) == now + 30 * MIN
    iso = parse_trigger(at="2026-12-01T15:00+01:00", every=None, cron=None, zone=None, now_ms=now)
    assert iso.next_after(now) == utc_ms(2026, 12, 1, 14)
    zoned = parse_trigger(
        at="2026-03-29T02:30", every=None, cron=None, zone="Europe/Berlin", now_ms=now
    )
    assert local(zoned.next_after(0) or 0, "Europe/Berlin") == "2026-03-29 03:30 +0200"
    assert rel.next_after(now + 30 * MIN) is None  # one-shot: never again


def test_every_is_a_fixed_interval_from_its_anchor():
    trig = EveryTrigger("every", 6 * HOUR, 1000, "6h")
    assert trig.next_after(999) == 1000 + 6 * HOUR
    assert trig.next_after(1000 + 6 * HOUR) == 1000 + 12 * HOUR
    assert trig.next_after(1000 + 13 * HOUR) == 1000 + 18 * HOUR


# --- catch-up and overlap -------------------------------------------------------------------


def test_catch_up_latest_fires_the_latest_slot_once_and_counts_the_missed(store, launcher):
    clock = FakeClock(utc_ms(2026, 12, 1) / 1000)
    make(store, EveryTrigger("every", HOUR, int(clock() * 1000), "1h"), int(clock() * 1000))
    clock.advance(5.5 * 3600)  # down for five and a half hours: five slots passed
    report = run_due(store, launcher.jobs, int(clock() * 1000))
    assert [f.outcome for f in report.firings] == ["missed", "fired"]
    assert report.firings[0].count == 4
    assert len(launcher.launched()) == 1
    assert launcher.launched()[0][1] == int(utc_ms(2026, 12, 1) + 5 * HOUR)
    again = run_due(store, launcher.jobs, int(clock() * 1000))
    assert again.firings == ()  # nothing is due twice
    _, state = store.load("s1")
    assert (state.fired, state.missed, state.next_due_ms) == (1, 4, utc_ms(2026, 12, 1) + 6 * HOUR)


def test_catch_up_none_skips_late_slots_but_fires_on_time_ones(store, launcher):
    start = utc_ms(2026, 12, 1)
    make(store, EveryTrigger("every", HOUR, start, "1h"), start, catch_up="none")
    report = run_due(store, launcher.jobs, start + 3 * HOUR + ON_TIME_MS + 1)
    assert [(f.outcome, f.count) for f in report.firings] == [("missed", 3)]
    assert launcher.launched() == []
    on_time = run_due(store, launcher.jobs, start + 4 * HOUR + 30_000)  # run-due a minute late
    assert [f.outcome for f in on_time.firings] == ["fired"]


def test_overlap_skip_records_a_skip_while_the_last_job_is_active(store, launcher):
    start = utc_ms(2026, 12, 1)
    make(store, EveryTrigger("every", HOUR, start, "1h"), start)
    assert run_due(store, launcher.jobs, start + HOUR).firings[0].outcome == "fired"
    skipped = run_due(store, launcher.jobs, start + 2 * HOUR).firings
    assert [f.outcome for f in skipped] == ["skipped"]
    assert "still active" in skipped[0].detail
    launcher.finish_all()
    assert run_due(store, launcher.jobs, start + 3 * HOUR).firings[0].outcome == "fired"
    outcomes = [e["outcome"] for e in store.history("s1")]
    assert outcomes == ["fired", "skipped", "fired"]
    assert len(os.listdir(store.dir("s1") / "runs")) == 3  # a receipt per firing


@pytest.mark.parametrize(
    ("expr", "zone", "start", "fired"),
    [
        # 02:30 does not exist that night: once, at 03:00 CEST.
        ("30 2 * * *", "Europe/Berlin", (2026, 3, 28, 22), ["2026-03-29 03:00 +0200"]),
        # 01:30 happens twice that night: once, at the first (-0400), not again at -0500.
        ("30 1 * * *", "America/New_York", (2026, 11, 1, 3), ["2026-11-01 01:30 -0400"]),
    ],
)
def test_a_cron_schedule_through_a_dst_night_on_a_fake_clock(
    store, expr, zone, start, fired, launcher
):
    """A scheduler pass every minute for six hours across the change: exactly one firing."""
    clock = FakeClock(utc_ms(*start) / 1000)
    make(store, CronTrigger("cron", expr, zone), int(clock() * 1000))
    for _ in range(6 * 60):
        clock.advance(60)
        run_due(store, launcher.jobs, int(clock() * 1000))
        launcher.finish_all()
    assert [local(slot, zone) for _, slot, _ in launcher.launched()] == fired


def test_a_month_of_minute_slots_is_one_missed_line_and_one_firing(store, launcher):
    start = utc_ms(2026, 12, 1)
    make(store, CronTrigger("cron", "* * * * *", "UTC"), start)
    report = run_due(store, launcher.jobs, start + 30 * DAY)
    missed, fired = report.firings
    assert missed.outcome == "missed" and missed.count >= MAX_SCAN - 1
    assert fired.slot_ms == start + 30 * DAY  # the very latest slot
    assert "more were due" in missed.detail


def test_paused_schedules_do_not_fire_and_resume_from_now(store, launcher):
    start = utc_ms(2026, 12, 1)
    make(store, EveryTrigger("every", HOUR, start, "1h"), start)
    assert ops.set_paused(store, "s1", True, start).changed
    paused = run_due(store, launcher.jobs, start + 5 * HOUR)
    assert paused.firings == ()
    assert wake_in_s(paused, start + 5 * HOUR) == 30.0  # a paused past slot is no busy loop
    outcome = ops.set_paused(store, "s1", False, start + 5 * HOUR + 10)
    assert outcome.next_due_ms == start + 6 * HOUR
    assert run_due(store, launcher.jobs, start + 5 * HOUR + 20).firings == ()
    assert [e["event"] for e in store.events("s1")] == ["created", "paused", "resumed"]


def test_run_now_fires_outside_the_trigger_and_leaves_due_slots_alone(store, launcher):
    start = utc_ms(2026, 12, 1)
    make(store, EveryTrigger("every", HOUR, start, "1h"), start)
    first = run_now(store, launcher.jobs, "s1", start + 10)
    second = run_now(store, launcher.jobs, "s1", start + 10)
    assert (first.outcome, second.outcome) == ("fired", "skipped")
    assert store.load("s1")[1].next_due_ms == start + HOUR


# --- leases ---------------------------------------------------------------------------------


def test_a_slot_leased_before_0_2_is_recorded_and_never_fired(store, launcher):
    """A `fire-<slot>` lease an older release left (it stopped midway): the slot counts as
    claimed, is recorded as interrupted, and is never fired."""
    start = utc_ms(2026, 12, 1)
    make(store, EveryTrigger("every", HOUR, start, "1h"), start)
    (store.dir("s1") / f"fire-{start + HOUR}").write_text('{"pid": 4194311, "at_ms": 1}\n')
    assert store.lease_exists("s1", start + HOUR)
    report = run_due(store, launcher.jobs, start + HOUR + 5)
    assert [f.outcome for f in report.firings] == ["interrupted"]
    assert launcher.launched() == []
    assert run_due(store, launcher.jobs, start + 2 * HOUR).firings[0].outcome == "fired"


def test_a_firing_cut_short_after_its_start_finds_that_job_and_starts_no_other(store, launcher):
    """The slot's job was started, then the firing died before its receipt and state (kill -9
    at each step of the start: tests/integration/test_start_processes.py): the next pass
    fires the slot with that same job, busy or not, and starts nothing new."""
    start = utc_ms(2026, 12, 1)
    make(store, EveryTrigger("every", HOUR, start, "1h"), start)
    before = (store.dir("s1") / "state.json").read_bytes()
    first = run_due(store, launcher.jobs, start + HOUR).firings[0]
    (store.dir("s1") / "state.json").write_bytes(before)  # the state write was lost
    (store.dir("s1") / "runs" / f"{start + HOUR}.json").unlink()  # and so was the receipt
    again = run_due(store, launcher.jobs, start + HOUR + 5).firings
    assert [(f.outcome, f.job_id) for f in again] == [("fired", first.job_id)]
    assert "not started again" in again[0].detail
    assert len(launcher.launched()) == 1 and launcher.jobs.list_ids() == [first.job_id]


def test_a_receipted_slot_whose_state_was_lost_is_not_fired_again(store, launcher):
    start = utc_ms(2026, 12, 1)
    make(store, EveryTrigger("every", HOUR, start, "1h"), start)
    before = (store.dir("s1") / "state.json").read_bytes()
    run_due(store, launcher.jobs, start + HOUR)
    (store.dir("s1") / "state.json").write_bytes(before)  # as if the state write was lost
    again = run_due(store, launcher.jobs, start + HOUR + 5)
    assert [f.outcome for f in again.firings] == ["fired"]
    assert len(launcher.launched()) == 1


def test_a_receipted_skip_whose_state_was_lost_is_not_called_interrupted(store, launcher):
    start = utc_ms(2026, 12, 1)
    make(store, EveryTrigger("every", HOUR, start, "1h"), start)
    run_due(store, launcher.jobs, start + HOUR)
    before = (store.dir("s1") / "state.json").read_bytes()
    assert run_due(store, launcher.jobs, start + 2 * HOUR).firings[0].outcome == "skipped"
    (store.dir("s1") / "state.json").write_bytes(before)
    again = run_due(store, launcher.jobs, start + 2 * HOUR + 5).firings
    assert [(f.outcome, f.detail) for f in again] == [("skipped", "receipt found; not fired again")]
    assert [h["outcome"] for h in store.history("s1")] == ["fired", "skipped"]


def test_an_unreadable_last_job_does_not_block_the_schedule_forever(store, launcher):
    start = utc_ms(2026, 12, 1)
    make(store, EveryTrigger("every", HOUR, start, "1h"), start)
    (first,) = run_due(store, launcher.jobs, start + HOUR).firings
    (launcher.jobs.job_dir(str(first.job_id)) / "status.json").write_text("{damaged")
    (second,) = run_due(store, launcher.jobs, start + 2 * HOUR).firings
    assert second.outcome == "fired" and "could not be read" in second.detail


def test_receipts_and_leases_are_bounded(store, launcher):
    start = utc_ms(2026, 12, 1)
    make(store, EveryTrigger("every", MIN, start, "1m"), start)
    for n in range(1, MAX_RECEIPTS + 30):
        run_due(store, launcher.jobs, start + n * MIN)
        launcher.finish_all()
    assert len(os.listdir(store.dir("s1") / "runs")) == MAX_RECEIPTS
    assert not [n for n in os.listdir(store.dir("s1")) if n.startswith("fire-")]  # none made
    for n in range(MAX_RECEIPTS + 30):  # an older release's leases: pruned the same way
        (store.dir("s1") / f"fire-{n}").write_text("{}")
    store.prune("s1")
    leases = [n for n in os.listdir(store.dir("s1")) if n.startswith("fire-")]
    assert len(leases) == MAX_RECEIPTS


# --- the scheduler loop ---------------------------------------------------------------------


def test_the_loop_sleeps_until_the_next_slot_on_a_fake_clock(store, launcher):
    clock = FakeClock(utc_ms(2026, 12, 1) / 1000)
    make(store, EveryTrigger("every", 10 * MIN, int(clock() * 1000), "10m"), int(clock() * 1000))
    reports = []

    def stop() -> bool:
        launcher.finish_all()
        return clock() >= utc_ms(2026, 12, 1, 1, 0, 30) / 1000

    serve(store, launcher.jobs, stop=stop, on_report=reports.append, clock=clock, sleep=clock.sleep)
    assert len(launcher.launched()) == 6  # 00:10 ... 01:00
    slots = [slot for _, slot, _ in launcher.launched()]
    assert slots == [utc_ms(2026, 12, 1) + n * 10 * MIN for n in range(1, 7)]
    assert len(reports) < 6 * 25  # it slept between slots instead of spinning


def test_a_clock_set_back_does_not_put_the_loop_to_sleep_for_the_jump(store, launcher):
    wall = [utc_ms(2026, 12, 1) / 1000]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        if not slept:
            wall[0] -= 86_400  # set back a day during the first nap
        slept.append(seconds)
        wall[0] += seconds

    reports: list[object] = []
    serve(
        store,
        launcher.jobs,
        stop=lambda: len(reports) >= 2,
        on_report=reports.append,
        clock=lambda: wall[0],
        sleep=sleep,
        max_wait_s=30,
    )
    assert sum(slept) <= 30  # it looked again at once, not after a day and 30 s


# --- the store and bad input ----------------------------------------------------------------


def test_files_are_private_and_a_refused_create_leaves_nothing(store):
    start = utc_ms(2026, 12, 1)
    make(store, EveryTrigger("every", HOUR, start, "1h"), start)
    for path in [store.root, *store.dir("s1").rglob("*"), store.dir("s1")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), path
    with pytest.raises(UserError, match="exists already"):
        make(store, EveryTrigger("every", HOUR, start, "1h"), start)
    with pytest.raises(UserError, match="the target has no workflow name"):
        ops.create(
            store,
            trigger=EveryTrigger("every", HOUR, start, "1h"),
            target=WorkflowTarget("workflow", " "),
            now_ms=start,
            schedule_id="wf",
        )
    with pytest.raises(UserError, match="invalid schedule id"):
        make(store, EveryTrigger("every", HOUR, start, "1h"), start, sid="../x")
    with pytest.raises(UserError, match="in the past"):
        ops.create(
            store,
            trigger=parse_trigger(
                at="2020-01-01T00:00Z", every=None, cron=None, zone=None, now_ms=start
            ),
            target=TARGET,
            now_ms=start,
            schedule_id="old",
        )
    assert store.ids() == ["s1"]
    assert [n for n in os.listdir(store.root) if n.startswith(".")] == []


def test_a_damaged_schedule_is_reported_and_the_others_still_fire(store, launcher):
    start = utc_ms(2026, 12, 1)
    make(store, EveryTrigger("every", HOUR, start, "1h"), start, sid="good")
    make(store, EveryTrigger("every", HOUR, start, "1h"), start, sid="bad")
    (store.dir("bad") / "state.json").write_text("{not json")
    make(store, EveryTrigger("every", HOUR, start, "1h"), start, sid="newer")
    definition = store.dir("newer") / "definition.json"
    definition.write_text(json.dumps({**json.loads(definition.read_text()), "schema": 9}))
    report = run_due(store, launcher.jobs, start + HOUR)
    assert [f.schedule_id for f in report.firings] == ["good"]
    assert any("bad" in p and "not valid JSON" in p for p in report.problems)
    assert any("newer" in p and "newer version" in p for p in report.problems)


def test_a_cron_state_due_out_of_any_calendar_is_one_problem_not_a_crash(store, launcher):
    start = utc_ms(2026, 12, 1, 0, 30)
    for sid in ("a-bad", "good"):
        make(store, CronTrigger("cron", "0 * * * *", "Europe/Berlin"), start, sid=sid)
    damaged = store.load_state("a-bad").replace(next_due_ms=-(10**14))  # the year -1199
    store.save_state("a-bad", damaged)
    report = run_due(store, launcher.jobs, start + HOUR)
    assert [f.schedule_id for f in report.firings] == ["good"]
    (problem,) = report.problems
    assert problem.startswith("schedule a-bad: ") and "outside the years" in problem
    trigger = CronTrigger("cron", "0 * * * *", "UTC")
    for after in (-(10**14), 10**15):  # `show` lists the slots after a due time read back
        with pytest.raises(UserError, match="outside the years"):
            trigger.next_after(after)


@pytest.mark.parametrize(
    ("field", "value"),
    [("interval_ms", 10**30), ("anchor_ms", -(10**30)), ("interval_ms", 400 * DAY)],
)
def test_a_definition_with_numbers_no_create_writes_is_damaged(store, field, value):
    # `show` printed the slots of such an interval and crashed: "bug: OverflowError"
    start = utc_ms(2026, 12, 1)
    make(store, EveryTrigger("every", HOUR, start, "1h"), start)
    path = store.dir("s1") / "definition.json"
    data = json.loads(path.read_text())
    data["trigger"][field] = value
    path.write_text(json.dumps(data))
    with pytest.raises(UserError, match="schedule s1 is damaged"):
        store.load("s1")


def test_a_one_shot_definition_at_no_calendar_is_damaged(store):
    start = utc_ms(2026, 12, 1)
    make(store, AtTrigger("at", start + HOUR, "+1h"), start)
    path = store.dir("s1") / "definition.json"
    data = json.loads(path.read_text())
    data["trigger"]["at_ms"] = 10**30
    path.write_text(json.dumps(data))
    with pytest.raises(UserError, match="schedule s1 is damaged"):
        store.load("s1")


def test_delete_removes_the_schedule_and_unknown_ids_are_not_found(store):
    start = utc_ms(2026, 12, 1)
    make(store, EveryTrigger("every", HOUR, start, "1h"), start)
    store.delete("s1")
    assert store.ids() == []
    with pytest.raises(NotFound):
        store.load("s1")
    with pytest.raises(NotFound):
        store.delete("s1")


def test_the_plan_is_pure(store):
    start = utc_ms(2026, 12, 1)
    make(store, EveryTrigger("every", HOUR, start, "1h"), start)
    schedule, state = store.load("s1")
    assert plan_firing(schedule, state, start) is None
    plan = plan_firing(schedule, state, start + 2 * HOUR)
    assert plan is not None and (plan.slot, plan.missed) == (start + 2 * HOUR, 1)
    assert store.load("s1")[1] == state  # planning wrote nothing


# --- a property: the fast next-fire search agrees with brute force --------------------------

ZONES = ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC"]
# Instants near the 2026 changes of those zones, and one ordinary day.
NEAR = [
    utc_ms(2026, 3, 29, 1),
    utc_ms(2026, 10, 25, 1),
    utc_ms(2026, 3, 8, 7),
    utc_ms(2026, 11, 1, 6),
    utc_ms(2026, 4, 4, 15),
    utc_ms(2026, 10, 3, 15),
    utc_ms(2026, 6, 1, 12),
]


def brute_next(expr_text: str, zone: str, after_ms: int) -> int:
    """Every wall time of the next three local days, mapped one by one: the smallest after."""
    expr = parse_cron(expr_text)
    tz = ZoneInfo(zone)
    first = datetime.fromtimestamp(after_ms / 1000, tz).date() - timedelta(days=1)
    best = None
    for n in range(4):
        day = first + timedelta(days=n)
        if not expr.matches_date(day):
            continue
        for hour in range(24):
            for minute in range(60):
                if hour in expr.hours and minute in expr.minutes:
                    at = wall_instant_ms(day, hour, minute, tz)
                    if at > after_ms and (best is None or at < best):
                        best = at
    assert best is not None
    return best


@settings(max_examples=60, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    base=st.sampled_from(NEAR),
    shift_min=st.integers(-240, 240),
    minute=st.sampled_from(["*", "0", "30", "*/15", "5,45", "0-10/5"]),
    hour=st.sampled_from(["*", "1", "2", "3", "1-3", "*/2"]),
)
def test_next_fire_matches_brute_force_near_dst_changes(zone, base, shift_min, minute, hour):
    expr = f"{minute} {hour} * * *"
    after = base + shift_min * MIN
    assert next_fire_ms(parse_cron(expr), zone, after) == brute_next(expr, zone, after)


# --- how a schedule that never fires again is listed (issue 21 item 11) ----------------------


def _once(store: ScheduleStore, start: int, target: SpecialistTarget = TARGET) -> None:
    ops.create(
        store,
        trigger=AtTrigger("at", start + HOUR, "in 1h"),
        target=target,
        now_ms=start,
        schedule_id="once",
    )


def _word(store: ScheduleStore) -> str:
    schedule, state = store.load("once")
    return ops.status_word(schedule, state)


def test_a_one_shot_whose_slot_an_older_release_claimed_lists_as_interrupted(store, launcher):
    start = utc_ms(2026, 12, 1)
    _once(store, start)
    (store.dir("once") / f"fire-{start + HOUR}").write_text('{"pid": 4194311, "at_ms": 1}\n')
    assert _word(store) == "active"  # nobody has looked yet
    run_due(store, launcher.jobs, start + HOUR + 5)
    assert _word(store) == "interrupted"
    assert ops.summary(*store.load("once"))["status"] == "interrupted"


@pytest.mark.parametrize(("name", "word"), [("echo", "finished"), ("no-such-one", "failed")])
def test_a_one_shot_that_fired_is_finished_and_one_refused_says_failed(store, launcher, name, word):
    start = utc_ms(2026, 12, 1)
    _once(store, start, SpecialistTarget("specialist", name, "hello"))
    run_due(store, launcher.jobs, start + HOUR)
    assert _word(store) == word


def test_a_state_from_before_last_outcome_still_reads(store):
    from specialists.base.errors import StoreError
    from specialists.features.schedules.model import ScheduleState

    old = {"schema": 1, "last_slot_ms": 5, "next_due_ms": None, "last_job": None}
    assert ScheduleState.from_dict(old).last_outcome is None
    with pytest.raises(StoreError, match="last_outcome"):
        ScheduleState.from_dict({**old, "last_outcome": "exploded"})
