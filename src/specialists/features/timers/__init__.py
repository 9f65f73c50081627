"""Durable timers: `sleep`, `sleep_until`, `timer_cancel` (seed 001 section 5.3, R-T1..R-T7).

A timer is a few records in its owner's directory (`.specialists/owners/<owner>/timers.jsonl`):
set, then fired or cancelled. Nothing runs in the background for it: whichever front next
looks at the owner (the supervisor of a waiting job, a Claude Code hook, the pi sidecar, the
MCP `events` tool, `specialists events`) fires what is due into the owner's inbox, so a
timer fires even when the process that set it is gone, and an overdue one fires at once with
"(late by N s)". Firing is idempotent: the event id is `<timer id>:timer:1`, so a crash
between the event and its fire record cannot wake the model twice.
"""
