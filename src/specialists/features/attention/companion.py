"""Attention's companion beside every job: feed it events, act on what it raises.

`Attendant` is registered as a companion (plugin.py) and held by the supervisor. On every
runner event `saw` updates the pure watch (attention/watch.py) and the facts status.json shows
(last activity, the open tool call and since when); at each loop step `tick` asks the watch what
is due and, for a raised state, appends `needs_attention` to events.jsonl, sets status.json's
`needs_attention` and posts the notice to the owner's inbox; activity that ends the state clears
the status. At a safe end of turn (a run that answered or yielded) `turn_ended` runs the
watchdog.

Nothing here runs after the job's end: the supervisor stops calling once an ending is
under way, so a notice that was about to be due is never posted for a finished job.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import assert_never

from specialists.base.errors import SpecialistsError
from specialists.features.attention.settings import AttentionSettings, WatchdogSettings
from specialists.features.attention.watch import TOOL_EVENTS, AttentionWatch, mutating_tools
from specialists.runners.base import Activity, RunnerEvent
from specialists.store.jobs import JobStore
from specialists.store.records import JobRecord, JobStatus
from specialists.supervise.hooks import CompanionContext

# The watchdog, its reviews and the notices load when a job has a watchdog or raises
# attention, not for every job.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.features.attention.watchdog import Review, Watchdog

EventSink = Callable[..., None]
_SLOW = TOOL_EVENTS | {"run_finished"}  # events that move more than the activity clock


class Attendant:
    def __init__(
        self,
        store: JobStore,
        record: JobRecord,
        status: JobStatus,
        *,
        clock: Callable[[], float],
        wall: Callable[[], float],
        event: EventSink,
    ) -> None:
        self.store, self.record, self.status = store, record, status
        self.clock, self.wall, self._event = clock, wall, event
        settings = AttentionSettings.of_record(record.attention)
        self.watch = AttentionWatch(settings, mutating_tools(record.runner), clock())
        self.watchdog: Watchdog | None = None
        dog = WatchdogSettings.of_record(record.watchdog)
        if dog.enabled:
            from specialists.features.attention.watchdog import Watchdog

            self.watchdog = Watchdog(dog)
        self.seq = 0  # notices posted: the n of `<job id>.attention:notice:<n>`
        self._open_since: float | None = None

    def use_status(self, status: JobStatus) -> None:
        self.status = status  # it marks attention on the status the job writes

    # --- the hot path: every runner event -----------------------------------------------

    def saw(self, ev: RunnerEvent, now: float) -> bool:
        """Feed one event; True when status.json changed."""
        watch = self.watch
        kind = ev.event if isinstance(ev, Activity) else ev.kind
        if kind not in _SLOW and not watch.quiet_raised:
            watch.last_at, watch.last_event = now, kind  # the common case: activity only
            return False
        if isinstance(ev, Activity):
            fields = ev.fields
            tool = fields.get("tool") if ev.log or ev.event != "toolcall" else None
            ended = watch.saw(now, ev.event, tool, error=fields.get("is_error") is True)
        else:
            ended = watch.saw(now, ev.kind)
            if ev.kind == "run_finished":
                watch.run_ended()
        changed = False
        if ended and self.status.needs_attention is not None:
            self.status.needs_attention = None
            changed = True
        opened = watch.open_tool
        since = opened[1] if opened else None
        if since != self._open_since:
            self._open_since = since
            self.status.tool_open_since_ms = self._wall_ms(since)
            changed = True
        return changed

    # --- each loop step ----------------------------------------------------------------

    def tick(self, running: bool) -> bool:
        """Raise what is due now; True when status.json changed."""
        item = self.watch.due(self.clock(), running=running)
        if item is None:
            return False
        from specialists.features.attention import notice

        text = notice.summary(item)
        facts = notice.details(item)
        self._event("needs_attention", attention=item.kind, summary=text, **facts)
        self.status.needs_attention = text
        self._post(item.kind, notice.body(self.record, item, self.status.last_event_at_ms), facts)
        return True

    # --- the watchdog ------------------------------------------------------------------

    def began(self) -> None:
        """Before the agent starts: the tree's key the first review compares against (a
        review job has no watchdog: WatchdogSettings.of_record)."""
        dog = self.watchdog
        if dog is None:
            return
        from specialists.features.attention.tree import TreeError, tree_key

        try:
            dog.began(tree_key(Path(self.record.cwd)))
        except (TreeError, OSError) as exc:  # OSError: the scratch index could not be made
            self.watchdog = None
            why = exc.one_line() if isinstance(exc, TreeError) else str(exc)
            self._event("notice", message=f"watchdog off for this job: {why}")

    def turn_ended(self) -> None:
        """A safe end of turn: review the tree's change, if any (bounded by the watchdog)."""
        dog = self.watchdog
        if dog is None:
            return
        from specialists.features.attention.tree import TreeError, diff, tree_key
        from specialists.features.attention.watchdog import (
            Busy,
            Review,
            ReviewBudgetSpent,
            Unchanged,
        )
        from specialists.store.view import still_active

        cwd = Path(self.record.cwd)
        try:
            key = tree_key(cwd)
        except (TreeError, OSError) as exc:
            why = exc.one_line() if isinstance(exc, TreeError) else str(exc)
            self._event("notice", message=f"watchdog skipped this turn: {why}")
            return
        active = dog.active is not None and still_active(self.store, dog.active)
        decision = dog.turn_ended(key, review_active=active)
        if isinstance(decision, Unchanged):
            return
        if isinstance(decision, Busy):
            self._event("watchdog", outcome="busy", review=decision.review_id)
        elif isinstance(decision, ReviewBudgetSpent):
            if decision.first:
                self._event("watchdog", outcome="budget_spent", reviews=decision.reviews)
                text = (
                    f"Job {self.record.id}: the watchdog's budget of {decision.reviews} "
                    "review(s) is spent; later changes are not reviewed."
                )
                self._post("watchdog", text, {"outcome": "budget_spent"})
        elif isinstance(decision, Review):
            self._start_review(dog, cwd, decision, diff)
        else:
            assert_never(decision)

    def _start_review(
        self, dog: Watchdog, cwd: Path, review: Review, diff: Callable[..., tuple[str, str]]
    ) -> None:
        from specialists.features.attention.review import start_review

        try:
            text, stat = diff(cwd, review.base, review.head)
            job_id = start_review(self.store, self.record, review, text, stat)
        except SpecialistsError as exc:
            self._event("watchdog", outcome="failed", error=exc.one_line())
            why = f"Job {self.record.id}: the watchdog could not start its review: "
            self._post("watchdog", why + exc.one_line(), {"outcome": "failed"})
            return
        dog.launched(review, job_id)
        facts = {
            "outcome": "review",
            "review_job": job_id,
            "base": review.base,
            "head": review.head,
            "number": review.number,
        }
        self._event("watchdog", **facts)
        body = (
            f"Job {self.record.id} ({self.record.specialist}) changed its working tree; the "
            f"watchdog started review {review.number} as job {job_id}. Its answer comes as "
            f"that job's notice.\n{stat.strip()}\n"
            f"Run: specialists result {job_id} --wait (MCP tool: result)"
        )
        self._post("watchdog", body, facts)

    # --- helpers -----------------------------------------------------------------------

    def _post(self, kind: str, body: str, facts: dict[str, object]) -> None:
        from specialists.features.attention import notice

        self.seq += 1
        notice.post(self.store.root, self.record, self.seq, kind, body, facts)

    def _wall_ms(self, mono: float | None) -> int | None:
        if mono is None:
            return None
        return int((self.wall() - (self.clock() - mono)) * 1000)


def companion(ctx: CompanionContext) -> Attendant:
    return Attendant(
        ctx.store, ctx.record, ctx.status, clock=ctx.clock, wall=ctx.wall, event=ctx.event
    )
