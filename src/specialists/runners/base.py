"""The runner seam: one agent process (or in-process loop) -> normalized events.

Three calls and two questions. `start(spec)` spawns the agent and sends the first prompt;
`poll(timeout)` returns what happened since the last call, waiting at most `timeout`;
`send(command)` asks for something, with the commands as data (a follow-up, a steer, an
abort, a polite close, a signal). `accepts()` says which commands the runner takes *now*, so
the supervisor refuses a request the moment it is asked instead of failing later; sending one
that is not accepted is a bug. `handle` says who the agent is (pid and process start time)
and where its session lives.

The supervisor is single-threaded: it alternates between pumping the runner, reading the
control inbox and checking timers, so no runner needs locks of its own. The scripted double
is runners/testing.py.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Protocol, runtime_checkable

from specialists.base.display import excerpt, one_line
from specialists.base.errors import Bug
from specialists.base.tuples import NamedTuple
from specialists.store.liveness import process_start_time

if TYPE_CHECKING:
    from specialists.process.host import ProcessHost


class LaunchSpec(NamedTuple):
    """Everything a runner needs to start an agent for one job."""

    job_id: str
    job_dir: Path
    cwd: Path
    prompt: str  # the rendered task (first user message)
    system_prompt: str
    model: str | None  # "provider/model" or runner-specific name; None = agent default
    permission: str = "MEDIUM"
    # The definition's strict tool allowlist (catalog/tools.py canonical names), narrowing
    # what the tier grants; None: all the tier grants.
    tools: Sequence[str] | None = None
    thinking_level: str | None = None
    skill_paths: Sequence[Path] = ()
    extra_args: Sequence[str] = ()
    # The agent session to continue (a file or agent-side id), copied/recorded by the caller.
    resume_session: str | None = None
    max_turns: int | None = None
    max_tokens: int | None = None
    fallback_model: str | None = None
    response_format: str | None = None
    env: Mapping[str, str] = {}  # read-only (a Mapping): one shared empty one
    # Runner-specific options from the specialist's execution.runner block.
    options: Mapping[str, Any] = {}  # read-only, as env
    # Where the agent's processes run (executors/); None: on this machine.
    host: ProcessHost | None = None
    # A thread job (threads/): its agent also gets the child tools (report_to_parent, ...).
    thread: bool = False
    # `bare`: the runner adds nothing of its own to the system prompt (the answer format's
    # rule, the tool guide); `replace`: the system prompt replaces the agent's own, where
    # the agent can (pi, Claude Code), instead of being appended to it.
    bare: bool = False
    system_prompt_mode: str = "append"
    # What the job may still spend, filled in before the start (features/spend).
    spend: SpendLimit | None = None


class SpendLimit:
    """What a job may still spend, set by the supervisor's companions before the agent starts.

    `usd_left` is for an agent with a budget option of its own (Claude Code's
    `--max-budget-usd`). `gate` is asked by a loop we run (native) before each model request,
    with what this process spent so far: a line back stops the run there, with that error.
    """

    __slots__ = ("gate", "usd_left")

    def __init__(self) -> None:
        self.usd_left: float | None = None
        self.gate: Callable[[Usage], str | None] | None = None


# --- what a runner reports -------------------------------------------------------------


class Activity(NamedTuple):
    """Something the agent is doing.

    `event` is a kind from the shared vocabulary (thinking, toolcall, tool_execution,
    tool_execution_end, text, turn_end, retry, notice, steer_ack, ...). `log=False` means
    status-only: it moves current_event/current_tool but is not appended to events.jsonl.
    """

    event: str
    fields: Mapping[str, Any] = {}  # read-only (a Mapping): one shared empty one
    log: bool = True
    current_tool: str | None = None
    kind: Literal["activity"] = "activity"


def agent_started() -> Activity:
    """The agent is up and at its task (pi's agent_start, Claude Code's init, Codex's
    thread start; a command or the native loop at once): its start-up is over. Status
    only; the attention watch counts quiet time from here (attention/watch.py)."""
    return Activity("agent_start", log=False)


class AnswerDelta(NamedTuple):
    """Answer text as it streams; shown by a foreground run, never logged."""

    text: str
    kind: Literal["answer_delta"] = "answer_delta"


class Usage(NamedTuple):
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


class RunFinished(NamedTuple):
    """One prompt (or follow-up) has been fully answered, or has failed.

    `text` is the final assistant text ("" when the agent said nothing). `error` is set when
    the run failed (provider error, max turns, agent-side error). `usage` is informational:
    the supervisor accounts tokens and cost from `Usage` events only, so report each once.
    `yielded` says the run ended on a yielding tool (sleep, sleep_until_event): the agent is
    waiting for an event, and `text` is not its answer.
    """

    text: str | None
    error: str | None = None
    session_file: str | None = None
    usage: Usage | None = None
    yielded: bool = False
    kind: Literal["run_finished"] = "run_finished"


class AgentExited(NamedTuple):
    """The agent process ended (or the in-process loop stopped for good)."""

    exit_code: int | None  # None when killed by a signal
    signal: int | None = None
    stderr_tail: str = ""
    kind: Literal["agent_exited"] = "agent_exited"


RunnerEvent = Activity | AnswerDelta | Usage | RunFinished | AgentExited


# An agent's usage report is untrusted: a count or a price past these is no measurement
# (a 5,000-digit number, 1e300), and would overflow a float or swamp the job's spend.
TOKENS_MAX = 10**12
COST_MAX_USD = 1_000_000.0


def token_count(value: Any) -> int:
    """A token count from an agent's JSON: a whole number from 0 to TOKENS_MAX (an int, or
    a float with no fraction; not a bool), else 0: a negative, NaN or infinite count would
    turn the job's spend negative or crash the reader."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return value if 0 <= value <= TOKENS_MAX else 0


