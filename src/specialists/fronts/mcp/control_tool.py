"""The MCP tool `wait` (supervise/waiting.py)."""

from __future__ import annotations

import threading
from typing import Any

from specialists.fronts.mcp import handlers as h
from specialists.fronts.mcp import schemas as s

MAX_WAIT_S = 300.0  # an MCP call blocks its client: bounded well below clients' tool timeouts

WAIT_DESCRIPTION = (
    "Wait for jobs to end: mode next (the first of them) or all (default), bounded by "
    "timeout_s (default 60, at most 300); job_ids defaults to your active jobs. Returns the "
    "ended jobs with their status and the ones still running. Use it when you have nothing "
    "else to do; otherwise pass subscribe=true: it returns at once and each job's completion "
    "event arrives in your inbox as a [specialists event] message. Do not poll in a loop."
)
WAIT_ARGS = s.obj(
    {
        "job_ids": {"type": "array", "items": s.JOB_ID, "maxItems": 64},
        "mode": {"type": "string", "enum": ["next", "all"]},
        "timeout_s": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_S},
        "subscribe": {"type": "boolean"},
    }
)
RESULT: dict[str, Any] = {"type": "object"}


def wait(ctx: h.ServerContext, args: dict[str, Any]) -> dict[str, Any]:
    from specialists.supervise.waiting import owned_active, subscribe, wait_for_jobs

    store = ctx.store()
    refs = args.get("job_ids") or []
    ids = [store.resolve(r) for r in refs] if refs else owned_active(store, ctx.keys())
    if not ids:
        return {"ended": [], "running": [], "timed_out": False, "note": "no active jobs"}
    if args.get("subscribe"):
        posted = [j for j in ids if subscribe(store, j, ctx.keys()[0])]
        return {"subscribed": ids, "already_ended": posted}
    stop = threading.Event()  # the server cancels a call by its own means; bounded anyway
    outcome = wait_for_jobs(
        store,
        ids,
        args.get("mode", "all"),
        float(args.get("timeout_s", 60.0)),
        cancelled=stop.is_set,
    )
    return {
        "ended": [
            {"job_id": st.id, "status": st.status, "error": st.error} for st in outcome.ended
        ],
        "running": list(outcome.running),
        "timed_out": outcome.timed_out,
        "waited_s": outcome.waited_s,
    }
