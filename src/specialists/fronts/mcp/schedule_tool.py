"""The MCP tool `schedule`: durable schedules of specialist runs for an orchestrating agent
(docs/schedules.md). The handler is schedules/actions.py; the table needs one line."""

from __future__ import annotations

from typing import Any

from specialists.fronts.mcp import handlers as h
from specialists.fronts.mcp import schemas as s

DESCRIPTION = (
    "Durable schedules of specialist runs, fired even when no session is open (by "
    "`specialists schedule run-due` from cron/systemd, or `specialists scheduler`). "
    "action create: exactly one trigger (at: '+30m' or an ISO time with offset; every: "
    "'6h'; cron: 5 fields with zone, an IANA name) and one target (specialist + prompt, or "
    "workflow: a declarative one; Python workflows are refused); catch_up latest|none; "
    "overlap is skip. Also list, show, history, pause, resume, run "
    "(once now), delete, run_due. Jobs a schedule starts are owned by the schedule. Only "
    "schedule work the user asked for. " + "Do not poll in a loop."
)
_LINE = s.text("text", max_length=256)
ARGS = s.obj(
    {
        "action": {
            "type": "string",
            "enum": [
                "create",
                "list",
                "show",
                "history",
                "pause",
                "resume",
                "run",
                "delete",
                "run_due",
            ],
        },
        "id": s.text("schedule id", max_length=48, min_length=1),
        "at": _LINE,
        "every": _LINE,
        "cron": _LINE,
        "zone": s.text("IANA time zone, e.g. Europe/Berlin", max_length=64),
        "specialist": s.text("the specialist to run", max_length=64, min_length=1),
        "workflow": _LINE,
        "prompt": s.text("the task", max_length=64 * 1024, one_line=False),
        "model": _LINE,
        "runner": _LINE,
        "cwd": s.text("working directory", max_length=4096),
        "timeout_s": {"type": "number", "minimum": 1, "maximum": 2_592_000},
        "catch_up": {"type": "string", "enum": ["latest", "none"]},
        "name": _LINE,
    },
    ("action",),
)
RESULT = {"type": "object"}


def schedule(ctx: h.ServerContext, args: dict[str, Any]) -> dict[str, Any]:
    from specialists.features.schedules.actions import schedule_action

    return schedule_action(ctx.project.store, args)
