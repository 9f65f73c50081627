"""The companion that keeps a job inside every spend ceiling it counts against.

Registered beside every job (plugin.py); a job under no ceiling gets none. Before the agent
starts it resolves the job's ceilings (resolve.py: its own, its parent's, its mission's, its
session's) into status.json `ceilings`, which is what its own children inherit and what the
views show. Then it counts: the job's own spend live, everyone else's under the same ceilings
from their statuses every COUNT_S (tally.py).

When a ceiling is reached the job stops with an error that names it, spent against allowed:
- native: the loop asks the gate before each model request (runners/native.py), so no
  request starts past the ceiling;
- Claude Code: its own `--max-budget-usd` holds the dollars within a run (the gate's
  `usd_left`), and the tokens are checked as the run reports them;
- pi, Codex and the rest: at the next safe point (the end of a turn or of a tool call), or
  after GRACE_S if none comes, by the same stop a person would send.
At WARN_AT of a ceiling the job logs one `spend` event (shown by feed).
"""

from __future__ import annotations

from typing import Any

from specialists.base.errors import SpecialistsError
from specialists.features.spend.ceiling import WARN_AT, Entry
from specialists.features.spend.tally import Outlay, own, spent_under
from specialists.runners.base import Activity, RunnerEvent, Usage
from specialists.store.records import JobStatus
from specialists.supervise.hooks import CompanionContext

COUNT_S = 2.0  # how often the rest of a tree's spend is counted (its own is always live)
GRACE_S = 30.0  # the longest a pi/Codex job runs past a ceiling, waiting for a safe point
NOTHING = Outlay()
SAFE_POINTS = frozenset({"turn_end", "tool_execution_end", "run_finished"})


class Ceilings:
    def __init__(self, ctx: CompanionContext, found: list[Entry]) -> None:
        self.ctx = ctx
        self.status = ctx.status
        self.entries = found
        self.status.ceilings = [e.to_dict() for e in found]  # in its first status: inherited
        self.native = ctx.record.runner == "native"
        self._others: dict[str, Outlay] = {}
        self._others_due = 0.0
        self._dirty = True  # its own spend moved since the entries were counted
        self._base = Outlay()  # its own spend before this process ran the agent
        self._warned: set[str] = set()
        self._over: Entry | None = None
        self._over_at = 0.0
        self._stopped = False

    # --- the supervisor's calls ---------------------------------------------------------

    def began(self) -> None:
        self._base = own(self.status)
        self.tick(running=False)
        self.ctx.spend.gate = self._gate if self.native else None

    def use_status(self, status: JobStatus) -> None:
        self.status = status
        status.ceilings = [e.to_dict() for e in self.entries]

    def saw(self, event: RunnerEvent, now: float) -> bool:
        changed = False
        if isinstance(event, Usage):  # counted now: the status takes it after this call
            new = Outlay(event.input_tokens + event.output_tokens, event.cost_usd)
            changed = self._count(now, new)
        kind = event.event if isinstance(event, Activity) else event.kind
        if self._over is not None and kind in SAFE_POINTS:
            self._stop()
        return changed

    def tick(self, running: bool) -> bool:
        now = self.ctx.clock()
        if now >= self._others_due:
            keys = [e.of for e in self.entries]
            self._others = spent_under(self.ctx.store, keys, skip=self.ctx.record.id)
            self._others_due, self._dirty = now + COUNT_S, True
        changed = self._dirty and self._count(now)
        self._dirty = False
        if self._over is not None and (
            self.native or not running or now - self._over_at >= GRACE_S
        ):
            self._stop()
        return changed

    def turn_ended(self) -> None:
        if self._over is not None:
            self._stop()

    # --- counting -----------------------------------------------------------------------

    def _count(self, now: float, new: Outlay = NOTHING) -> bool:
        """Count each ceiling again (`new`: its own spend the status does not have yet);
        True when the figures changed."""
        mine = own(self.status).plus(*new)
        counted = [
            e.counted(o.tokens + mine.tokens, o.usd + mine.usd)
            for e in self.entries
            for o in [self._others.get(e.of, Outlay())]
        ]
        lefts = [e.cost_usd - e.spent_usd for e in counted if e.cost_usd is not None]
        self.ctx.spend.usd_left = max(0.0, min(lefts)) if lefts else None
        for entry in counted:
            if entry.over() and self._over is None:
                self._over, self._over_at = entry, now
                self.ctx.event("spend", ceiling=entry.of, reached=True, **_figures(entry))
            elif entry.used() >= WARN_AT and entry.of not in self._warned:
                self._warned.add(entry.of)
                self.ctx.event(
                    "spend", ceiling=entry.of, used=round(entry.used(), 3), **_figures(entry)
                )
        if counted == self.entries:
            return False
        self.entries = counted
        self.status.ceilings = [e.to_dict() for e in counted]
        return True

    def _stop(self) -> None:
        if self._over is not None and not self._stopped:
            self._stopped = True
            self.ctx.stop(self._over.reached())

    # --- the native loop's gate (its thread) --------------------------------------------

    def _gate(self, emitted: Usage) -> str | None:
        """Before a model request: a line when this process's spend and everyone else's, as
        last counted, reach a ceiling."""
        tokens = self._base.tokens + emitted.input_tokens + emitted.output_tokens
        usd = self._base.usd + emitted.cost_usd
        for entry in self.entries:
            other = self._others.get(entry.of, Outlay())
            now = entry.counted(other.tokens + tokens, other.usd + usd)
            if now.over():
                return now.reached()
        return None


def _figures(entry: Entry) -> dict[str, Any]:
    return {k: v for k, v in entry.to_dict().items() if k != "of" and v is not None}


def companion(ctx: CompanionContext) -> Ceilings | None:
    """The job's companion, or None when no ceiling covers it (it then costs nothing)."""
    from specialists.features.spend.resolve import ceilings_of

    try:
        found = ceilings_of(ctx.store, ctx.record, ctx.status)
    except SpecialistsError as exc:  # config.toml broken since the job was planned
        ctx.event("notice", message=f"spend ceilings unknown for this job: {exc.one_line()}")
        return None
    return Ceilings(ctx, found) if found else None
