"""The runner seam: one agent process (or in-process loop) -> normalized events.

A runner is started by the supervisor with a `LaunchSpec` and then pumped with
`poll(timeout)`, which returns whatever happened since the last call. The supervisor
is single-threaded: it alternates between pumping the runner, reading the control
inbox and checking timers, so no runner needs locks of its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from specialists.vocab import PERMISSION_TIERS

__all__ = ["PERMISSION_TIERS"]  # re-exported for older imports; the word lives in vocab


@dataclass(frozen=True)
class LaunchSpec:
    """Everything a runner needs to start an agent for one job."""

    job_id: str
    job_dir: Path
    cwd: Path
    prompt: str  # the rendered task (first user message)
    system_prompt: str
    model: str | None  # "provider/model" or runner-specific name; None = agent default
    permission: str = "MEDIUM"
    thinking_level: str | None = None
    skill_paths: Sequence[Path] = ()
    extra_args: Sequence[str] = ()
    # The agent session to continue (a file or agent-side id), copied/recorded by the caller.
    resume_session: str | None = None
    max_turns: int | None = None
    max_tokens: int | None = None
    fallback_model: str | None = None
    response_format: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    # Runner-specific options from the specialist's execution.runner block.
    options: Mapping[str, Any] = field(default_factory=dict)


# --- what a runner reports -------------------------------------------------------------


@dataclass(frozen=True)
class Activity:
    """Something the agent is doing.

    `event` is a kind from the shared vocabulary (thinking, toolcall, tool_execution,
    tool_execution_end, text, turn_end, retry, notice, steer_ack, ...). `log=False` means
    status-only: it moves current_event/current_tool but is not appended to events.jsonl.
    """

    event: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    log: bool = True
    current_tool: str | None = None
    kind: Literal["activity"] = "activity"


@dataclass(frozen=True)
class TextDelta:
    """Answer text as it streams; shown by a foreground run, never logged."""

    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    kind: Literal["usage"] = "usage"

    def plus(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cost_usd + other.cost_usd,
        )


@dataclass(frozen=True)
class RunFinished:
    """One prompt (or follow-up) has been fully answered, or has failed.

    `text` is the final assistant text ("" when the agent said nothing). `error` is set when
    the run failed (provider error, max turns, agent-side error). `usage` is informational:
    the supervisor accounts tokens and cost from `Usage` events only, so report each once.
    """

    text: str | None
    error: str | None = None
    session_file: str | None = None
    usage: Usage | None = None
    kind: Literal["run_finished"] = "run_finished"


@dataclass(frozen=True)
class AgentExited:
    """The agent process ended (or the in-process loop stopped for good)."""

    exit_code: int | None  # None when killed by a signal
    signal: int | None = None
    stderr_tail: str = ""
    kind: Literal["agent_exited"] = "agent_exited"


RunnerEvent = Activity | TextDelta | Usage | RunFinished | AgentExited

ARGS_SUMMARY_MAX = 200
_SUMMARY_KEYS = ("command", "cmd", "file_path", "path", "pattern", "url", "query", "prompt")


def summarize_args(args: object) -> str:
    """A tool call's most telling argument on one line (the command, path, pattern, ...)."""
    text = ""
    if isinstance(args, Mapping):
        for key in _SUMMARY_KEYS:
            value = args.get(key)
            if isinstance(value, str) and value:
                text = value
                break
        else:
            text = json.dumps(args, ensure_ascii=False, separators=(",", ":"), default=str)
            text = "" if text == "{}" else text
    elif args is not None:
        text = str(args)
    text = " ".join(text.split())
    return text if len(text) <= ARGS_SUMMARY_MAX else text[: ARGS_SUMMARY_MAX - 1] + "…"


def toolcall(name: str, args: object) -> Activity:
    """The one shape of a logged tool call on every runner: {tool, args} in events.jsonl,
    `name(args)` as status.json's current_tool (as in the seed's `bash(grep -r ...)`)."""
    summary = summarize_args(args)
    current = f"{name}({summary})" if summary else name
    return Activity("toolcall", {"tool": name, "args": summary}, current_tool=current)


class Runner(Protocol):
    """One running agent. Methods must not block for long; `poll` waits at most `timeout`."""

    name: str

    def start(self, spec: LaunchSpec) -> None:
        """Spawn the agent and send the first prompt. Raises AgentUnavailable if it cannot."""

    @property
    def pid(self) -> int | None:
        """The agent's process id (its own process group leader), or None when in-process."""

    def poll(self, timeout: float) -> list[RunnerEvent]:
        """Return new events, waiting up to `timeout` seconds for the first one."""

    def follow_up(self, message: str) -> None:
        """Send another user message after (or queued behind) the current run."""

    def steer(self, message: str) -> None:
        """Inject guidance into the run in progress."""

    def abort(self) -> None:
        """Ask the agent to stop the current run gracefully (RunFinished follows)."""

    def close(self) -> None:
        """End the agent cleanly after a run (e.g. close stdin). AgentExited follows."""

    def terminate(self) -> None:
        """SIGTERM the agent's process group."""

    def kill(self) -> None:
        """SIGKILL the agent's process group. Idempotent."""

    @property
    def session_ref(self) -> str | None:
        """Where the agent keeps its session, for continue/resume (file path or agent id)."""

    @property
    def supports_steer(self) -> bool:
        """False for one-shot agents (command runner, claude -p): steer is refused."""
