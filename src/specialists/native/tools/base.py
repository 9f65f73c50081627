"""What every tool shares: its context, its output, and path confinement."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specialists.native.bash_guard import DEFAULT_SLEEP_LIMIT_S
from specialists.native.guards import RESULT_LIMITS, claim_refusal

if TYPE_CHECKING:
    from specialists.events.spill import SpillLimits
    from specialists.native.agent_tools import Caller
    from specialists.native.guards import GuardMode


@dataclass(frozen=True)
class ToolContext:
    cwd: Path
    spill_dir: Path
    permission: str = "MEDIUM"
    bash_timeout_s: float = 120.0  # a call without `timeout` gets this (R-B4)
    read_max_lines: int = 2000
    read_max_chars: int = 50_000
    env: Mapping[str, str] | None = None  # bash environment; None = inherit
    cancel: threading.Event = field(default_factory=threading.Event)
    # Process groups bash started; whatever still runs in them dies when the job ends.
    process_groups: set[int] = field(default_factory=set)
    # The oversized-result guard (R-O1..R-O3): every result but read's, bash output included.
    result_limits: SpillLimits = RESULT_LIMITS
    bash_guard: GuardMode = "off"  # the runner sets bash.guard from the settings (R-B1)
    bash_sleep_limit_s: float = DEFAULT_SLEEP_LIMIT_S
    # Where the agent tool table's tools report (owner job-<id>); None: no table tools.
    caller: Caller | None = None
    call_id: str = ""  # the call being run (execute sets it), for events that answer it
    read_roots: tuple[Path, ...] = ()  # more directories read may open (the owner's spill/)
    notify: Callable[[str], None] | None = None  # a notice for people, not the model


@dataclass(frozen=True)
class ToolOutput:
    text: str
    is_error: bool = False
    yields: bool = False  # end the run after this turn's calls: the answer comes as an event
    bounded: bool = False  # already passed the result guard as it streamed (bash)


class ToolFailure(Exception):
    """Raised inside a tool: becomes an error result the model reads (never a crash)."""


ToolFn = Callable[[Mapping[str, Any], ToolContext], ToolOutput]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: Mapping[str, Any]
    run: ToolFn


def resolve_inside(ctx: ToolContext, raw: Any, *, for_read: bool = False) -> Path:
    """`raw` as a path inside cwd (symlinks followed); reading may also reach spill/."""
    if not isinstance(raw, str) or not raw:
        raise ToolFailure("path must be a non-empty string")
    root = ctx.cwd.resolve()
    path = Path(raw).expanduser()
    resolved = (path if path.is_absolute() else root / path).resolve()
    roots = [root]
    if for_read:
        roots += [ctx.spill_dir.resolve(), *(r.resolve() for r in ctx.read_roots)]
    if not any(resolved == r or resolved.is_relative_to(r) for r in roots):
        raise ToolFailure(f"path {raw!r} is outside the working directory {root}; refused")
    return resolved


def claimed(ctx: ToolContext, path: Path) -> str | None:
    """Why writing `path` is refused: another live job claimed it (guards.claim_refusal)."""
    caller = ctx.caller
    if caller is None:
        return None
    return claim_refusal(caller.state_root, path, caller.job_id)


def arg_str(args: Mapping[str, Any], key: str, *, default: str | None = None) -> str:
    value = args.get(key, default)
    if not isinstance(value, str):
        if value is None:
            raise ToolFailure(f"missing required argument {key!r}")
        raise ToolFailure(f"argument {key!r} must be a string")
    return value


def arg_int(args: Mapping[str, Any], key: str, default: int | None) -> int | None:
    value = args.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ToolFailure(f"argument {key!r} must be an integer")
    return int(value)


def display(path: Path, ctx: ToolContext) -> str:
    root = ctx.cwd.resolve()
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
