"""Dispatch, yield, be woken, through the real Supervisor on one FakeClock (P1, P2, R-T1..R-T4).

The scripted runner stands for the agent: a run that "called sleep" sets a timer in the
job's own inbox directory and ends with RunFinished(yielded=True). The supervisor must then
wait (not finish), fire the timer when the fake clock reaches it, send the event as one
synthetic follow-up in the stable format, and acknowledge it only once sent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specialists.errors import AgentUnavailable
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.jobs.records import JobRecord
from specialists.jobs.store import JobLock
from specialists.runners.base import Command, FollowUp, RunFinished
from specialists.runners.testing import Call, ScriptedRunner
from specialists.supervise import wake
from specialists.supervise.supervisor import Supervisor
from specialists.timers.store import TimerStore
from tests.support.jobs import TEST_OWNER, new_job
from tests.support.supervising import Harness

SLEEP = EventSource("sleep", "call_1", {"seconds": 60})


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def owner(h: Harness) -> str:
    return f"job-{h.job_id}"


def set_timer(h: Harness, seconds: float, note: str = "check CI") -> Call:
    """A script step: what the agent's `sleep` tool does (a timer for the job's owner)."""

    def run() -> None:
        now = h.clock()
        TimerStore(h.store.root, owner(h)).set(
            int((now + seconds) * 1000), now_ms=int(now * 1000), note=note, source=SLEEP
        )

    return Call(run)


def follow_ups(runner: ScriptedRunner) -> list[FollowUp]:
    return [c for c in runner.commands if isinstance(c, FollowUp)]


def test_a_yield_on_a_timer_waits_and_the_timer_wakes_the_agent_once(h: Harness) -> None:
    runner = h.runner(
        [set_timer(h, 60), RunFinished(text="", yielded=True)],
        follow_up_script=[RunFinished(text="Woke up: CI is green.")],
    )
    started = h.clock()
    status = h.run(runner)
    assert status.status == "done" and h.result() == "Woke up: CI is green."
    (woken,) = follow_ups(runner)
    assert woken.synthetic
    assert woken.message.startswith("[specialists event] timer from sleep (call_1)\n")
    assert 'original_args: {"seconds":60}' in woken.message
    assert woken.message.endswith(
        "Timer " + woken.message.split("Timer ")[1].split(" ")[0] + " fired: check CI"
    )
    assert h.clock() - started >= 60  # not before its time
    assert not Inbox(h.store.root, owner(h)).has_pending()  # acknowledged once sent
    kinds = h.kinds()
    assert kinds.index("waiting") < kinds.index("woken") < kinds.index("done")
    waiting = next(e for e in h.events() if e["event"] == "waiting")
    assert waiting["reason"] == "events" and waiting["why"] == "1 timer due 00:17:40 UTC"
    assert kinds.count("waiting") == 1  # a long wait logs once, not each recheck


def test_a_late_timer_says_how_late(h: Harness) -> None:
    """A timer already overdue when the wait starts fires at once with "(late by N s)"."""
    runner = h.runner(
        [set_timer(h, 5), 125.0, RunFinished(text="", yielded=True)],
        follow_up_script=[RunFinished(text="ok")],
    )
    h.run(runner)
    (woken,) = follow_ups(runner)
    assert "fired: check CI (late by 120 s)" in woken.message


def test_several_events_arrive_as_one_message_in_inbox_order(h: Harness) -> None:
    def two_events() -> None:
        inbox = Inbox(h.store.root, owner(h))
        for seq, body in ((1, "first"), (2, "second")):
            inbox.append("notice", EventSource("bg_run", "c9"), body, source_id="bg-x", seq=seq)

    runner = h.runner(
        [set_timer(h, 60), RunFinished(text="", yielded=True), 3.0, Call(two_events)],
        follow_up_script=[RunFinished(text="seen")],
    )
    assert h.run(runner).status == "done"
    woken, timer = follow_ups(runner)
    assert "timer from sleep" in timer.message
    assert woken.message.index("first") < woken.message.index("second")
    assert woken.message.count("[specialists event]") == 2


def test_an_answer_with_nothing_pending_ends_the_job_as_before(h: Harness) -> None:
    runner = h.runner([RunFinished(text="plain answer")])
    status = h.run(runner)
    assert status.status == "done" and h.result() == "plain answer"
    assert "waiting" not in h.kinds() and follow_ups(runner) == []


def test_an_answer_with_a_pending_timer_waits_for_it_then_ends_after_the_next_answer(
    h: Harness,
) -> None:
    """Answered, but a timer is pending: the job waits; the wake-up's answer is the result."""
    runner = h.runner(
        [set_timer(h, 30), RunFinished(text="first answer")],
        follow_up_script=[RunFinished(text="second answer")],
    )
    assert h.run(runner).status == "done"
    assert h.result() == "second answer" and len(follow_ups(runner)) == 1


