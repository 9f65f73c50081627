"""The usage-limit pause: a job that meets a provider's usage limit with a reset time waits
for the reset instead of failing (docs/usage-limits.md).

One `LimitPause` per job (HOOKS.pauses, registered by plugin.py), called by its supervisor:
- `run_failed`: a limit read from the run's error (parse.py) pauses the job. A
  durable timer of the job's own (events/timers.py) wakes it at the reset, and the wake-up
  continues the agent's session as a follow-up would; new jobs for the provider are held
  until then (holds.py);
- `hold`, before the agent starts: while its provider is held, wait for the reset;
- `resumed` / `ended`: the pause's timer is cancelled if still pending (early by a person's
  `resume`, or a stop);
- `take_over`: its supervisor died while it was paused (store/recovery.py restarts such a
  job): no agent runs, so the successor waits out the pause here, reading the control inbox.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from specialists.base.display import clock_time
from specialists.base.errors import SpecialistsError
from specialists.events.model import EventSource
from specialists.events.timers import TimerStore
from specialists.features.usage_limits import holds
from specialists.runners.base import FollowUp
from specialists.store.control import ControlRequest, read_requests
from specialists.store.records import HELD_EVENT, LIMIT_EVENT
from specialists.supervise import wake
from specialists.supervise.requests import Situation, ack_fields, decide

if TYPE_CHECKING:
    from specialists.supervise.supervisor import Supervisor

# What the agent is told when its usage limit has reset (the timer's note).
LIMIT_RESET = "the usage limit has reset: continue the task where you left off"


class LimitPause:
    def __init__(self, sup: Supervisor) -> None:
        self.sup = sup
        self.provider = holds.provider_of(sup.record.runner, sup.record.model)
        self.timer: str | None = None  # the timer that ends the pause
        self.looked = False  # a successor looks its predecessor's timer up once

    def run_failed(self, error: str) -> bool:
        # Its dozen patterns are compiled only when a run fails, never on a job's start.
        from specialists.features.usage_limits.parse import from_text

        sup = self.sup
        limit = from_text(error, sup.now_ms())
        if limit is None or "follow_up" not in sup.runner.accepts() or sup.ending is not None:
            return False
        rec, j, at = sup.record, sup.recorder, limit.resets_at_ms
        try:
            timer = self._timers().set(
                at, now_ms=sup.now_ms(), note=LIMIT_RESET, source=EventSource("usage_limit")
            )
        except (SpecialistsError, OSError) as exc:
            why = exc.one_line() if isinstance(exc, SpecialistsError) else str(exc)
            j.notice(f"usage limit: no timer could be set to resume the job ({why})")
            return False
        self.timer, self.looked = timer.id, True
        sup.guard.run(
            "provider hold",
            lambda: holds.hold(sup.store.root, self.provider, at, rec.id, limit.why),
        )
        j.event(
            "usage_limit", provider=self.provider, resets_at_ms=at, timer=timer.id, error=limit.why
        )
        if sup.state.delivery is None:
            sup.state.delivery = wake.delivery_mode(rec, True)
        sup.pause(LIMIT_EVENT, until_ms=at)
        return True

    def resumed(self) -> None:
        timer, self.timer = self._pending_timer(), None
        early = timer is not None and self._cancel(timer)
        self.sup.recorder.event("usage_resumed", early=early)

    def ended(self) -> None:
        timer, self.timer = self._pending_timer(), None
        if timer is not None:
            self._cancel(timer)

    def hold(self) -> bool:
        """While its provider is held (another job met its usage limit), wait for the reset,
        saying so once. False: the job ended while held."""
        sup, provider = self.sup, self.provider
        st, j = sup.status, sup.recorder
        self.looked = True  # a held job has no timer of its own
        found = holds.held(sup.store.root, provider, sup.now_ms())
        if found is None:
            return True
        st.current_event, st.paused_until_ms = HELD_EVENT, found.until_ms
        at = clock_time(found.until_ms, sup.now_ms())
        j.event("held", provider=provider, until_ms=found.until_ms, by=found.job)
        j.notice(f"held until {at}: {provider}'s usage limit (met by job {found.job}) resets then")
        sup.save(force=True)
        while found is not None:
            sup.guard.run("inbox", sup.inbox.read)  # a stop ends it here
            if sup.guard.signal is not None or sup.ending is not None:
                final, error = (
                    (sup.ending.final, sup.ending.error) if sup.ending else ("cancelled", None)
                )
                sup.finish(final, error)
                return False
            self._nap_until(found.until_ms)
            found = holds.held(sup.store.root, provider, sup.now_ms())
        st.current_event, st.paused_until_ms = "starting", None
        j.event("hold_ended", provider=provider)
        return True

    def take_over(self) -> str | None:
        sup, until_ms = self.sup, self.sup.status.paused_until_ms
        assert until_ms is not None  # the supervisor takes over only a paused job
        self._pending_timer()
        at = clock_time(until_ms, sup.now_ms())
        sup.recorder.notice(
            f"the supervisor restarted; the job stays paused until {at} (usage limit)"
        )
        sup.save(force=True)
        return self._wait_paused(until_ms)

    def _wait_paused(self, until_ms: int) -> str | None:
        """Wait for the reset with no agent running; the control inbox is read as always
        (a stop ends the job, a follow-up such as `resume` ends the wait early). The task to
        continue with, or None when the job ended."""
        sup = self.sup
        situation = Situation(
            phase="waiting",
            keep_alive=sup.record.keep_alive,
            runner=sup.record.runner,
            accepts=frozenset({"follow_up"}),
            answered=sup.state.last_answer is not None,
        )
        ended: list[str | None] = []  # what a request that ends the wait says to do

        def act(req: ControlRequest) -> bool:
            decision = decide(req.kind, req.message, situation)
            sup.recorder.event(f"{req.kind}_ack", **ack_fields(req.id, decision))
            if decision.kind == "stop_job" or sup.guard.signal is not None:
                ended.append(None)
            elif decision.kind == "deliver" and isinstance(decision.command, FollowUp):
                ended.append(decision.command.message)  # resumed early by a person
            return bool(ended)  # the requests after it wait for the job's next look

        while sup.now_ms() < until_ms:
            for problem in read_requests(sup.recorder.job_dir, act):
                sup.recorder.notice(problem)
            if ended and ended[0] is not None:
                return ended[0]
            if ended or sup.guard.signal is not None:
                sup.finish("cancelled", None)
                return None
            self._nap_until(until_ms)
        timer, self.timer = self.timer, None
        if timer is not None:  # the reset came: this start is the wake-up
            self._cancel(timer)
        return LIMIT_RESET

    def _nap_until(self, until_ms: int) -> None:
        """One short sleep of a wait with no agent running (a hold, a pause): at most a few
        ticks, so the inbox is read again soon, and never past `until_ms`."""
        sup = self.sup
        sup.sleep(max(0.01, min(sup.tick * 5, until_ms / 1000 - sup.wall())))

    def _timers(self) -> TimerStore:
        return TimerStore(self.sup.store.root, self.sup.owner)

    def _pending_timer(self) -> str | None:
        """The pause's timer: set by this supervisor, or found by its note (taken over)."""
        if self.timer is None and not self.looked and self.sup.status.paused_until_ms:
            self.looked = True
            try:
                pending = self._timers().pending()
            except (SpecialistsError, OSError) as exc:
                self.sup.guard.report(f"the usage-limit timer could not be looked up: {exc}")
                return None
            self.timer = next((t.id for t in pending if t.note == LIMIT_RESET), None)
        return self.timer

    def _cancel(self, timer: str) -> bool:
        """Cancel the pause's timer if it is still pending; True if it was."""
        try:
            return self._timers().cancel(timer, now_ms=self.sup.now_ms()).changed
        except (SpecialistsError, OSError) as exc:
            self.sup.guard.report(f"the usage-limit timer {timer} could not be cancelled: {exc}")
            return False
