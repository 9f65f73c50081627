"""contact_supervisor, list_asks and reply_to_ask (seed 004 "Subagent + Intercom
Coordination") on the asks room.

A child asks with contact_supervisor; its supervisor (a parent job, the session that started
it, a person at the CLI) sees one `ask` event, lists open asks with list_asks and answers
with reply_to_ask. The caller's identity comes from the records (its owner key and job),
never from its word.
"""

from __future__ import annotations

from typing import Any, cast

from specialists.base.errors import UserError
from specialists.native.agent_tools import (
    AgentTool,
    Reply,
    ToolCall,
    arg_bool,
    arg_number,
    arg_str,
    check_known,
)

_KINDS = ("need_decision", "interview_request", "progress_update")  # asks/model.py ASK_KINDS
_MAX_CHARS = 64 * 1024  # characters; the byte cap (64 KiB as UTF-8) is checked by the room


def contact_supervisor(call: ToolCall) -> Reply:
    from specialists.features.asks.model import (
        ASK_KINDS,
        DEFAULT_TIMEOUT_S,
        MAX_TIMEOUT_S,
        MIN_TIMEOUT_S,
        AskKind,
    )
    from specialists.features.asks.ops import ask

    a = call.args
    check_known(a, {"kind", "reason", "message", "timeout_s"})
    # `reason` is seed 004's name for it; `kind` is ours. Either, not both.
    if ("kind" in a) == ("reason" in a):
        raise UserError(
            "give the ask's reason (or kind) once: "
            + ("both were given" if "kind" in a else "neither was given"),
            hint="reason: one of " + ", ".join(ASK_KINDS),
        )
    field = "reason" if "reason" in a else "kind"
    kind = arg_str(a, field, max_len=40)
    if kind not in ASK_KINDS:
        raise UserError(f"argument {field!r} must be one of {', '.join(ASK_KINDS)}; got {kind!r}")
    message = arg_str(a, "message", max_len=_MAX_CHARS)
    timeout = arg_number(a, "timeout_s", low=MIN_TIMEOUT_S, high=MAX_TIMEOUT_S, required=False)
    c = call.caller
    if c.job_id is None:
        raise UserError(
            "contact_supervisor is for jobs: you are not one, so nobody supervises you",
            hint="ask the user directly",
        )
    asked = ask(
        c.state_root,
        c.job_id,
        cast("AskKind", kind),
        message,
        timeout_s=DEFAULT_TIMEOUT_S if timeout is None else timeout,
        call_id=call.call_id,
        cancelled=c.cancelled,
        cancel_why=c.cancel_why,
    )
    data: dict[str, Any] = {"ask_id": asked.ask.id}
    if asked.outcome is not None:
        data["outcome"] = asked.outcome.kind
        if asked.outcome.kind == "reply":
            data["answer"] = asked.outcome.answer
    return Reply(asked.describe(), data)


def list_asks(call: ToolCall) -> Reply:
    from specialists.features.asks.ops import list_asks as rows_of
    from specialists.features.asks.render import ask_lines

    check_known(call.args, {"all"})
    include = arg_bool(call.args, "all") if call.args.get("all") is not None else False
    rows, problems = rows_of(call.caller.state_root, (call.caller.owner,), include_settled=include)
    data = {
        "asks": [
            {"ask_id": r.ask.id, "job_id": r.ask.job_id, "kind": r.ask.kind, "state": r.state}
            for r in rows
        ],
        "problems": problems[:5],
    }
    if not rows:
        return Reply("No open asks for you." if not include else "No asks for you.", data)
    return Reply("\n\n".join(ask_lines(r, full=True) for r in rows), data)


def reply_to_ask(call: ToolCall) -> Reply:
    from specialists.features.asks.ops import reply

    check_known(call.args, {"ask_id", "answer"})
    c = call.caller
    done = reply(
        c.state_root,
        arg_str(call.args, "ask_id", max_len=64),
        arg_str(call.args, "answer", max_len=_MAX_CHARS),
        by=c.owner,
        owners=(c.owner,),
    )
    return Reply(done.describe(), {"ask_id": done.ask.id, "job_id": done.ask.job_id})


_CONTACT = (
    "Ask whoever supervises you (the parent job or session that started you). reason "
    "(or kind) need_decision: you are blocked on a choice (scope, API, approval) and must "
    "not guess; "
    "interview_request: you need structured input. Both wait for the reply, up to timeout_s "
    "(default 300, at most 3600), then return it, or 'no reply in N s': then go on with your "
    "best judgement and say what you decided. progress_update: a meaningful discovery "
    "or checkpoint; it does not wait. Keep messages concise (at most 64 KiB). Not for "
    "routine completion: your final answer reaches your supervisor anyway."
)
_LIST = (
    "The open asks addressed to you: questions from jobs you started (contact_supervisor), "
    "each with its ask id, kind and message. all=true lists answered, timed-out and progress "
    "asks too. Asks arrive as [specialists event] messages by themselves: call this to "
    "review, not in a loop."
)
_REPLY = (
    "Answer an open ask of a job you started: the waiting job gets `answer` as the result of "
    "its contact_supervisor call and goes on. Each ask takes one reply; a reply to an ask "
    "that timed out, was answered or is unknown is an error (then use follow_up or steer). "
    "At most 64 KiB."
)

ASK_TOOLS: tuple[AgentTool, ...] = (
    AgentTool(
        "contact_supervisor",
        _CONTACT,
        {
            "type": "object",
            "properties": {
                "reason": {"type": "string", "enum": list(_KINDS)},
                "kind": {"type": "string", "enum": list(_KINDS), "description": "= reason"},
                "message": {"type": "string"},
                "timeout_s": {"type": "number", "minimum": 1, "maximum": 3600},
            },
            "required": ["message"],
            "additionalProperties": False,
        },
        contact_supervisor,
        guidance=(
            "contact_supervisor: ask your supervisor when blocked on a decision instead of "
            "guessing; progress_update for meaningful checkpoints."
        ),
        scope="job",
    ),
    AgentTool(
        "list_asks",
        _LIST,
        {
            "type": "object",
            "properties": {"all": {"type": "boolean"}},
            "additionalProperties": False,
        },
        list_asks,
    ),
    AgentTool(
        "reply_to_ask",
        _REPLY,
        {
            "type": "object",
            "properties": {"ask_id": {"type": "string"}, "answer": {"type": "string"}},
            "required": ["ask_id", "answer"],
            "additionalProperties": False,
        },
        reply_to_ask,
        guidance="reply_to_ask: answer a child's ask (an `ask` event) promptly; it is waiting.",
    ),
)
