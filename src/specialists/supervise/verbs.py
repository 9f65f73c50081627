"""The job-control ops (base/ops.py): `specialists steer|follow-up|stop|interrupt|children`
and the MCP tools of the same names, generated from these. A person at a terminal names any
job or parent; a model's parent is itself (its owner key). A person's answer carries `text`,
the lines the command prints; a refusal's hint names the command line or the tool argument.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, TypedDict

from specialists.base.errors import Failed, UserError
from specialists.base.ops import Noun, Op
from specialists.base.opschema import Cli, Many, Range, Text
from specialists.base.tuples import NamedTuple
from specialists.supervise.retained import DEFAULT_LAST, MAX_LAST

if TYPE_CHECKING:
    from specialists.native.agent_tools import Caller
    from specialists.supervise.retained import ChildRow

JobRef = Annotated[str, Text(64, 1), Cli(metavar="JOB")]
Message = Annotated[str, Text(200_000, 1, line=False), Cli(words=True, metavar="MESSAGE")]
NoWait = Annotated[bool, Cli(person=True)]


class MessageSent(TypedDict):
    job_id: str
    state: Literal["delivered", "scheduled", "queued", "pending"]


class Each(TypedDict):
    job_id: str
    state: str  # and its request_id, reason when it has them


class _Steered(TypedDict):
    job_id: str
    state: Literal["delivered", "scheduled", "pending", "partial", "recovered"]


class Steered(_Steered, total=False):
    each: list[Each]
    note: str


class Stopped(TypedDict):
    job_id: str
    status: Literal["starting", "running", "waiting", "done", "error", "cancelled"]
    stopped: bool


def steer(
    caller: Caller,
    job_id: JobRef,
    message: Message,
    /,
    *,
    children: bool = False,
    job_ids: Annotated[list[JobRef] | None, Many(63), Cli(hidden=True)] = None,
    recover: bool = False,
    no_wait: NoWait = False,
) -> Steered:
    """Inject guidance into a running job's current turn (the agent reads it before its
    next step): use it when a specialist is heading the wrong way. Waits up to 3 s for the
    agent's acknowledgement; returns state delivered (acknowledged), scheduled (handed to
    the agent, not acknowledged yet) or pending (not picked up yet). children=true steers
    the job's running children instead (a workflow's, a parent's threads); job_ids adds
    more jobs: then each job's state and an overall one (delivered: all, partial: some,
    failed: none). recover=true (one top-level job only): a missed acknowledgement
    interrupts the job (a running tool call is cancelled) and resumes it with the message
    (state recovered). Refused when the job is not running or its runner cannot be steered
    (then use follow_up). Then keep working; do not poll.

    Args:
        job_id: job id (8 hex characters) or a unique prefix
        message: the message
        children: steer the job's running children (a workflow's, a parent's threads)
        job_ids: more jobs to steer (a command line names them as JOB,JOB,...)
        recover: a missed acknowledgement interrupts the job and resumes it with the
            message (top-level jobs only; it cancels a tool call in progress)
        no_wait: do not wait for delivery
    """
    from specialists.supervise.steer_recover import steer_recovering
    from specialists.supervise.steering import steer_job

    if children or job_ids:
        if recover:
            raise UserError(
                f"steer {_flag(caller, 'recover')} is for one top-level job, not several",
                hint=f"steer them without {_flag(caller, 'recover').partition('=')[0]} and "
                "act on each state",
            )
        if no_wait:
            raise UserError("--no-wait steers one job; a multi-job steer waits for each state")
        return _steer_many(caller, job_id, job_ids or [], message, children=children)
    store = caller.jobs()
    job = store.resolve(job_id)
    if no_wait:
        if recover:
            raise UserError("--recover waits for the acknowledgement; drop --no-wait")
        return _send(caller, job, "steer", message, wait=False)  # type: ignore[return-value]
    outcome = (steer_recovering if recover else steer_job)(store, job, message)
    if outcome.state == "failed":
        raise Failed(
            f"steer {outcome.describe()}", hint=_hint(caller, job, outcome.request_id),
            data={"job_id": job, "state": outcome.state},
        )  # fmt: skip
    out: Steered = {"job_id": job, "state": outcome.state}
    if outcome.reason:
        out["note"] = outcome.reason
    return _said(caller, out, outcome.describe())


def _steer_many(
    caller: Caller, job_id: str, more: list[str], message: str, *, children: bool
) -> Steered:
    from specialists.supervise.steer_fanout import running_children, steer_many

    store = caller.jobs()
    job, others = store.resolve(job_id), [store.resolve(r) for r in more]
    if children and others:
        raise UserError(
            f"steer: {_flag(caller, 'children')} takes one parent job",
            hint="steer <parent> --children ..." if caller.person else "drop job_ids",
        )
    if children:
        outcome = steer_many(store, running_children(store, job), message, target=job)
    else:
        outcome = steer_many(store, [job, *others], message)
    each: list[Any] = [
        {"job_id": o.job_id, "state": o.state}
        | ({"request_id": o.request_id} if o.request_id else {})
        | ({"reason": o.reason} if o.reason else {})
        for o in outcome.each
    ]
    lines = outcome.describe().splitlines()
    if outcome.state == "failed":
        said = "; ".join(line.strip() for line in lines) if caller.person else lines[0]
        raise Failed(
            f"steer {said}", hint="see: specialists feed --job <id>" if caller.person else None,
            data={"job_id": job, "state": "failed", "each": each},
        )  # fmt: skip
    return _said(caller, {"job_id": job, "state": outcome.state, "each": each}, "\n".join(lines))


def follow_up(
    caller: Caller, job_id: JobRef, message: Message, /, *, no_wait: NoWait = False
) -> MessageSent:
    """Send another message to a live job: delivered when its current run ends, or at once
    to a job that is waiting (keep-alive specialists answer, then wait). The new answer
    arrives like the first: keep working and call result when its end is announced. Do not
    poll in a loop. To continue a job that already finished, use run with continue_from.

    Args:
        job_id: job id (8 hex characters) or a unique prefix
        message: the message
        no_wait: do not wait for delivery
    """
    return _send(caller, caller.jobs().resolve(job_id), "follow_up", message, wait=not no_wait)


def _send(
    caller: Caller, job: str, kind: Literal["steer", "follow_up"], message: str, *, wait: bool
) -> MessageSent:
    from specialists.base.display import display_line
    from specialists.supervise.actions import send_message

    outcome = send_message(caller.jobs(), job, kind, message, wait=wait)
    what = kind.replace("_", "-") if caller.person else kind
    if outcome.state == "refused":
        raise Failed(
            f"{what} refused: {display_line(outcome.reason or 'refused', 300)}",
            hint=_hint(caller, job, outcome.request_id),
            data={"job_id": job, "state": outcome.state},
        )
    out: MessageSent = {"job_id": job, "state": outcome.state}
    if outcome.state == "pending":
        text = f"pending: job {job} has not picked up request {outcome.request_id} yet"
    elif outcome.state == "queued":
        text = f"queued until the current run ends: {what} to job {job}"
    else:
        text = f"delivered: {what} to job {job}"
    return _said(caller, out, text)


def stop(caller: Caller, job_id: JobRef, /) -> Stopped:
    """Stop a job: graceful abort, then terminate; it ends as cancelled. A job that already
    finished is left as it is. Returns its final status.

    Args:
        job_id: job id (8 hex characters) or a unique prefix
    """
    from specialists.supervise.actions import stop_job

    store = caller.jobs()
    outcome = stop_job(store, store.resolve(job_id))
    job, status = outcome.job_id, outcome.status.status
    if outcome.kind == "still_running":
        raise Failed(
            outcome.describe(),
            hint=f"see: specialists status --job {job}" if caller.person else None,
            data={"job_id": job, "status": status},
        )
    out = {"job_id": job, "status": status, "stopped": outcome.stopped}
    return _said(caller, out, outcome.describe())


def _flag(caller: Caller, name: str) -> str:
    """How the caller names an option: `--recover` on a command line, `recover=true` in a tool."""
    return f"--{name}" if caller.person else f"{name}=true"


def _hint(caller: Caller, job: str, request_id: str | None) -> str:
    if not caller.person:
        return f"to continue a finished job, run with continue_from={job}"
    if request_id is None:  # the job had already ended
        return f"continue it with: specialists resume {job} --prompt ..."
    return f"see: specialists feed --job {job}"


def _said(caller: Caller, out: Any, text: str) -> Any:
    """`out`, with the lines a person reads (a model's answer stays the data alone)."""
    return {**out, "text": text} if caller.person else out


def interrupt(caller: Caller, job_id: JobRef, /) -> dict[str, Any]:
    """Soft interrupt: cancel a job's current turn; the job pauses (status waiting) and is
    resumable with follow_up (or `specialists resume`). Not a failure and not a success:
    decide the next step (follow_up with clearer instructions, or stop, which is final).
    Refused for command jobs, which cannot pause. Returns state paused, interrupting,
    already_paused or pending.

    Args:
        job_id: job id (8 hex characters) or a unique prefix
    """
    from specialists.supervise.steering import interrupt_job

    store = caller.jobs()
    job = store.resolve(job_id)
    outcome = interrupt_job(store, job)
    if not outcome.ok:
        raise Failed(
            outcome.describe(), hint=f"see: specialists feed --job {job}",
            data={"job_id": job, "state": outcome.state},
        )  # fmt: skip
    return {"job_id": job, "state": outcome.state, "text": outcome.describe()}


class EndedChildren(NamedTuple):
    parent: str
    rows: list[ChildRow]
    problems: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"children": [r.to_dict() for r in self.rows], "problems": self.problems[:5]}