def cost_amount(value: Any) -> float:
    """A cost in dollars from an agent's JSON: a number from 0 to COST_MAX_USD, else 0.0
    (NaN would make every spend ceiling unreachable, a negative one would give money back,
    a 400-digit int overflows float())."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    if isinstance(value, int) and not 0 <= value <= COST_MAX_USD:
        return 0.0
    amount = float(value)
    return amount if 0.0 <= amount <= COST_MAX_USD else 0.0  # NaN fails both


_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


def session_id(value: Any) -> str | None:
    """An agent's session (or thread) id as its output gives it, or None when it is not one
    word of letters, digits and . _ : - (a follow-up passes it back as an argument, where
    `--dangerously-skip-permissions` would be read as a flag)."""
    return value if isinstance(value, str) and _SESSION_ID.fullmatch(value) else None


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
    return one_line(text, ARGS_SUMMARY_MAX)


TOOL_ERROR_CHARS = 300


def tool_error(text: object) -> str | None:
    """A failed tool's reason for its `tool_execution_end` event: what the tool answered
    (a guard's refusal, the command's output), bounded; None when it said nothing."""
    if isinstance(text, list):  # content blocks, as Claude Code and pi give them
        text = "\n".join(
            str(block.get("text", ""))
            for block in text
            if isinstance(block, Mapping) and block.get("type") == "text"
        )
    if not isinstance(text, str) or not text.strip():
        return None
    return excerpt(text.strip(), TOOL_ERROR_CHARS)


def tool_end(
    name: str, duration_ms: int | None, *, error: object = None, failed: bool = False, **more: Any
) -> Activity:
    """The one shape of a finished tool call on every runner: {tool, duration_ms} and, when
    it failed, is_error and the reason (`error`) in events.jsonl."""
    fields: dict[str, Any] = {"tool": name, "duration_ms": duration_ms, **more}
    if failed:
        fields["is_error"] = True
        reason = tool_error(error)
        if reason is not None:
            fields["error"] = reason
    return Activity("tool_execution_end", fields)


def toolcall(name: str, args: object) -> Activity:
    """The one shape of a logged tool call on every runner: {tool, args} in events.jsonl,
    `name(args)` as status.json's current_tool (as in the seed's `bash(grep -r ...)`)."""
    summary = summarize_args(args)
    current = f"{name}({summary})" if summary else name
    return Activity("toolcall", {"tool": name, "args": summary}, current_tool=current)


# --- what a runner is asked to do -------------------------------------------------------


class FollowUp(NamedTuple):
    """Another user message, answered by a run of its own (queued behind a run in progress).

    `synthetic`: the message is not a person's but the supervisor's (inbox events waking the
    agent, P2); runners that can tell the two apart in their session do.
    """

    message: str
    synthetic: bool = False
    kind: Literal["follow_up"] = "follow_up"


class Steer(NamedTuple):
    """Guidance for the run in progress, read by the agent before its next step."""

    message: str
    kind: Literal["steer"] = "steer"


class Abort(NamedTuple):
    """End the run in progress gracefully; RunFinished(error="aborted") follows."""

    kind: Literal["abort"] = "abort"


class Close(NamedTuple):
    """No more runs: end the agent cleanly once the run in progress is over. AgentExited
    follows."""

    kind: Literal["close"] = "close"


class Terminate(NamedTuple):
    """SIGTERM the agent's process group (in-process runners: abort and close)."""

    kind: Literal["terminate"] = "terminate"


