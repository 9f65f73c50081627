"""The ask ops (seed 004 "Subagent + Intercom Coordination"; base/ops.py): the agent tools
contact_supervisor, list_asks and reply_to_ask, and `specialists asks` and `specialists reply`.

A child asks with contact_supervisor; its supervisor (a parent job, the session that started
it, a person at the CLI) sees one `ask` event, lists open asks and answers one. The caller's
identity comes from the records (its owner key and job), never from its word: a model sees
and answers only asks addressed to it; a person at a terminal oversees every ask of the
project.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from specialists.base.errors import UserError
from specialists.base.ops import Noun, Op
from specialists.base.opschema import Cli, Range, Text
from specialists.base.tuples import NamedTuple

if TYPE_CHECKING:
    from specialists.features.asks.ops import Asked, AskRow, Replied
    from specialists.native.agent_tools import Caller

Message = Annotated[str, Text(64 * 1024, line=False)]  # the byte cap is the room's
# Asks in one answer to a model, the newest (its context is precious: each message may be
# 64 KiB); a person at the CLI sees them all.
MAX_LISTED = 20


Reason = Literal["need_decision", "interview_request", "progress_update"]  # model.ASK_KINDS


def contact_supervisor(
    caller: Caller,
    *,
    message: Message,
    reason: Reason | None = None,
    kind: Reason | None = None,
    timeout_s: Annotated[float | None, Range(1, 3600)] = None,
) -> Asked:
    """Ask whoever supervises you (the parent job or session that started you). reason (or
    kind) need_decision: you are blocked on a choice (scope, API, approval) and must not
    guess; interview_request: you need structured input. Both wait for the reply, up to
    timeout_s (default 300, at most 3600), then return it, or 'no reply in N s': then go on
    with your best judgement and say what you decided. progress_update: a meaningful
    discovery or checkpoint; it does not wait. Keep messages concise (at most 64 KiB). Not
    for routine completion: your final answer reaches your supervisor anyway."""
    from specialists.features.asks.model import DEFAULT_TIMEOUT_S
    from specialists.features.asks.ops import ask

    if (reason is None) == (kind is None):  # `reason` is seed 004's name, `kind` ours
        raise UserError(
            "give the ask's reason (or kind) once: "
            + ("both were given" if reason is not None else "neither was given"),
            hint="reason: need_decision, interview_request or progress_update",
        )
    chosen = reason if reason is not None else kind
    assert chosen is not None
    if not message.strip():
        raise UserError("argument 'message' must be a non-empty string")
    if caller.job_id is None:
        raise UserError(
            "contact_supervisor is for jobs: you are not one, so nobody supervises you",
            hint="ask the user directly",
        )
    return ask(
        caller.state_root, caller.job_id, chosen, message,
        timeout_s=DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s,
        call_id=caller.call_id, cancelled=caller.cancelled, cancel_why=caller.cancel_why,
    )  # fmt: skip


class Asks(NamedTuple):
    rows: list[AskRow]
    problems: list[str]
    settled: bool  # answered, timed-out and progress asks were asked for too
    more: int = 0  # older asks left out (MAX_LISTED)

    def to_dict(self) -> dict[str, Any]:
        asks = []
        for r in self.rows:
            out = r.ask.to_dict() | {"ask_id": r.ask.id, "state": r.state}
            if r.outcome is not None:
                out["outcome"] = r.outcome.to_dict()
            asks.append(out)
        data: dict[str, Any] = {"asks": asks, "problems": self.problems[:5]}
        if self.more:
            data["more"] = self.more
        return data


def listing(
    caller: Caller,
    *,
    all: bool = False,
    owner: Annotated[str | None, Cli(metavar="KEY", only=True)] = None,
) -> Asks:
    """The open asks addressed to you: questions from jobs you started (contact_supervisor),
    each with its ask id, kind and message. all=true lists answered, timed-out and progress
    asks too. Asks arrive as [specialists event] messages by themselves: call this to
    review, not in a loop.

    Args:
        all: also answered, timed-out and progress asks
        owner: only asks addressed to this owner key
    """
    from specialists.events.owners import check_owner
    from specialists.features.asks.ops import list_asks

    if caller.person:
        owners = None if owner is None else (check_owner(owner.strip()),)
    else:
        owners = (caller.owner,)
    rows, problems = list_asks(caller.state_root, owners, include_settled=all)
    more = 0
    if not caller.person and len(rows) > MAX_LISTED:
        more = len(rows) - MAX_LISTED
        rows = rows[-MAX_LISTED:]
    caller.warnings.extend(problems if caller.person else problems[:5])
    return Asks(rows, problems, all, more)


def said_asks(asks: Asks) -> str:
    from specialists.features.asks.render import ask_lines

    if not asks.rows:
        return "No asks for you." if asks.settled else "No open asks for you."
    shown = "\n\n".join(ask_lines(r, full=True) for r in asks.rows)
    if asks.more:
        shown = f"({asks.more:,} older asks not shown; these are the newest)\n\n" + shown
    return shown


def reply(
    caller: Caller,
    ask_id: Annotated[str, Text(64, 1), Cli(metavar="ASK")],
    answer: Annotated[Message, Cli(words=True)],
    /,
) -> Replied:
    """Answer an open ask of a job you started: the waiting job gets `answer` as the result
    of its contact_supervisor call and goes on. Each ask takes one reply; a reply to an ask
    that timed out, was answered or is unknown is an error (then use follow_up or steer).
    At most 64 KiB.

    Args:
        ask_id: the ask id (ask-<job>-<n>)
        answer: the answer
    """
    from specialists.base.owner import person_key
    from specialists.features.asks.ops import reply as answer_ask

    if not answer.strip():
        raise UserError("argument 'answer' must be a non-empty string")
    if caller.person:  # a person at the CLI may answer any open ask of the project
        return answer_ask(caller.state_root, ask_id, answer, by=person_key(), owners=None)
    owners = (caller.owner,)
    return answer_ask(caller.state_root, ask_id, answer, by=caller.owner, owners=owners)


def _said(result: Asked | Replied) -> str:
    return result.describe()


ASKS = Noun(
    "asks",
    "questions jobs asked their supervisor (contact_supervisor)",
    (
        Op(contact_supervisor, tool="contact_supervisor", cli=False,
           power="", scope="job", text=_said,
           guidance="contact_supervisor: ask your supervisor when blocked on a decision instead "
           "of guessing; progress_update for meaningful checkpoints."),
        Op(listing, tool="list_asks", power="", text=said_asks, reads=True),
    ),
)  # fmt: skip
REPLY = Noun(
    "reply",
    "answer an open ask of a job",
    (
        Op(reply, tool="reply_to_ask", power="", text=_said,
           guidance="reply_to_ask: answer a child's ask (an `ask` event) promptly; it is waiting."),
    ),
)  # fmt: skip
