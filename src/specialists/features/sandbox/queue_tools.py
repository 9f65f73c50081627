"""merge_queue: the merge queue as an agent tool (native, pi, a job's MCP server) and, through
the agent tool table, as an MCP tool for an orchestrating session (merge_ops.py does the work).
"""

from __future__ import annotations

from typing import Any

from specialists.base.errors import UserError
from specialists.native.agent_tools import (
    AgentTool,
    Reply,
    ToolCall,
    arg_bool,
    arg_str,
    check_known,
)

ACTIONS = ("check", "start", "run", "show", "list", "land", "cancel")


def _refs(call: ToolCall) -> list[str]:
    raw = call.args.get("sandboxes", [])
    if not isinstance(raw, list) or not all(isinstance(r, str) and r for r in raw):
        raise UserError("sandboxes must be a list of thread, job or sandbox ids")
    return list(raw)


def describe_queue(data: dict[str, Any]) -> str:
    lines = [str(data["summary"])]
    for m in data["members"]:
        line = f"- {m['sandbox']} ({m['ref']}): {m['state']}"
        if m.get("problem"):
            line += f": {m['problem']}"
        if m.get("resolver") and m["state"] == "resolving":
            line += f" (resolver job {m['resolver'].get('job')})"
        lines.append(line)
    if data.get("overlaps"):
        lines.append("overlaps: " + "; ".join(
            f"{o['a']} & {o['b']}: {', '.join(o['paths'][:5])}" for o in data["overlaps"][:10]
        ))  # fmt: skip
    return "\n".join(lines)


def merge_queue(call: ToolCall) -> Reply:
    from specialists.features.sandbox import merge_ops as ops
    from specialists.features.sandbox.queue import Queues

    check_known(
        call.args,
        {"action", "sandboxes", "parent", "order", "resolver", "queue_id", "confirm", "retry"},
    )
    action = arg_str(call.args, "action", max_len=16)
    if action not in ACTIONS:
        raise UserError(f"unknown action {action!r}", hint="one of: " + ", ".join(ACTIONS))
    c = call.caller
    root = c.state_root
    if action in ("check", "start"):
        refs = _refs(call)
        parent = arg_str(call.args, "parent", required=False, max_len=200) or None
        if not refs and parent is None:
            parent = c.owner  # your own children
        if action == "check":
            found = ops.check(root, refs, parent)
            return Reply(check_text(found), found)
        resolver = arg_str(call.args, "resolver", required=False, max_len=100) or "resolver"
        queue = ops.start(
            root,
            refs,
            parent,
            order=arg_str(call.args, "order", required=False, max_len=16) or None,
            resolver=None if resolver == "none" else resolver,
            owner=c.owner,
            land=True,  # into your sandbox, if you have one; your user's tree only by land
        )
        return _queue_reply(ops.view(queue))
    if action == "list":
        queues, problems = Queues(root).all()
        rows = [ops.view(q) for q in queues]
        text = "\n".join(r["summary"] for r in rows) or "no merge queues"
        return Reply(text, {"queues": rows, "problems": problems})
    queue_id = arg_str(call.args, "queue_id", max_len=40)
    if action == "show":
        return _queue_reply(ops.view(Queues(root).load(queue_id)))
    if action == "run":
        return _queue_reply(
            ops.view(ops.advance(root, queue_id, retry=arg_bool(call.args, "retry")))
        )
    if action == "cancel":
        return _queue_reply(ops.view(ops.cancel(root, queue_id)))
    confirm = arg_bool(call.args, "confirm")
    if confirm and c.job_id is not None:
        raise UserError(
            "a job cannot confirm a merge into the user's working copy: nobody is there to ask",
            hint=f"the user can land it with `specialists merge land {queue_id}`",
        )
    queue, outcome = ops.land(root, queue_id, confirmed=confirm)
    data = {"queue": ops.view(queue), "outcome": outcome.kind}
    if outcome.kind == "squashed":
        return Reply(outcome.describe(), data)
    return Reply(f"error: {outcome.describe()}", data, is_error=True)


def _queue_reply(data: dict[str, Any]) -> Reply:
    return Reply(describe_queue(data), data)


def check_text(found: dict[str, Any]) -> str:
    lines = [
        f"- {m['sandbox']} ({m['ref']}): {m['state']}, {len(m['files'])} file(s), "
        f"{m['lines']} line(s)"
        for m in found["members"]
    ]
    if found["overlaps"]:
        lines += [
            f"overlap {o['a']} & {o['b']}: {', '.join(o['paths'][:10])}" for o in found["overlaps"]
        ]
    else:
        lines.append("no overlapping files")
    lines.append("order: " + ", ".join(found["order"]))
    return "\n".join(lines)


QUEUE_TOOLS = (
    AgentTool(
        "merge_queue",
        "Merge sibling sandboxes (your children's, or those named) one at a time: action "
        "check lists each one's files and the overlaps; start queues them (sandboxes: ids, "
        "or parent; default your own children; order: given|auto|fifo|smallest) and returns "
        "at once: each lands all or nothing in the queue's own sandbox, overlapping ones are "
        "rebased as each lands, a conflict goes to a resolver job (resolver: a specialist, or "
        "none); you hear when it ends. show, list, run (again after a crash; retry: requeue "
        "conflicts), cancel. land puts the result in your sandbox, or stages it in the "
        "user's tree only with confirm: true after asking them. Do not poll.",
        {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": list(ACTIONS)},
                "sandboxes": {"type": "array", "items": {"type": "string"}},
                "parent": {"type": "string"},
                "order": {"type": "string", "enum": ["given", "auto", "fifo", "smallest"]},
                "resolver": {"type": "string"},
                "queue_id": {"type": "string"},
                "confirm": {"type": "boolean"},
                "retry": {"type": "boolean"},
            },
            "required": ["action"],
            "additionalProperties": False,
        },
        merge_queue,
    ),
)