def children(
    caller: Caller,
    parent: Annotated[str | None, Text(128), Cli(only=True)] = None,
    /,
    *,
    last: Annotated[int, Range(1, MAX_LAST)] = DEFAULT_LAST,
) -> EndedChildren:
    """Your last ended child jobs (at most `last`, default 10), each resumable or not
    resumable with the reason (stopped, no session, session gone, being resumed by another
    job). Resume only rows reported resumable (run with continue_from); otherwise start a
    fresh job.

    Args:
        parent: job id or owner key (default: this session)
        last: how many
    """
    from specialists.events.owners import check_owner
    from specialists.store.ids import is_job_id
    from specialists.supervise.retained import retained_children

    store = caller.jobs()
    if parent is None:
        whose = caller.owners[0]
    elif "-" in parent and not is_job_id(parent):
        whose = check_owner(parent.strip())  # an owner key
    else:
        whose = f"job-{store.resolve(parent)}"
    rows, problems = retained_children(store, whose, last)
    caller.warnings.extend(problems)
    return EndedChildren(whose, rows, problems)


STEER = Noun("steer", "inject guidance into a running job", (Op(steer, tool="steer", core=True),))
FOLLOW_UP = Noun(
    "follow-up",
    "send another message to a running or waiting job",
    (Op(follow_up, tool="follow_up", core=True),),
)
STOP = Noun("stop", "stop a job", (Op(stop, tool="stop", core=True),))
INTERRUPT = Noun(
    "interrupt",
    "cancel a job's current turn; the job pauses (resumable)",
    (Op(interrupt, tool="interrupt"),),
)
CHILDREN = Noun(
    "children",
    "a parent's last ended jobs, resumable or not, and why",
    (Op(children, tool="children", reads=True),),
)
