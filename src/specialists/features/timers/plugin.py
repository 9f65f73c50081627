"""What timers add: the `timer` noun, its command and the agent tools sleep, sleep_until,
sleep_until_event and timer_cancel (the timers themselves live with the inboxes they fire
into: events/timers.py)."""

from __future__ import annotations

from specialists.base.ops import register_noun
from specialists.native.agent_table import register_tools


def register() -> None:
    register_noun("timer", "specialists.features.timers.verbs:TIMER")
    register_tools("specialists.features.timers.verbs:TIMER")