def test_a_yield_with_nothing_pending_is_told_so_once_and_its_answer_ends_the_job(
    h: Harness,
) -> None:
    """sleep_until_event with nothing that could wake it: one notice, then the answer."""
    runner = h.runner(
        [RunFinished(text="", yielded=True)], follow_up_script=[RunFinished(text="giving up")]
    )
    assert h.run(runner).status == "done" and h.result() == "giving up"
    (nudge,) = follow_ups(runner)
    assert wake.NOTHING_PENDING in nudge.message and nudge.synthetic


def test_a_second_empty_yield_ends_the_job_with_an_error_not_a_loop(h: Harness) -> None:
    runner = h.runner(
        [RunFinished(text="", yielded=True)],
        follow_up_script=[RunFinished(text="", yielded=True)],
    )
    status = h.run(runner)
    assert status.status == "error" and status.error == wake.YIELDED_WITH_NOTHING
    assert len(follow_ups(runner)) == 1


def test_stop_while_waiting_cancels_a_job_without_an_answer(h: Harness) -> None:
    runner = h.runner([set_timer(h, 3600), RunFinished(text="", yielded=True), 5.0, h.post("stop")])
    status = h.run(runner)
    assert status.status == "cancelled" and follow_ups(runner) == []
    assert h.clock() < 1000 + 3600  # not held until the timer
    # A job that ended cannot be woken: its timer is cancelled, on record.
    (timer,) = TimerStore(h.store.root, owner(h)).fold().timers.values()
    assert timer.state == "cancelled"


def test_a_starting_supervisor_fires_the_overdue_timers_of_its_owners(h: Harness) -> None:
    """The session that set a timer is gone; the next front that sees the owner (here a job
    it started) fires it, late, into that owner's inbox."""
    session = TimerStore(h.store.root, TEST_OWNER)
    session.set(int((h.clock() - 90) * 1000), now_ms=int((h.clock() - 100) * 1000), source=SLEEP)
    h.run(h.runner([RunFinished(text="ok")]))
    events = Inbox(h.store.root, TEST_OWNER).pending().events
    (event,) = [e for e in events if e.kind == "timer"]  # beside the job's end notice
    assert event.body.endswith("(late by 90 s)")
    assert session.fold().pending() == []


def test_stop_while_waiting_ends_a_job_that_answered_with_its_answer(h: Harness) -> None:
    runner = h.runner([set_timer(h, 3600), RunFinished(text="kept"), 5.0, h.post("stop")])
    status = h.run(runner)
    assert status.status == "done" and h.result() == "kept"


def test_the_idle_limit_counts_from_the_timer_not_from_the_yield(h: Harness) -> None:
    """A pending timer is a promise: a 2-minute sleep under a 1-minute idle limit is woken."""
    runner = h.runner(
        [set_timer(h, 120), RunFinished(text="", yielded=True)],
        follow_up_script=[RunFinished(text="after two minutes")],
    )
    status = h.run(runner, idle_timeout_ms=60_000)
    assert status.status == "done" and h.result() == "after two minutes"
    assert "idle_timeout" not in h.kinds()


