"""The native runner: the Python agent loop on a background thread of the supervisor.

`start` resolves the model (no SDK import yet), opens the session and starts one thread that
answers the prompt, then waits for follow-ups until `close`. Everything the loop reports goes
through a queue that `poll` drains, so the single-threaded supervisor never shares state with
the loop. steer/follow_up/abort/close are thread-safe hand-offs.

The agent gets the built-in tools of its tier and the agent tool table (native/tools/table.py,
owner `job-<id>`) with the table's prompt section (R-G1); option `table_tools: false` leaves
the table out. The wave-2 settings ([bash], [overflow] in config.toml) set the bash guard,
the default bash timeout (the option `bash_timeout_s` wins) and the result guard, which
bash output passes too (R-B1..R-B5, R-O1..R-O3). A run that ends on a yielding tool reports
`RunFinished(yielded=True)`; the supervisor wakes the loop with a synthetic follow-up
(`FollowUp(synthetic=True)`, recorded in the session as a user message of source "event").

A setup failure (no API key, unknown provider, bad config) is not raised: it arrives as one
RunFinished(error=<one line>) followed by AgentExited(1), the same path as any failed run.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, assert_never

from specialists.base.errors import Bug, ConfigError, SpecialistsError
from specialists.catalog.config import Config, load_config
from specialists.events.owners import check_owner, owner_dir
from specialists.events.spill import SpillLimits
from specialists.native.agent_tools import Caller
from specialists.native.breaker import BreakerConfig, CircuitBreaker
from specialists.native.calling import ModelSlot, RetryPolicy
from specialists.native.events import LoopEvent, LoopFinished, Progress, Spent, TextOut
from specialists.native.loop import AgentLoop, LoopSettings
from specialists.native.messages import UserSource
from specialists.native.model import ModelClient, ModelInfo, Prices
from specialists.native.providers.registry import make_client, resolve_model
from specialists.native.session import Session
from specialists.native.tool_settings import Settings, settings_from_config
from specialists.native.tools import Tool, ToolContext, ToolFailure, tools_for_permission
from specialists.native.tools.bash import kill_process_groups
from specialists.native.tools.table import table_tools
from specialists.process.jobenv import agent_env
from specialists.runners.base import (
    ALWAYS_ACCEPTED,
    Activity,
    AgentExited,
    AgentHandle,
    AnswerDelta,
    Command,
    CommandKind,
    LaunchSpec,
    RunFinished,
    RunnerEvent,
    Usage,
    agent_started,
    not_accepted,
    tool_end,
    toolcall,
)
from specialists.store.paths import STATE_DIR_NAME, find_project_root, state_dir

log = logging.getLogger(__name__)

_CLOSE = object()
_OPEN: frozenset[CommandKind] = ALWAYS_ACCEPTED | {"follow_up", "steer", "abort"}


SESSION_FILE = "session.jsonl"


@dataclass(frozen=True)
class JobTools:
    tools: dict[str, Tool]
    context: ToolContext
    system_prompt: str
    limits: SpillLimits  # the result guard's, for tool results and long user messages
    answer_schema: Mapping[str, Any] | None = None  # the final_answer tool's (tools/answer.py)


def job_tools(
    spec: LaunchSpec,
    settings: Settings,
    env: Mapping[str, str],
    *,
    notify: Callable[[str], None],
    wall: Callable[[], float],
) -> JobTools:
    try:
        tools = tools_for_permission(spec.permission)
    except ToolFailure as exc:
        raise ConfigError(str(exc)) from exc
    if spec.tools is not None:  # the definition's allowlist narrows the tier's set
        tools = {name: tool for name, tool in tools.items() if name in spec.tools}
    state_root = state_dir(project_root(spec))
    owner = check_owner(f"job-{spec.job_id}")
    system_prompt = spec.system_prompt
    if spec.options.get("table_tools", True) is not False:
        from specialists.native.agent_table import offered, prompt_guidance

        table = offered(thread=spec.thread, tier=spec.permission)
        tools.update(table_tools(table))
        guidance = prompt_guidance(table) if table and not spec.bare else ""
        system_prompt = "\n\n".join(p for p in (system_prompt, guidance) if p)
    timeout_s = float(spec.options.get("bash_timeout_s", settings.bash.default_timeout_sec))
    if "bash" in tools:  # the description names the default the model gets (R-B4)
        bash = tools["bash"]
        tools["bash"] = dataclasses.replace(
            bash, description=f"{bash.description} Default timeout: {timeout_s:g} s."
        )
    answer_schema = spec.options.get("answer_schema")
    if isinstance(answer_schema, Mapping):  # a workflow child's schema: structured output
        from specialists.native.tools.answer import ANSWER_TOOL, answer_tool

        tools[ANSWER_TOOL] = answer_tool(answer_schema)
    else:
        answer_schema = None
    o = settings.overflow
    limits = SpillLimits(o.max_chars, o.head_chars, o.tail_chars)
    context = ToolContext(
        cwd=spec.cwd,
        spill_dir=spec.job_dir / "spill",
        permission=spec.permission,
        bash_timeout_s=timeout_s,
        env=env,
        result_limits=limits,
        bash_guard=settings.bash.guard,  # type: ignore[arg-type]  # checked by the settings
        bash_sleep_limit_s=settings.bash.sleep_limit_sec,
        caller=Caller(
            state_root, owner, spec.cwd, job_id=spec.job_id, settings=settings, clock=wall
        ),
        read_roots=(owner_dir(state_root, owner) / "spill",),  # spilled event bodies
        notify=notify,
    )
    return JobTools(tools, context, system_prompt, limits, answer_schema)


def load_settings(config: Config, notify: Callable[[str], None]) -> Settings:
    """The wave-2 settings; a mistake in them is a notice and the defaults, never a job that
    cannot start (as in the pi front's sidecar)."""
    try:
        return settings_from_config(config.raw)
    except ConfigError as exc:
        notify(f"{exc.one_line()}; using the default settings")
        return Settings()


def open_session(spec: LaunchSpec) -> Session:
    path = spec.job_dir / SESSION_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    if spec.resume_session and not path.exists():
        source = Path(spec.resume_session)
        if not source.is_file():
            raise ConfigError(f"session to resume not found: {source}")
        shutil.copyfile(source, path)
    meta = {"job_id": spec.job_id, "cwd": str(spec.cwd), "model": spec.model}
    return Session.open_or_create(path, meta)


def project_root(spec: LaunchSpec) -> Path:
    """<root>/.specialists/jobs/<id> -> <root>; otherwise search upward from cwd."""
    jobs = spec.job_dir.parent
    if jobs.name == "jobs" and jobs.parent.name == STATE_DIR_NAME:
        return jobs.parent.parent
    return Path(find_project_root(spec.cwd))


class NativeRunner:
    name = "native"

    def __init__(
        self,
        *,
        config: Config | None = None,
        clients: Mapping[str, ModelClient] | None = None,
        breaker_dir: Path | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        """`clients` maps a model name to a ready client (tests: a ScriptedModel); `wall` is
        the clock the table's tools set timers by (tests: a FakeClock)."""
        self._wall = wall
        self._config = config
        self._clients = dict(clients or {})
        self._breaker_dir = breaker_dir
        self._events: queue.Queue[RunnerEvent] = queue.Queue()
        self._process_groups: set[int] = set()
        self._commands: queue.Queue[Any] = queue.Queue()
        self._loop: AgentLoop | None = None
        self._thread: threading.Thread | None = None
        self._session_path: Path | None = None
        self._closed = False
        # Runs are numbered in the order they are asked for (the prompt is run 1, each
        # follow-up the next). An abort covers every run asked for so far, including one
        # the loop thread has not begun yet, but never a later one.
        self._lock = threading.Lock()
        self._requested = 0
        self._started = 0
        self._abort_upto = 0
        self._spent = Usage()  # what this process's model calls cost (the loop thread's)

    @property
    def handle(self) -> AgentHandle:
        # In-process: there is no agent process to signal, only the session file.
        return AgentHandle(session_ref=self.session_ref)

    @property
    def session_ref(self) -> str | None:
        return str(self._session_path) if self._session_path else None

    def accepts(self) -> frozenset[CommandKind]:
        """Everything while the loop lives (an idle loop takes a steer as a follow-up)."""
        open_ = self._thread is not None and not self._closed and self._thread.is_alive()
        return _OPEN if open_ else ALWAYS_ACCEPTED

    def send(self, command: Command) -> None:
        if command.kind not in self.accepts():
            not_accepted(self.name, command)
        if command.kind == "follow_up":
            self._follow_up(command.message, "event" if command.synthetic else "follow_up")
        elif command.kind == "steer":
            self._steer(command.message)
        elif command.kind == "abort":
            self._abort()
        elif command.kind == "close":
            self._close()
        elif command.kind == "terminate" or command.kind == "kill":
            self._abort()  # a thread cannot be signalled: stop the run, then the loop
            self._close()
        else:
            assert_never(command)

    def start(self, spec: LaunchSpec) -> None:
        if self._thread is not None:
            raise Bug("NativeRunner.start called twice")
        self._session_path = spec.job_dir / SESSION_FILE
        self._events.put(agent_started())  # the loop runs in this process: no start-up
        with self._lock:
            self._requested = 1
        self._thread = threading.Thread(
            target=self._main, args=(spec,), name=f"native-{spec.job_id}", daemon=True
        )
        self._thread.start()

    def poll(self, timeout: float) -> list[RunnerEvent]:
        out: list[RunnerEvent] = []
        try:
            out.append(self._events.get(timeout=max(0.0, timeout)))
        except queue.Empty:
            return out
        while True:
            try:
                out.append(self._events.get_nowait())
            except queue.Empty:
                return out

    def _follow_up(self, message: str, source: UserSource = "follow_up") -> None:
        with self._lock:
            self._requested += 1
            self._commands.put((message, source))

    def _steer(self, message: str) -> None:
        loop = self._loop
        if loop is not None and loop.try_steer(message):
            return
        self._follow_up(message)  # idle: a steer starts a run like a follow-up

    def _abort(self) -> None:
        with self._lock:
            self._abort_upto = self._requested
            if self._loop is not None:
                self._loop.abort()

    def _close(self) -> None:
        if not self._closed:
            self._closed = True
            self._commands.put(_CLOSE)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the loop thread to end (tests, benchmarks); True when it has."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    # --- the loop thread ----------------------------------------------------------------

    def _main(self, spec: LaunchSpec) -> None:
        session: Session | None = None
        exit_code = 1
        try:
            loop = self._build(spec)
            session = loop.session
            self._loop = loop
            self._run(loop, spec.prompt or None, "prompt")
            while True:
                command = self._commands.get()
                if command is _CLOSE:
                    break
                message, source = command
                self._run(loop, message, source)
            exit_code = 0
        except SpecialistsError as exc:
            self._events.put(RunFinished(None, error=exc.one_line(), session_file=self.session_ref))
        except Exception as exc:  # reported as the job's error; the traceback goes to the log
            log.exception("native loop crashed")
            error = f"bug: native loop crashed: {type(exc).__name__}: {exc}"
            self._events.put(RunFinished(None, error=error, session_file=self.session_ref))
        finally:
            if session is not None:
                session.close()
            kill_process_groups(self._process_groups)  # nothing bash started outlives the job
            self._events.put(AgentExited(exit_code))

    def _run(self, loop: AgentLoop, prompt: str | None, source: Any) -> None:
        with self._lock:
            self._started += 1
            self._arm(loop)
        loop.run(prompt, source)
        while loop.has_pending_steers:  # a steer that landed as the run was ending
            with self._lock:
                self._arm(loop)
            loop.run(None, "steer")

    def _arm(self, loop: AgentLoop) -> None:
        """Start run number `_started` (lock held): aborted already if an abort covered it."""
        loop.arm(aborted=self._started <= self._abort_upto)

    def _emit(self, event: LoopEvent) -> None:
        if isinstance(event, Progress):
            self._events.put(_activity(event))
        elif isinstance(event, TextOut):
            self._events.put(AnswerDelta(event.text))
        elif isinstance(event, Spent):
            u = event.usage
            usage = Usage(
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens,
                u.cache_write_tokens,
                event.cost_usd,
            )
            self._spent = self._spent.plus(usage)
            self._events.put(usage)
        elif isinstance(event, LoopFinished):
            self._events.put(
                RunFinished(
                    event.text,
                    error=event.error,
                    session_file=self.session_ref,
                    yielded=event.yielded,
                )
            )

    def _build(self, spec: LaunchSpec) -> AgentLoop:
        env = agent_env(spec.job_dir, spec.env)  # bash inherits the job's process mark
        config = self._config or load_config(project_root(spec))
        options = dict(spec.options)
        model_name = spec.model or config.default_model
        if not model_name:
            raise ConfigError(
                "no model for the native runner",
                hint="set the specialist's model (provider/model) or default_model in config.toml",
            )
        timeout_s = float(options.get("request_timeout_s", 600.0))
        slots = [self._slot(model_name, config, env, spec.cwd, timeout_s)]
        if spec.fallback_model and spec.fallback_model != model_name:
            try:
                slots.append(self._slot(spec.fallback_model, config, env, spec.cwd, timeout_s))
            except SpecialistsError as exc:
                message = f"fallback model {spec.fallback_model} unusable: {exc.one_line()}"
                self._events.put(Activity("notice", {"message": message}))
        settings = load_settings(config, self._notify)
        job = job_tools(spec, settings, env, notify=self._notify, wall=self._wall)
        tool_context = job.context
        session = open_session(spec)
        self._process_groups = tool_context.process_groups
        loop_settings = LoopSettings(
            answer_schema=job.answer_schema,
            system_prompt=job.system_prompt,
            max_turns=spec.max_turns,
            max_tokens=spec.max_tokens,
            thinking=spec.thinking_level,
            retry=RetryPolicy(
                max_retries=int(options.get("max_retries", 3)),
                base_delay_s=float(options.get("retry_base_delay_s", 1.0)),
                max_delay_s=float(options.get("retry_max_delay_s", 30.0)),
                # a server asking for a longer wait than this: the run fails with the reset
                # time, and the job pauses until then (docs/usage-limits.md)
                max_retry_after_s=float(options.get("retry_max_wait_s", 60.0)),
            ),
            spill=job.limits,
            gate=self._gate(spec),
        )
        breaker_config = BreakerConfig(
            failure_threshold=int(options.get("breaker_threshold", 3)),
            cooldown_s=float(options.get("breaker_cooldown_s", 60.0)),
        )
        breakers: dict[str, CircuitBreaker] = {}

        def breaker_for(label: str) -> CircuitBreaker | None:
            if label.startswith("replay/") or label in self._clients:
                return None
            if label not in breakers:
                breakers[label] = CircuitBreaker(
                    label, directory=self._breaker_dir, config=breaker_config
                )
            return breakers[label]

        return AgentLoop(
            session=session,
            models=slots,
            tools=job.tools,
            tool_context=tool_context,
            settings=loop_settings,
            emit=self._emit,
            breaker_for=breaker_for,
        )

    def _gate(self, spec: LaunchSpec) -> Callable[[], str | None] | None:
        """Before each model request: the job's spend limit, with what this process spent."""
        limit = spec.spend
        if limit is None:
            return None
        return lambda: limit.gate(self._spent) if limit.gate is not None else None

    def _notify(self, message: str) -> None:
        self._events.put(Activity("notice", {"message": message}))

    def _slot(
        self, name: str, config: Config, env: Mapping[str, str], cwd: Path, timeout_s: float
    ) -> ModelSlot:
        client = self._clients.get(name)
        if client is not None:
            provider, _, model_id = name.partition("/")  # a given client (a test's): no price
            info = ModelInfo(name, provider, model_id or name, prices=Prices())
            return ModelSlot(info, lambda: client)
        resolved = resolve_model(name, config, env, cwd)
        return ModelSlot(resolved.info, make_client(resolved, timeout_s=timeout_s))


def _activity(progress: Progress) -> Activity:
    if progress.event == "toolcall":  # the shape every runner logs, plus the loop's call id
        shown = toolcall(str(progress.fields.get("tool")), progress.fields.get("arguments"))
        fields = {**shown.fields, "call_id": progress.fields.get("call_id")}
        return Activity("toolcall", fields, current_tool=shown.current_tool)
    if progress.event == "tool_execution_end":  # the shape every runner logs
        f = progress.fields
        return tool_end(
            str(f.get("tool")),
            f.get("duration_ms"),
            failed=f.get("is_error") is True,
            error=f.get("error"),
            call_id=f.get("call_id"),
        )
    return Activity(
        progress.event, progress.fields, log=progress.log, current_tool=progress.current_tool
    )
