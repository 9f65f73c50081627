"""The MCP tools `wait` and acknowledged `steer` (supervise/: waiting.py, steering.py). The
table needs one line each."""

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
STEER_DESCRIPTION = (
    "Inject guidance into a running job's current turn (the agent reads it before its next "
    "step): use it when a specialist is heading the wrong way. Waits up to 3 s for the "
    "agent's acknowledgement; returns state delivered (acknowledged), scheduled (handed to "
    "the agent, not acknowledged yet) or pending (not picked up yet). children=true steers "
    "the job's running children instead (a workflow's, a parent's threads); job_ids adds "
    "more jobs: then each job's state and an overall one (delivered: all, partial: some, "
    "failed: none). recover=true (one top-level job only): a missed acknowledgement "
    "interrupts the job (a running tool call is cancelled) and resumes it with the message "
    "(state recovered). Refused when the job is not running or its runner cannot be steered "
    "(then use follow_up). Then keep working; do not poll."
)
STEER_ARGS = s.obj(
    {
        "job_id": s.JOB_ID,
        "message": s.MESSAGE_ARGS["properties"]["message"],
        "children": {"type": "boolean"},
        "job_ids": {"type": "array", "items": s.JOB_ID, "maxItems": 63},
        "recover": {"type": "boolean"},
    },
    ("job_id", "message"),
)
_ONE = {
    "type": "object",
    "properties": {"job_id": {"type": "string"}, "state": {"type": "string"}},
    "required": ["job_id", "state"],
}
STEERED = s.obj(
    {
        "job_id": {"type": "string"},
        "state": {
            "type": "string",
            "enum": ["delivered", "scheduled", "pending", "partial", "recovered"],
        },
        "each": {"type": "array", "items": _ONE},
        "note": {"type": "string"},
    },
    ("job_id", "state"),
)


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


def steer(ctx: h.ServerContext, args: dict[str, Any]) -> dict[str, Any]:
    from specialists.supervise.steer_recover import steer_recovering
    from specialists.supervise.steering import steer_job

    store = ctx.store()
    job_id = store.resolve(args["job_id"])
    more = [store.resolve(r) for r in args.get("job_ids") or []]
    if args.get("children") or more:
        if args.get("recover"):
            raise h.ToolFailed(
                "steer recover=true is for one top-level job, not several",
                hint="steer them without recover and act on each state",
            )
        return _steer_many(ctx, job_id, more, args)
    if args.get("recover"):
        outcome = steer_recovering(store, job_id, args["message"])
    else:
        outcome = steer_job(store, job_id, args["message"])
    if outcome.state == "failed":
        raise h.ToolFailed(
            f"steer {outcome.describe()}",
            hint=f"to continue a finished job, run with continue_from={job_id}",
            data={"job_id": job_id, "state": outcome.state},
        )
    out: dict[str, Any] = {"job_id": job_id, "state": outcome.state}
    if outcome.reason:
        out["note"] = outcome.reason
    return out


def _steer_many(
    ctx: h.ServerContext, job_id: str, more: list[str], args: dict[str, Any]
) -> dict[str, Any]:
    from specialists.supervise.steer_fanout import steer_children, steer_many

    store, message = ctx.store(), args["message"]
    if args.get("children"):
        if more:
            raise h.ToolFailed("steer: children=true takes one parent job; drop job_ids")
        outcome = steer_children(store, job_id, message)
    else:
        outcome = steer_many(store, [job_id, *more], message)
    each = [
        {"job_id": o.job_id, "state": o.state}
        | ({"request_id": o.request_id} if o.request_id else {})
        | ({"reason": o.reason} if o.reason else {})
        for o in outcome.each
    ]
    if outcome.state == "failed":
        raise h.ToolFailed(
            "steer " + outcome.describe().splitlines()[0],
            data={"job_id": job_id, "state": "failed", "each": each},
        )
    return {"job_id": job_id, "state": outcome.state, "each": each}