class Kill(NamedTuple):
    """SIGKILL the agent's process group, and what earlier runs left behind. Idempotent."""

    kind: Literal["kill"] = "kill"


Command = FollowUp | Steer | Abort | Close | Terminate | Kill
CommandKind = Literal["follow_up", "steer", "abort", "close", "terminate", "kill"]

# Every runner takes these in every state, so an ending ladder can always run to its end.
ALWAYS_ACCEPTED: frozenset[CommandKind] = frozenset({"close", "terminate", "kill"})


def not_accepted(runner: str, command: Command) -> NoReturn:
    """What a runner does with a command it did not declare: the caller should have asked."""
    raise Bug(f"the {runner} runner was sent {command.kind!r}, which it does not accept now")


# --- who the agent is ---------------------------------------------------------------------


class AgentHandle(NamedTuple):
    """The agent as the job records it: its process and its session.

    `start_time` is the process's start time (jobs.liveness), so a pid the kernel reused is
    never mistaken for the agent. In-process runners have no pid.
    """

    pid: int | None = None
    start_time: int | None = None
    session_ref: str | None = None  # where the agent keeps its session: a file or an agent id

    def moved_to(self, pid: int | None, session_ref: str | None) -> AgentHandle:
        """This handle for the agent's current pid and session; reads the start time only
        when the pid changed (one-shot runners start a process per run)."""
        if pid == self.pid:
            if session_ref == self.session_ref:
                return self
            return AgentHandle(pid, self.start_time, session_ref)
        return AgentHandle(pid, process_start_time(pid) if pid else None, session_ref)


class AgentRunner(Protocol):
    """One running agent. No call blocks for long; `poll` waits at most `timeout`."""

    def start(self, spec: LaunchSpec) -> None:
        """Spawn the agent and send the first prompt. Raises AgentUnavailable if it cannot."""

    def poll(self, timeout: float) -> list[RunnerEvent]:
        """Return new events, waiting up to `timeout` seconds for the first one."""

    def accepts(self) -> frozenset[CommandKind]:
        """The commands `send` takes now (always at least ALWAYS_ACCEPTED)."""

    def send(self, command: Command) -> None:
        """Act on `command`; raises Bug for one that `accepts()` does not list."""

    @property
    def handle(self) -> AgentHandle:
        """The agent's pid, process start time and session, as known now."""


@runtime_checkable
class HostedRunner(Protocol):
    """A runner whose agent runs where another supervisor can take it over after a crash
    (executors/job.py): what the checkpoints of supervise/checkpoint.py need of it."""

    node: str  # where the agent runs, for people ("Ray node 1a2b3c4d5e6f (10.0.0.7)")

    @property
    def adoptable(self) -> bool: ...

    def checkpoint(self, *, adoptable: bool) -> dict[str, Any] | None: ...

    def committed(self, taken: dict[str, Any]) -> None: ...

    def adopt(self, spec: LaunchSpec, checkpoint: Mapping[str, Any]) -> None: ...
