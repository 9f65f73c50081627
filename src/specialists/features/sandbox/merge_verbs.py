"""The merge queue's ops (base/ops.py; merge_ops.py does the work): the agent tool
merge_queue (native, pi, a job's MCP server, and an orchestrating session's MCP server
through the agent tool table) and `specialists merge ...` are generated from these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from specialists.base.display import for_terminal
from specialists.base.errors import UserError
from specialists.base.ops import Noun, Op
from specialists.base.opschema import Cli, Text

if TYPE_CHECKING:
    from specialists.native.agent_tools import Caller

Refs = Annotated[list[Annotated[str, Text(200, 1)]] | None, Cli(metavar="REF")]
Parent = Annotated[str | None, Text(200)]
QueueId = Annotated[str, Text(40, 1), Cli(metavar="id")]


def _parent(caller: Caller, sandboxes: list[str] | None, parent: str | None) -> str | None:
    """The parent named; a model naming no sandboxes means its own children."""
    return caller.owner if not sandboxes and not parent and not caller.person else parent or None


def check(caller: Caller, sandboxes: Refs = None, /, *, parent: Parent = None) -> dict[str, Any]:
    """Changed files, overlaps and order; no change.

    Args:
        sandboxes: thread, job or sandbox ids
        parent: every sandbox child of this job, owner key or workflow
    """
    from specialists.features.sandbox import merge_ops as ops

    return ops.check(caller.state_root, list(sandboxes or ()), _parent(caller, sandboxes, parent))


def start(
    caller: Caller,
    sandboxes: Refs = None,
    /,
    *,
    parent: Parent = None,
    order: Literal["given", "auto", "fifo", "smallest"] | None = None,
    resolver: Annotated[str, Text(100)] = "resolver",
    no_resolver: Annotated[bool, Cli(only=True)] = False,
) -> dict[str, Any]:
    """Queue the sandboxes and merge them; prints its id.

    Args:
        sandboxes: thread, job or sandbox ids
        parent: every sandbox child of this job, owner key or workflow
        resolver: the specialist for conflicts
        no_resolver: leave conflicts as they are
    """
    from specialists.features.sandbox import merge_ops as ops

    queue = ops.start(
        caller.state_root, list(sandboxes or ()), _parent(caller, sandboxes, parent), order=order,
        resolver=None if no_resolver or resolver == "none" else resolver or "resolver",
        owner=next(iter(caller.keys), "") if caller.person else caller.owner,
        land=not caller.person,  # a model's lands in its sandboxes; a person's by `land`
    )  # fmt: skip
    return ops.view(queue)


def run(caller: Caller, queue_id: QueueId, /, *, retry: bool = False) -> dict[str, Any]:
    """One more pass (after a crash); --retry conflicts.

    Args:
        retry: requeue conflicts and failures
    """
    from specialists.features.sandbox import merge_ops as ops

    return ops.view(ops.advance(caller.state_root, queue_id, retry=retry))


def show(caller: Caller, queue_id: QueueId, /) -> dict[str, Any]:
    """One queue: members, overlaps, history."""
    from specialists.features.sandbox import merge_ops as ops
    from specialists.features.sandbox.queue import Queues

    queues = Queues(caller.state_root)
    data = ops.view(queues.load(queue_id))
    if caller.person:
        data["history"] = queues.history(queue_id)
    return data


def listing(caller: Caller) -> dict[str, Any]:
    """The project's merge queues."""
    from specialists.features.sandbox import merge_ops as ops
    from specialists.features.sandbox.queue import Queues

    queues, problems = Queues(caller.state_root).all()
    if caller.person:
        caller.warnings.extend(problems)
    return {"queues": [ops.view(q) for q in queues], "problems": problems}