def start_child(h: Harness) -> tuple[list[str], Call, Call]:
    """A child job owned by the parent, created now (so the parent has pending work), and a
    script step that supervises it to its end on the same clock."""
    made: list[tuple[JobRecord, JobLock]] = []
    ended: list[str] = []

    def create() -> None:
        made.append(new_job(h.store, h.tmp_path, owner=[owner(h)], specialist="child"))

    def run_child() -> None:
        record, lock = made[0]
        child = Supervisor(
            h.store,
            record,
            ScriptedRunner([RunFinished(text="child says hi")], clock=h.clock),
            clock=h.clock,
            sleep=h.clock.sleep,
            wall=h.clock,
            handle_signals=False,
        )
        try:
            ended.append(child.run().status)
        finally:
            lock.release()

    return ended, Call(create), Call(run_child)


def test_a_child_jobs_end_wakes_its_parent(h: Harness) -> None:
    """The parent owns a running child job (pending work); the child's supervisor ends it
    and tells the parent; the parent's agent is woken by that notice."""
    ended, create, run_child = start_child(h)
    runner = h.runner(
        [create, RunFinished(text="", yielded=True), 2.0, run_child],
        follow_up_script=[RunFinished(text="the child said hi")],
    )
    assert h.run(runner).status == "done" and ended == ["done"]
    (woken,) = follow_ups(runner)
    assert "[specialists event] notice from job" in woken.message
    assert "(child) done. Its answer:\nchild says hi" in woken.message


def test_an_answered_job_waiting_on_a_silent_child_ends_at_the_idle_limit(h: Harness) -> None:
    """Bounded: owned work that never reports keeps the job at most its idle limit; the job
    ends with the answer it gave."""
    _, create, _ = start_child(h)
    runner = h.runner([create, RunFinished(text="answered")])
    status = h.run(runner, idle_timeout_ms=30_000)
    assert status.status == "done" and h.result() == "answered"
    assert "idle_timeout" in h.kinds() and follow_ups(runner) == []


class DiesOnWake(ScriptedRunner):
    """The agent's process is gone when the wake-up is sent."""

    def send(self, command: Command) -> None:
        if isinstance(command, FollowUp):
            raise AgentUnavailable("the agent process is gone")
        super().send(command)


def test_a_wake_up_that_cannot_be_sent_stays_in_the_inbox(h: Harness) -> None:
    """At-least-once: a failed send leaves the event unacknowledged for whoever looks next."""
    runner = DiesOnWake([set_timer(h, 10), RunFinished(text="", yielded=True)], clock=h.clock)
    status = h.run(runner)
    assert status.status == "error" and "wake-up could not be delivered" in (status.error or "")
    batch = Inbox(h.store.root, owner(h)).pending()
    assert [e.kind for e in batch.events] == ["timer"]


class Killed(BaseException):
    """SIGKILL stand-in: nothing of the supervisor's own cleanup runs past it."""


class KilledOnWake(ScriptedRunner):
    def send(self, command: Command) -> None:
        if isinstance(command, FollowUp):
            raise Killed  # after the events were read, before they were acknowledged
        super().send(command)


def test_a_restarted_supervisor_fires_overdue_timers_late_and_replays_without_duplicates(
    h: Harness,
) -> None:
    """Kill the supervisor mid-delivery; ten minutes later another supervisor takes the job
    (same owner, same files): nothing to re-arm in memory (timers are records), the timer
    that came due while nobody watched fires at once "(late by N s)", the event never
    acknowledged is delivered again, and each event reaches the agent exactly once."""
    first = KilledOnWake(
        [set_timer(h, 10, "first"), set_timer(h, 100, "second"), RunFinished("", yielded=True)],
        clock=h.clock,
    )
    with pytest.raises(Killed):
        h.run(first)
    timers = TimerStore(h.store.root, owner(h))
    assert [t.note for t in timers.fold().pending()] == ["second"]
    assert Inbox(h.store.root, owner(h)).has_pending()  # fired, never acknowledged

    h.clock.advance(600)
    record = h.store.read_record(h.job_id)
    lock = JobLock(h.store.job_dir(h.job_id))
    assert lock.try_acquire()
    second = ScriptedRunner(
        [RunFinished("", yielded=True)],
        follow_up_script=[RunFinished("saw both")],
        clock=h.clock,
    )
    sup = Supervisor(
        h.store,
        record,
        second,
        clock=h.clock,
        sleep=h.clock.sleep,
        wall=h.clock,
        handle_signals=False,
    )
    try:
        status = sup.run()
    finally:
        lock.release()
    assert status.status == "done" and h.result() == "saw both"
    (woken,) = follow_ups(second)
    assert woken.message.count("[specialists event] timer") == 2
    assert "fired: first" in woken.message and "fired: second (late by" in woken.message
    late = woken.message.split("(late by ")[1].split(" s)")[0]
    assert int(late) >= 500
    lines = (h.store.root / "owners" / owner(h) / "events.jsonl").read_text().splitlines()
    ids = [json.loads(line)["id"] for line in lines if line.strip()]
    assert len(ids) == len(set(ids)) == 2  # one line per event: no duplicate append
    fires = [r for r in timers.path.read_text().splitlines() if '"op":"fire"' in r]
    assert len(fires) == 2 and not Inbox(h.store.root, owner(h)).has_pending()


