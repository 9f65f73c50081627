"""One reader, several owner keys: take from each inbox in one pass, deliver every id once.

A Claude Code session is known by several keys at once (its session id, the agent process
above it; owner.py), and a job's events go to every key of its owner. A reader holding all of
them takes from each of their inboxes under all their locks, shows each distinct event id
once, and acknowledges it in every inbox that holds it, so another reader with only one of
the keys (the same agent process after /clear) is not told again.

    with OwnerSet(state_root, keys).taking(max_events=10, max_chars=9000) as taken:
        if taken.events:
            write(render_events(taken.events))   # the delivery
        taken.commit()                           # only after the delivery succeeded

Nothing is acknowledged until `commit`: if the delivery fails, everything is read again
(at-least-once, R-E6). The locks are held from the read to the commit, so two readers of
one session at once (Claude Code runs the hooks of parallel tool calls in parallel) never
both deliver an event.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from specialists.base.errors import StoreError
from specialists.events.inbox import Batch, Inbox
from specialists.events.model import Event
from specialists.events.owners import is_owner
from specialists.events.render import render_event

MAX_SCAN = 100  # events read from one inbox per pass (Inbox.pending's own default)


class Taken:
    """What one pass found: the events to deliver, in order, and how to acknowledge them."""

    def __init__(
        self,
        batches: list[tuple[Inbox, Batch]],
        chosen: list[Event],
        hidden: set[str],
        more: bool,
    ) -> None:
        self._batches = batches
        self._handled = {e.id for e in chosen} | hidden
        self.events: tuple[Event, ...] = tuple(chosen)
        self.hidden = len(hidden)  # acknowledged without being shown (an expired notice)
        self.more = more  # events were left for a later pass (over the count or size cap)
        self.problems: tuple[str, ...] = tuple(p for _, b in batches for p in b.problems)

    def commit(self) -> None:
        """The events reached their reader: move every inbox's cursor past what was handled,
        and drop a handled id from the inboxes where it sat beyond that point."""
        for inbox, batch in self._batches:
            keep = 0
            for event in batch.events:
                if event.id not in self._handled:
                    break
                keep += 1
            if keep == len(batch.events):
                inbox.ack(batch)  # also moves past damaged lines the batch skipped
            elif keep:
                inbox.ack(inbox.pending(max_events=keep))  # the same prefix: we hold the lock
            inbox.drop([e.id for e in batch.events[keep:] if e.id in self._handled])


class OwnerSet:
    def __init__(self, state_root: Path, keys: Sequence[str]) -> None:
        self.state_root = state_root
        # Sorted and distinct: locks are always taken in one order, so readers never deadlock.
        self.keys = tuple(sorted({k for k in keys if is_owner(k)}))
        self.inboxes = tuple(Inbox(state_root, k) for k in self.keys)

    def existing(self) -> tuple[Inbox, ...]:
        """Inboxes whose owner directory exists (a reader creates none just by looking)."""
        return tuple(i for i in self.inboxes if i.dir.is_dir())

    def has_pending(self) -> bool:
        """Events wait in one of the inboxes (a damaged one counts as empty: `taking` says
        what is wrong with it)."""
        for inbox in self.existing():
            try:
                if inbox.has_pending():
                    return True
            except OSError:
                continue
        return False

    @contextlib.contextmanager
    def taking(
        self,
        *,
        max_events: int = 10,
        max_chars: int | None = None,
        hide: Callable[[Event], bool] | None = None,
    ) -> Iterator[Taken]:
        """Hold every lock; yield the pending events (deduplicated, oldest first, at most
        `max_events` and, after the first, `max_chars` of rendered text). `hide(event)`
        marks events to acknowledge without showing them (an expired notice)."""
        problems: list[str] = []
        batches: list[tuple[Inbox, Batch]] = []
        with contextlib.ExitStack() as stack:
            for inbox in self.existing():
                # One damaged inbox (a FIFO or a link planted as its file) must not keep the
                # reader from its other keys: it is reported and left out of this pass.
                try:
                    stack.enter_context(inbox.locked())
                    batches.append((inbox, inbox.pending(max_events=MAX_SCAN)))
                except (OSError, StoreError) as exc:
                    problems.append(f"inbox of {inbox.owner} skipped: {exc}")
            taken = self._choose(batches, max_events, max_chars, hide)
            taken.problems = (*problems, *taken.problems)
            yield taken

    @staticmethod
    def _choose(
        batches: list[tuple[Inbox, Batch]],
        max_events: int,
        max_chars: int | None,
        hide: Callable[[Event], bool] | None,
    ) -> Taken:
        order = sorted(
            (
                (e.ts_ms, n, pos, e)
                for n, (_, b) in enumerate(batches)
                for pos, e in enumerate(b.events)
            ),
            key=lambda row: row[:3],
        )
        chosen: list[Event] = []
        hidden: list[Event] = []
        seen: set[str] = set()
        chars = 0
        more = False
        for _, _, _, event in order:
            if event.id in seen:
                continue
            seen.add(event.id)
            if hide is not None and hide(event):
                hidden.append(event)
                continue
            size = len(render_event(event)) + 2
            if len(chosen) >= max_events or (chosen and max_chars and chars + size > max_chars):
                more = True
                break
            chosen.append(event)
            chars += size
        if not more:  # a full scan may have stopped short of the end of its inbox
            more = any(len(b.events) >= MAX_SCAN and b.end_offset < _size(i) for i, b in batches)
        return Taken(batches, chosen, {e.id for e in hidden}, more)


def _size(inbox: Inbox) -> int:
    try:
        return inbox.events_path.stat().st_size
    except OSError:
        return 0