def land(
    caller: Caller, queue_id: QueueId, /, *, confirm: Annotated[bool, Cli(hidden=True)] = False
) -> dict[str, Any]:
    """The merged result into its target (asks first)."""
    from specialists.features.sandbox import merge_ops as ops

    if confirm and caller.job_id is not None:
        raise UserError(
            "a job cannot confirm a merge into the user's working copy: nobody is there to ask",
            hint=f"the user can land it with `specialists merge land {queue_id}`",
        )
    queue, outcome = ops.land(caller.state_root, queue_id, confirmed=confirm)
    data = {"queue": ops.view(queue), "outcome": outcome.kind, "said": outcome.describe()}
    if outcome.kind == "squashed":
        return data
    if caller.person and not confirm and getattr(outcome, "reason", "") == "needs_confirmation":
        return {**data, "question": f"stage the merged work of queue {queue.id} in "
                f"{queue.target} (nothing is committed)?"}  # fmt: skip
    raise UserError(outcome.describe())


def cancel(caller: Caller, queue_id: QueueId, /) -> dict[str, Any]:
    """Stop it (resolvers stopped; branches kept)."""
    from specialists.features.sandbox import merge_ops as ops

    return ops.view(ops.cancel(caller.state_root, queue_id))


def _shown(text: object) -> str:
    """A child's file name or a problem naming one, safe to print on a terminal (a path may
    hold escape sequences or newlines)."""
    return for_terminal(str(text), keep_newlines=False)


def _paths(paths: list[str], limit: int) -> str:
    return ", ".join(_shown(p) for p in paths[:limit])


def describe_queue(data: dict[str, Any]) -> str:
    lines = [_shown(data["summary"])]
    for m in data["members"]:
        line = f"- {m['sandbox']} ({_shown(m['ref'])}): {m['state']}"
        if m.get("problem"):
            line += f": {_shown(m['problem'])}"
        if m.get("resolver") and m["state"] == "resolving":
            line += f" (resolver job {m['resolver'].get('job')})"
        lines.append(line)
    if data.get("overlaps"):
        lines.append("overlaps: " + "; ".join(
            f"{o['a']} & {o['b']}: {_paths(o['paths'], 5)}" for o in data["overlaps"][:10]
        ))  # fmt: skip
    return "\n".join(lines)


def check_text(found: dict[str, Any]) -> str:
    lines = [
        f"- {m['sandbox']} ({_shown(m['ref'])}): {m['state']}, {len(m['files'])} file(s), "
        f"{m['lines']} line(s)"
        for m in found["members"]
    ]
    if found["overlaps"]:
        lines += [
            f"overlap {o['a']} & {o['b']}: {_paths(o['paths'], 10)}" for o in found["overlaps"]
        ]
    else:
        lines.append("no overlapping files")
    lines.append("order: " + ", ".join(found["order"]))
    return "\n".join(lines)


def _listed(data: dict[str, Any]) -> str:
    return "\n".join(_shown(r["summary"]) for r in data["queues"]) or "no merge queues"


MERGE = Noun(
    "merge",
    "merge sibling sandboxes through a queue (overlaps, order)",
    (
        Op(check, "check", reads=True, text=check_text),
        Op(start, "start", text=describe_queue),
        Op(run, "run", text=describe_queue),
        Op(show, "show", reads=True, text=describe_queue),
        Op(listing, "list", reads=True, text=_listed),
        Op(land, "land", text=lambda data: data["said"]),
        Op(cancel, "cancel", text=describe_queue),
    ),
    tool="merge_queue",
    power="write",
    about=(
        "Merge sibling sandboxes (your children's, or those named) one at a time: action "
        "check lists each one's files and the overlaps; start queues them (sandboxes: ids, "
        "or parent; default your own children; order: given|auto|fifo|smallest) and returns "
        "at once: each lands all or nothing in the queue's own sandbox, overlapping ones are "
        "rebased as each lands, a conflict goes to a resolver job (resolver: a specialist, or "
        "none); you hear when it ends. show, list, run (again after a crash; retry: requeue "
        "conflicts), cancel. land puts the result in your sandbox, or stages it in the "
        "user's tree only with confirm: true after asking them. Do not poll."
    ),
)