def test_a_follow_up_to_a_job_waiting_for_work_is_delivered_at_once(h: Harness) -> None:
    """Between runs for control requests: a person's follow-up is not held until the timer;
    it gets its run, then the job waits again and the timer still wakes it."""
    runner = h.runner(
        [set_timer(h, 60), RunFinished("", yielded=True), 5.0, h.post("follow_up", "status?")],
        follow_up_script=[RunFinished(text="still waiting on CI")],
    )
    status = h.run(runner)
    person, timer = follow_ups(runner)
    assert person.message == "status?" and not person.synthetic
    assert timer.synthetic and "timer from sleep" in timer.message
    assert status.status == "done"
    (ack,) = h.acks("follow_up")
    assert ack["delivered"] is True


@pytest.mark.parametrize("planted", ["fifo", "symlink"])
def test_a_planted_inbox_file_ends_the_wait_at_once_with_the_reason(
    h: Harness, tmp_path: Path, planted: str
) -> None:
    """A FIFO or a symlink in place of the job's events.jsonl: the job cannot wait for
    events, so it ends at once saying why: no hang on the FIFO, nothing written through the
    link, never a wait that nothing can end."""
    outside = tmp_path / "outside.jsonl"
    outside.write_text("")

    def plant() -> None:
        events = h.store.root / "owners" / owner(h) / "events.jsonl"
        events.parent.mkdir(parents=True, exist_ok=True)
        if planted == "fifo":
            os.mkfifo(events)
        else:
            events.symlink_to(outside)

    runner = h.runner(
        [set_timer(h, 3600), Call(plant), RunFinished("", yielded=True), 20.0, h.post("stop")]
    )
    started = h.clock()
    status = h.run(runner)
    assert status.status == "error" and follow_ups(runner) == []
    assert (status.error or "").startswith("cannot wait for events: ")
    assert h.clock() - started < 20  # before the stop request: nothing hung
    assert outside.read_text() == ""  # nothing written through the link


def test_a_malformed_inbox_line_is_reported_and_later_events_still_wake_the_agent(
    h: Harness,
) -> None:
    def damage_then_event() -> None:
        inbox = Inbox(h.store.root, owner(h))
        inbox.append("notice", SRC_BG, "before", source_id="bg-1", seq=1)
        with open(inbox.events_path, "ab") as f:
            f.write(b'{"id": "half a line", "kind": \n')  # not JSON
            f.write(b"\xff\xfe garbage\n")
        inbox.append("job_exit", SRC_BG, "after the damage", source_id="bg-1", seq=2)

    runner = h.runner(
        [set_timer(h, 60), RunFinished("", yielded=True), 2.0, Call(damage_then_event)],
        follow_up_script=[RunFinished(text="fine")],
    )
    h.run(runner)
    woken = follow_ups(runner)[0]
    assert "before" in woken.message and "after the damage" in woken.message
    problems = [e["message"] for e in h.events() if e["event"] == "notice"]
    assert sum(f"inbox of {owner(h)}" in p for p in problems) == 2, problems


SRC_BG = EventSource("bg_run", "c7")
