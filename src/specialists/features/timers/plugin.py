"""What timers add: the agent tools sleep, sleep_until, sleep_until_event and timer_cancel
(the timers themselves live with the inboxes they fire into: events/timers.py)."""

from __future__ import annotations

from specialists.native.agent_table import register_tools


def register() -> None:
    register_tools("specialists.features.timers.tools:TIMER_TOOLS")
