"""Inbox events to the Claude Code session that started the work: the hooks' side of events/.

Every hook that can add text to the model's context (UserPromptSubmit, PostToolUse, Stop)
delivers the session's pending events through `deliver`: it fires the session's due timers,
takes the events of each of the session's owner keys (events.multi: each id once, all
inboxes acknowledged), hands the rendered text to the hook's writer, and acknowledges only
after the writer returned (at-least-once: a failed write leaves everything pending).

Hooks run on every prompt and tool call, so `deliver` first takes a cheap look (`worth_a_look`):
a stat of each key's inbox against its cursor, and for timers a cached "next due" that is
valid while the timers file is unchanged. Only when that look finds something does it import
the events and timers rooms (which cost tens of milliseconds). The cached look mirrors
Inbox.has_pending; a test keeps the two in step.
"""

from __future__ import annotations

import os
import time

from specialists.base.errors import StoreError
from specialists.events.notices import NOTICE_TTL_S
from specialists.events.owners import INBOX_NAME, OWNERS_DIR
from specialists.fronts.hooks.common import HOOKS_DIR_NAME, log, write_small
from specialists.store.files import object_or_none, read_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from specialists.events.model import Event

MAX_EVENTS = 10  # per delivery, as the wave-1 banners; the rest come with the next one
# Claude Code 2.1.197 saves hook context over 10,000 characters to a file and shows the model
# a 2 KB preview: stay under it.
MAX_CHARS = 9000
MORE = "[More specialists events are waiting; they come with your next prompt or tool call.]"
CURSOR_BYTES = 1024 * 1024  # as events.inbox._read_cursor
LINE_BYTES = 64 * 1024  # as events.inbox.MAX_LINE_BYTES


def has_pending(state_dir: str, keys: tuple[str, ...]) -> bool:
    """Events wait in one of these keys' inboxes (cheap, no events import)."""
    return any(_has_pending(os.path.join(state_dir, OWNERS_DIR, key)) for key in keys)


def worth_a_look(state_dir: str, keys: tuple[str, ...], now: float) -> bool:
    """Anything to deliver or fire for these keys? No events or timers import."""
    for key in keys:
        owner = os.path.join(state_dir, OWNERS_DIR, key)
        if _has_pending(owner) or _timer_may_be_due(state_dir, owner, key, now):
            return True
    return False


def deliver(
    state_dir: str,
    keys: tuple[str, ...],
    write: Callable[[str], None],
    *,
    event: str,
    now: Callable[[], float] = time.time,
) -> int:
    """Fire due timers, then write the pending events' text once and acknowledge them.
    Returns how many events were delivered (0: `write` was not called)."""
    if not keys or not worth_a_look(state_dir, keys, now()):
        return 0
    from pathlib import Path

    from specialists.events.multi import OwnerSet
    from specialists.events.render import render_events

    fire_due(state_dir, keys, now())
    owners = OwnerSet(Path(state_dir), keys)
    with owners.taking(max_events=MAX_EVENTS, max_chars=MAX_CHARS, hide=_expired) as taken:
        for problem in taken.problems:
            log(event, problem)
        if taken.hidden:
            log(event, f"dropped {taken.hidden} notice(s) older than {NOTICE_TTL_S / 3600:g} h")
        if taken.events:
            text = render_events(taken.events)
            write(f"{text}\n\n{MORE}" if taken.more else text)
        taken.commit()
    return len(taken.events)


def fire_due(state_dir: str, keys: tuple[str, ...], now: float) -> None:
    """Fire each key's due timers and remember when the next one is due (see `_cache`)."""
    for key in keys:
        path = os.path.join(state_dir, OWNERS_DIR, key, "timers.jsonl")
        stamp = _stamp(path)  # before the fold: a change after it invalidates what we cache
        if stamp is None:
            continue
        from pathlib import Path

        from specialists.base.errors import SpecialistsError
        from specialists.events.timers import TimerStore

        try:
            store = TimerStore(Path(state_dir), key)
            store.fire_due(int(now * 1000))
            next_due = store.next_due_ms()
        except (OSError, SpecialistsError) as exc:  # a planted file: the other keys go on
            log("timers", f"timers of {key} not fired: {exc}")
            continue
        _write_cache(state_dir, key, stamp, next_due)


def _expired(event: Event) -> bool:
    return event.kind == "notice" and time.time() - event.ts_ms / 1000 > NOTICE_TTL_S


# --- the cheap look ---------------------------------------------------------------------------


def _has_pending(owner: str) -> bool:
    """As Inbox.has_pending: a whole line past the acknowledged offset."""
    try:
        fd = os.open(os.path.join(owner, INBOX_NAME), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        size = os.fstat(fd).st_size
        offset = _cursor_offset(owner)
        if offset > size:
            offset = 0  # emptied by compaction
        if size <= offset:
            return False
        head = os.pread(fd, min(size - offset, LINE_BYTES + 1), offset)
    finally:
        os.close(fd)
    return b"\n" in head or len(head) > LINE_BYTES


def _cursor_offset(owner: str) -> int:
    # damaged: the full look decides
    data = object_or_none(os.path.join(owner, "cursor.json"), CURSOR_BYTES)
    offset = data.get("offset") if data is not None else None
    return offset if isinstance(offset, int) and not isinstance(offset, bool) else 0


def _stamp(path: str) -> str | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return f"{st.st_ino}.{st.st_size}.{st.st_mtime_ns}"


def _cache_path(state_dir: str, key: str) -> str:
    return os.path.join(state_dir, HOOKS_DIR_NAME, f"{key}.timers")


def _timer_may_be_due(state_dir: str, owner: str, key: str, now: float) -> bool:
    """True unless the cache says the timers file is unchanged and nothing is due yet."""
    stamp = _stamp(os.path.join(owner, "timers.jsonl"))
    if stamp is None:
        return False
    try:
        cached_stamp, due = read_bytes(_cache_path(state_dir, key), 200).decode("ascii").split()
    except (OSError, StoreError, ValueError, UnicodeDecodeError):
        return True
    if cached_stamp != stamp:
        return True
    return due != "-" and (not due.isdigit() or int(due) <= now * 1000)


def _write_cache(state_dir: str, key: str, stamp: str, next_due_ms: int | None) -> None:
    line = f"{stamp} {'-' if next_due_ms is None else next_due_ms}\n"
    write_small(_cache_path(state_dir, key), line.encode(), "timers")
