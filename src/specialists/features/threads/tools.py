"""spawn_thread, report_to_parent, close_thread, send_message_to_child, squash_sandbox and
assess_coverage (seed 001 sections 1.4, 5.5, 5.6): the threads room's agent tools, as ops of
the `threads` noun: no command (`cli` off), and no MCP op (a `power`: the agent table's).

Every op reads the caller's real position from the records (never from the caller's word).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, ParamSpec, TypedDict, TypeVar

from specialists.base.errors import Failed, UserError
from specialists.base.ops import Op
from specialists.base.opschema import Many, Text
from specialists.features.threads.reports import MAX_REPORT_CHARS

if TYPE_CHECKING:
    from specialists.native.agent_tools import Caller

Prose = Annotated[str, Text(MAX_REPORT_CHARS, line=False)]  # instructions, messages, reports
Ids = Annotated[list[Annotated[str, Text(min=1)]], Many(64)]
Name = Annotated[str, Text(200)]
ThreadId = Annotated[str, Text(64, min=1)]
P = ParamSpec("P")
R = TypeVar("R")


class AssignedRange(TypedDict):
    """Lines given to a child: inclusive, 1-based."""

    source: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class ToolAnswer:
    """What the model reads (`text`) and the data beside it."""

    text: str
    data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return self.data


def _store_errors(op: Callable[P, R]) -> Callable[P, R]:
    """A file the threads room could not write (a full disk, a damaged directory) is one
    clear error for the model, never a traceback through the front."""

    @functools.wraps(op)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return op(*args, **kwargs)
        except OSError as exc:
            from specialists.store.files import unwritten

            raise unwritten(op.__name__, exc) from None

    return run


def _filled(value: str, name: str) -> str:
    if not value.strip():  # the schema lets "  " through: blank text is the op's to refuse
        raise UserError(f"argument {name!r} must be a non-empty string")
    return value


def _now_ms(caller: Caller) -> int:
    return int(caller.clock() * 1000)


def _backend(caller: Caller) -> Any:
    from specialists.features.threads.sandboxing import backend_for

    return backend_for(caller.state_root.parent)


def _position(caller: Caller) -> Any:
    from specialists.features.threads.state import position_of

    return position_of(caller.state_root, caller.owner, caller.job_id)


@_store_errors
def spawn_thread(
    caller: Caller,
    *,
    instructions: Prose,
    child_of: Ids,
    fresh_context: bool = False,
    model: Name | None = None,
    runner: Name | None = None,
    specialist: Name | None = None,
    sandbox: bool = False,
    depends_on: Ids | None = None,
) -> ToolAnswer:
    """Start a child thread (a job of its own) on a bounded part of your task; returns its id
    at once. child_of must be your own stack (root alone in the main session). Reports
    arrive as child_report events, its end as one child_closed. fresh_context: true gives
    the child only your instructions: prefer it for independent work, and make them
    self-contained. sandbox: true runs it in its own git worktree; merge with
    squash_sandbox. depends_on: direct children that must have closed successfully. For
    large inputs: inspect and search first, give each child exact files and line ranges,
    ask for evidence and coverage, check gaps with assess_coverage; a closed child is not
    proof of complete coverage.
    """
    from specialists.features.spend.approval import check_burst
    from specialists.features.threads.spawn import SpawnRequest
    from specialists.features.threads.spawn import spawn_thread as spawn

    request = SpawnRequest(
        instructions=_filled(instructions, "instructions"),
        child_of=tuple(child_of),
        fresh_context=fresh_context,
        model=model or None,
        runner=runner or None,
        specialist=specialist or None,
        sandbox=sandbox,
        depends_on=tuple(depends_on or ()),
        call_id=caller.call_id,
    )
    c = caller
    spawned = spawn(
        c.state_root,
        c.owner,
        c.job_id,
        c.cwd,
        request,
        sandboxes=_backend(c),  # cheap until used: no git runs without a sandbox
        now_ms=_now_ms(c),
        limits=c.settings.threads,
        approve=lambda parent, earlier, agent: check_burst(
            c.state_root, parent, earlier, agent, cancelled=c.cancelled
        ),
    )
    t = spawned.thread
    data: dict[str, Any] = {"thread_id": t.id, "job_id": t.job_id, "stack": list(t.stack)}
    if spawned.sandbox is not None:
        data |= {"sandbox": str(spawned.sandbox.path), "branch": spawned.sandbox.branch}
    return ToolAnswer(spawned.describe(), data)


@_store_errors
def report_to_parent(
    caller: Caller, *, report: Prose | None = None, structured: Mapping[str, Any] | None = None
) -> ToolAnswer:
    """Send your parent a progress or partial report without stopping: report (text) or
    structured {summary, files?, tests?, blockers?, evidence?, coverage?}, never both.
    Evidence and coverage are your claims with inclusive line ranges; be exact.

    Args:
        structured: summary (required), files, tests, blockers (string arrays), evidence
            [{source, start_line, end_line, claim}], coverage [{source, start_line, end_line,
            status: read|partial|failed}]; line ranges inclusive, 1-based
    """
    from specialists.features.threads.closing import report as send

    args = {"report": report, "structured": structured}
    event = send(caller.state_root, _position(caller), args, _now_ms(caller))
    return ToolAnswer(f"Report delivered to your parent ({event}).", {"event_id": event})


@_store_errors
def close_thread(
    caller: Caller, *, report: Prose | None = None, structured: Mapping[str, Any] | None = None
) -> ToolAnswer:
    """Finish this thread with your final report (report or structured, as report_to_parent;
    optional). Your parent receives child_closed with it when your job ends, with the
    sandbox's diff stat if you have one. Call it once, then stop.

    Args:
        structured: summary (required), files, tests, blockers (string arrays), evidence
            [{source, start_line, end_line, claim}], coverage [{source, start_line, end_line,
            status: read|partial|failed}]; line ranges inclusive, 1-based
    """
    from specialists.features.threads.closing import close

    position = _position(caller)
    args = {"report": report, "structured": structured}
    first = close(caller.state_root, position, args, _now_ms(caller))
    said = "Closing" if first else "This thread was already closing; nothing changed. Closing"
    return ToolAnswer(
        f"{said}: your parent receives child_closed with your report when your job ends "
        "(sandbox changes are committed then). Stop now: end your turn without another call.",
        {"thread_id": position.thread_id, "terminate": True},
    )


@_store_errors
def send_message_to_child(
    caller: Caller,
    *,
    thread_id: ThreadId,
    message: Prose,
    mode: Literal["steer", "follow_up"] = "steer",
) -> ToolAnswer:
    """Send a message to one of your own running child threads (mode steer: as soon as it
    can take it, the default; follow_up: after its current run). A child that is closing
    or closed cannot receive messages: spawn a new thread instead.
    """
    from specialists.features.threads.parent import send_message

    message = _filled(message, "message")
    request_id = send_message(caller.state_root, caller.owner, thread_id, message, mode)
    return ToolAnswer(
        f"Message sent to thread {thread_id} as a {mode} (request {request_id}); its answer "
        "arrives as a child_report or child_closed event.",
        {"thread_id": thread_id, "request_id": request_id},
    )


@_store_errors
def squash_sandbox(
    caller: Caller,
    *,
    thread_id: ThreadId,
    commit: bool = True,
    confirm: bool = False,
) -> ToolAnswer:
    """Merge a closed child's sandbox branch into your working copy as one squash. Into your
    own sandbox it is committed (commit: false leaves it staged). Into the user's working
    copy it is only staged, and needs confirm: true, which you may pass only after asking
    the user and getting their yes. Refused while the child runs or finalizes, when your
    tree has uncommitted changes, or when files would be overwritten; a conflict changes
    nothing and names the paths.
    """
    from specialists.features.threads.parent import squash_child

    c = caller
    outcome = squash_child(
        c.state_root, c.owner, c.job_id, c.cwd, thread_id, sandboxes=_backend(c), commit=commit,
        confirm=confirm,
    )  # fmt: skip
    data: dict[str, Any] = {"outcome": outcome.kind}
    if outcome.kind == "squashed":
        data |= {"mode": outcome.mode, "commit": outcome.commit, "files": list(outcome.files)}
        return ToolAnswer(outcome.describe(), data)
    data["paths"] = list(outcome.paths)
    if outcome.kind == "refused":
        data["reason"] = outcome.reason
    raise Failed(outcome.describe(), data=data)


def assess_coverage(
    caller: Caller, *, assigned: list[AssignedRange], reports: list[Mapping[str, Any]]
) -> ToolAnswer:
    """Compare the line ranges you assigned with the coverage your children reported:
    returns the missing ranges, failed and partial portions and evidence, in input order.
    Deterministic; reads no source and verifies nothing (coverage is not correctness).
    assigned: [{source, start_line, end_line}]; reports: structured reports (with
    coverage and evidence arrays).
    """
    from specialists.features.threads.coverage import assess_coverage as assess
    from specialists.features.threads.coverage import render_assessment

    result = assess(assigned, reports)
    return ToolAnswer(
        render_assessment(result),
        {
            "missing": [[s.source, s.start_line, s.end_line] for s in result.missing],
            "assigned_lines": result.assigned_lines,
            "read_lines": result.read_lines,
        },
    )


def _read(answer: ToolAnswer) -> str:
    return answer.text


TOOL_OPS = (
    Op(spawn_thread, tool="spawn_thread", cli=False, power="", text=_read, guidance=(
        "Split independent work into fresh-context threads (spawn_thread) and yield; record "
        "what was inspected, skipped and unresolved, and reconcile with assess_coverage."
    )),
    Op(report_to_parent, tool="report_to_parent", cli=False, power="", scope="child", text=_read),
    Op(close_thread, tool="close_thread", cli=False, power="", scope="child", text=_read,
       yields=True),
    Op(send_message_to_child, tool="send_message_to_child", cli=False, power="", text=_read),
    Op(squash_sandbox, tool="squash_sandbox", cli=False, power="write", text=_read),
    Op(assess_coverage, tool="assess_coverage", cli=False, power="", text=_read),
)  # fmt: skip
