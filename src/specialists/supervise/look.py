"""The `events` op (base/ops.py): what waits in an owner's inbox, after firing the owner's
due timers (a front that looks at an owner fires what is due, even when the owner's own
process is gone). Looking does not take: the owner's own front still delivers what is
shown, unless the person says it reached them (`delivered`, after it was printed).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any

from specialists.base.ops import Noun, Op
from specialists.base.opschema import Cli

if TYPE_CHECKING:
    from pathlib import Path

    from specialists.events.wake import WakeWatch
    from specialists.native.agent_tools import Caller


@cache
def _watch(state_root: Path, owner: str) -> WakeWatch:
    """One watch per owner for the process: `--follow` stats the timers, never re-parses them
    at every look (bench_wake)."""
    from specialists.events.wake import WakeWatch

    return WakeWatch(state_root, owner)


def events(
    caller: Caller,
    *,
    all: bool = False,
    since: Annotated[int | None, Cli(hidden=True)] = None,
    delivered: Annotated[Mapping[str, Any] | None, Cli(hidden=True)] = None,
) -> dict[str, Any]:
    """Show (or follow) the events waiting for an owner.

    Args:
        all: also the events already delivered
    """
    import time

    from specialists.events.inbox import Batch, Inbox
    from specialists.events.model import event_from_dict

    inbox = Inbox(caller.state_root, caller.owner)
    if delivered is not None:  # what a look returned reached the person: take it
        shown = (event_from_dict(e)[0] for e in delivered["events"])
        inbox.ack(Batch(tuple(e for e in shown if e is not None), delivered["end_offset"]))
        return {}
    _watch(caller.state_root, caller.owner).look(int(time.time() * 1000))
    batch = inbox.since(since or 0) if since is not None or all else inbox.pending()
    return {
        "owner": caller.owner, "events": [e.to_dict() for e in batch.events],
        "end_offset": batch.end_offset, "problems": list(batch.problems),
    }  # fmt: skip


EVENTS = Noun(
    "events",
    "show (or follow) the events waiting for an owner",
    (Op(events, tool=None, owner=True),),
)
