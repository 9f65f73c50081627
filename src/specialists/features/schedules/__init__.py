"""Schedules: durable records that start specialist runs on time (issue 12 item 2).

    triggers.py  at / every / cron in a zone -> the next slot after an instant
    cron.py      five-field cron, DST-correct in a named IANA zone
    decide.py    the pure catch-up decision for one schedule at one instant
    store.py     .specialists/schedules/<id>/: definition, state, history, events, receipts,
                 leases
    fire.py      firing what is due (run-due), once per slot; run-now
    ops.py       create, pause/resume, summaries
    verbs.py     the schedule ops: the command and the MCP tool `schedule`
    launch.py    what a firing starts: the target, planned, owned by the schedule
    loop.py      the long-running scheduler

See docs/schedules.md.
"""
