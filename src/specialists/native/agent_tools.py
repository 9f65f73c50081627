"""The shape of the agent tool table: a call, its caller, its reply, and a tool.

Handlers are plain functions `(ToolCall) -> Reply`; a handler that cannot do what was asked
raises `SpecialistsError` (a user error: bad argument, unknown id, cap reached), which every
front turns into an error result of one line. `Reply.yields` asks the front to end the
agent's turn without another model call (sleep, sleep_until_event, close_thread): the
wake-up arrives later as an event.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from specialists.base.errors import Failed, SpecialistsError, UserError
from specialists.base.tuples import NamedTuple
from specialists.events.owners import owner_job_id
from specialists.native.tool_settings import Settings
from specialists.native.tool_tiers import allowed, job_tier, refusal

if TYPE_CHECKING:
    from typing import Self

    from specialists.store.jobs import JobStore

DEFAULT_SETTINGS = Settings()
MAX_DESCRIPTION = 900  # R-G2
NO_POLL = "Do not poll, do not sleep in a loop: end your turn or do independent work."


def _never() -> bool:
    return False


class Caller:
    """Who calls a tool or an op (base/ops.py), from which context: a job's model, an MCP
    client, a pi session, a person at the command line. Never changed once made: `replace`
    makes another. (A plain class: a frozen dataclass costs every op command `dataclasses`
    and `inspect`.)"""

    __slots__ = (
        "call_id", "cancel_why", "cancelled", "clock", "cwd", "job_id", "keys", "owner",
        "person", "settings", "stack", "state_root", "warnings",
    )  # fmt: skip

    def __init__(
        self,
        state_root: Path,  # the project's .specialists/
        owner: str,  # owner key: the inbox that hears of outcomes (job-<id>, claude-<session>)
        cwd: Path,
        job_id: str | None = None,  # when the caller is one of our jobs
        stack: tuple[str, ...] = ("root",),  # thread stack from root to the caller (threads)
        settings: Settings = DEFAULT_SETTINGS,
        clock: Callable[[], float] = time.time,  # wall seconds; tests pass a fake
        # True once the caller's turn is interrupted: a tool that waits (an ask) gives up.
        cancelled: Callable[[], bool] = _never,
        cancel_why: str = "its turn was interrupted",  # said when `cancelled` ends a wait
        keys: tuple[str, ...] = (),  # every owner key of the caller (a session has several)
        # A person at a terminal: oversees the whole project (any job's asks, any background
        # job), where a model sees only its own.
        person: bool = False,
        call_id: str = "",
        warnings: list[str] | None = None,  # said beside the answer
    ) -> None:
        self.state_root, self.owner, self.cwd, self.job_id = state_root, owner, cwd, job_id
        self.stack, self.settings, self.clock, self.cancelled = stack, settings, clock, cancelled
        self.cancel_why, self.keys, self.person, self.call_id = cancel_why, keys, person, call_id
        self.warnings: list[str] = [] if warnings is None else warnings

    def replace(self, **changes: Any) -> Self:
        """This caller (of its class) with `changes`; its warnings list is the same list."""
        names = [n for cls in type(self).__mro__ for n in getattr(cls, "__slots__", ())]
        return type(self)(**{**{n: getattr(self, n) for n in names}, **changes})

    def __repr__(self) -> str:
        return f"Caller(owner={self.owner!r}, job_id={self.job_id!r}, person={self.person})"

    @property
    def owners(self) -> tuple[str, ...]:
        return self.keys or (self.owner,)

    @property
    def job_owners(self) -> tuple[str, ...]:
        """Who hears of what this caller starts: a person with no session around, nobody
        (no inbox of theirs would nudge them)."""
        return self.keys if self.person else self.owners

    @property
    def root(self) -> Path:
        """The project root."""
        return self.state_root.parent

    def jobs(self) -> JobStore:
        """The project's job store (with the news its jobs' ends post)."""
        from specialists.store.jobs import JobStore
        from specialists.store.news import NEWS

        return JobStore(self.state_root, news=NEWS)


class ToolCall(NamedTuple):
    args: Mapping[str, Any]
    caller: Caller
    call_id: str = ""


class Reply(NamedTuple):
    text: str  # what the model reads
    data: Mapping[str, Any] = {}  # structured, for programs (never changed: one shared)
    is_error: bool = False
    yields: bool = False  # end the turn now; the answer comes as an event


Handler = Callable[[ToolCall], Reply]


class AgentTool(NamedTuple):
    name: str
    description: str
    schema: Mapping[str, Any]  # JSON schema of the arguments
    handler: Handler
    guidance: str = ""  # a line for the shared system prompt section (R-G1)
    scope: Literal["any", "child", "job"] = "any"  # child: thread agents; job: any of our jobs


def call_tool(tool: AgentTool, call: ToolCall) -> Reply:
    """Run a handler; a user error becomes an error reply the model can read. A job's call
    of a tool its permission tier does not grant (native/tool_tiers.py) is refused here, whatever
    the front listed: the one call path every front goes through."""
    tier = caller_tier(call.caller)
    if not allowed(tool.name, tier):
        assert tier is not None
        line = refusal(tool.name, tier)
        return Reply(f"error: {line}", {"error": line}, is_error=True)
    try:
        return tool.handler(call)
    except SpecialistsError as exc:
        line = exc.one_line()
        details = exc.data if isinstance(exc, Failed) else {}  # what a refused op found
        return Reply(f"error: {line}", {**details, "error": line}, is_error=True)


def caller_tier(caller: Caller) -> str | None:
    """The caller's permission tier from its job's record; None when it is not our job."""
    job_id = caller.job_id or owner_job_id(caller.owner)
    return None if job_id is None else job_tier(caller.state_root, job_id)


# --- argument readers (the model's JSON is untrusted input) --------------------------------


def arg_number(
    args: Mapping[str, Any], key: str, *, low: float, high: float, required: bool = True
) -> float | None:
    value = args.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise UserError(f"argument {key!r} must be a number from {low:g} to {high:g}")
    if not low <= value <= high:
        # as given, cut: a model's integer of 400 digits has no float to format it as
        raise UserError(f"argument {key!r} must be from {low:g} to {high:g}; got {value!r:.40}")
    return float(value)


def check_known(args: Mapping[str, Any], known: set[str]) -> None:
    unknown = sorted(set(args) - known)
    if unknown:
        raise UserError(
            f"unknown argument(s) {', '.join(map(repr, unknown))}",
            hint="known: " + ", ".join(sorted(known)),
        )
