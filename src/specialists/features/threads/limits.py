"""Direct-child limits of one parent, checked under its spawn lock before anything is made:
a fixed concurrency limit and a launch limit (R-RLM4), and adaptive concurrency (R-H11), a
limit on open direct children that grows with successes and shrinks with failures.

The adaptive limit is not kept anywhere: it is replayed from the parent's own history each time it
spawns (its children's closes in the order they finished, and its failed launches), so it is
exact after a crash and resets with a new parent session (a new owner), as R-H11 says. A
refusal by the limit is no failure and changes nothing; a reduction stops no child.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable

from specialists.base.errors import SpecialistsError, UserError
from specialists.features.threads.records import ThreadStore
from specialists.features.threads.state import child_view
from specialists.native.tool_settings import AdaptiveConcurrency, ThreadsSettings
from specialists.store.jobs import JobStore

log = logging.getLogger("specialists.features.threads")


def limit_after(cfg: AdaptiveConcurrency, outcomes: Iterable[bool]) -> int:
    """The limit after these completions, oldest first (True: a successful child)."""
    limit, streak = cfg.initial, 0
    for ok in outcomes:
        if ok:
            streak += 1
            if streak >= cfg.successes_to_increase:
                limit, streak = min(cfg.max, limit + 1), 0
        else:
            streak = 0
            limit = max(cfg.min, math.floor(limit * cfg.decrease_factor))
    return limit


def record_failed_launch(threads: ThreadStore, owner: str, at_ms: int) -> None:
    """A launch that failed (R-H7a left nothing of it): one line, under the spawn lock. A
    line that cannot be written is logged, never raised over the launch's own error."""
    try:
        threads.record_failed_launch(owner, at_ms)
    except (OSError, SpecialistsError) as exc:
        log.warning("a failed launch of %s could not be recorded: %s", owner, exc)


def current_limit(threads: ThreadStore, owner: str, cfg: AdaptiveConcurrency) -> int:
    """The parent's limit now, replayed from its children's closes and failed launches."""
    events = [(at, False) for at in threads.failed_launches(owner)]
    for child in threads.children_of(owner):
        closed = threads.closed(child.id)
        if closed is not None:
            events.append((closed.at_ms, not closed.failed))
    return limit_after(cfg, (ok for _, ok in sorted(events, key=lambda e: e[0])))


def check_limits(
    threads: ThreadStore, jobs: JobStore, owner: str, limits: ThreadsSettings | None
) -> None:
    """The parent's direct-child limits (R-RLM4, R-H11; 0 or a disabled adaptive limit: none),
    counted under its spawn lock; a refusal is no failure (nothing changes)."""
    adaptive = limits.adaptive_concurrency if limits is not None else None
    if adaptive is not None and not adaptive.enabled:
        adaptive = None
    if limits is None or not (limits.max_concurrent or limits.max_launches or adaptive):
        return
    children = threads.children_of(owner)
    if limits.max_launches and len(children) >= limits.max_launches:
        raise UserError(
            f"launch limit reached: you have started {len(children)} threads, the most one "
            f"parent may (threads.maxLaunches = {limits.max_launches})",
            hint="finish with the children you have; the limit does not reset while you run",
        )
    open_ = [c for c in children if child_view(threads, jobs, c).phase != "closed"]
    if adaptive is not None:
        limit = current_limit(threads, owner, adaptive)
        if len(open_) >= limit:
            raise UserError(
                f"adaptive concurrency limit reached: {len(open_)} of your threads are still "
                f"open, and your limit is now {limit} (threads.adaptiveConcurrency: it grows "
                "with children that succeed and shrinks with failures)",
                hint="wait for a child_closed event, then spawn again; nothing was queued",
            )
    if limits.max_concurrent and len(open_) >= limits.max_concurrent:
        raise UserError(
            f"concurrency limit reached: {len(open_)} of your threads are still open "
            f"(threads.maxConcurrent = {limits.max_concurrent})",
            hint="wait for a child_closed event, then spawn again; nothing was queued",
        )
