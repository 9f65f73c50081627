"""The one text format the model reads for an event (seed 001 section 4, tested).

    [specialists event] <kind> from <tool> (<call id>)
    original_args: <one line JSON, max 300 chars>
    ---
    <body>

Every front (native loop, Claude Code hooks, pi extension, MCP, CLI) shows exactly this.
"""

from __future__ import annotations

from collections.abc import Iterable

from specialists.events.model import Event, one_line_args

HEADER = "[specialists event]"


def render_event(event: Event) -> str:
    call = event.source.call_id or event.id
    return (
        f"{HEADER} {event.kind} from {event.source.tool} ({call})\n"
        f"original_args: {one_line_args(event.source.args)}\n"
        "---\n"
        f"{event.body}"
    )


def render_events(events: Iterable[Event]) -> str:
    """Several events as one message, blank-line separated, in inbox order."""
    return "\n\n".join(render_event(e) for e in events)
