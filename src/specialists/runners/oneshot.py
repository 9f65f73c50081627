"""What the one-process-per-run CLI runners share (claude -p, codex exec, any command).

- `find_binary`: options["bin"], then an environment variable, then PATH; a missing binary
  is an AgentUnavailable with the install hint, before anything is spawned.
- `StdinFeeder`: writes the prompt to the agent's stdin without ever blocking the
  supervisor (an agent that never reads a large prompt cannot hang us), then closes stdin.
- `ResumableRunner`: one agent process per run. `follow_up` after a run spawns a new
  process that resumes the agent's own session (`--resume`), so keep-alive jobs work with
  agents that exit after every answer. The exit of a process that answered is held back
  until the supervisor closes the runner: AgentExited means "no more runs", not "this
  process ended".
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import time
from collections import deque
from collections.abc import Mapping
from typing import Any, Protocol, assert_never

from specialists.errors import AgentUnavailable, SpecialistsError
from specialists.runners.base import (
    ALWAYS_ACCEPTED,
    Activity,
    AgentExited,
    AgentHandle,
    Command,
    CommandKind,
    LaunchSpec,
    RunFinished,
    RunnerEvent,
    not_accepted,
)
from specialists.runners.proc import AgentProcess, OversizedLine, exit_description

log = logging.getLogger(__name__)

_WRITE_CHUNK = 1 << 16
_FEED_SLICE = 0.02  # read timeout while a prompt is still being fed
_DRAIN_LIMIT = 1.0  # how long to wait for the rest of stdout once the process has exited
# A one-shot agent takes no steer; a follow-up once the run in progress has answered.
_IN_A_RUN: frozenset[CommandKind] = ALWAYS_ACCEPTED | {"abort"}
_BETWEEN_RUNS: frozenset[CommandKind] = ALWAYS_ACCEPTED | {"follow_up"}


def find_binary(
    default: str,
    spec: LaunchSpec,
    env_var: str,
    not_installed: str,
) -> str:
    """Resolve the agent binary or raise AgentUnavailable(not_installed)."""
    explicit = spec.options.get("bin") or spec.env.get(env_var) or os.environ.get(env_var)
    if explicit:
        path = str(explicit)
        found = shutil.which(path) if os.sep not in path else path
        if found and os.access(found, os.X_OK) and not os.path.isdir(found):
            return found
        raise AgentUnavailable(f"{not_installed} ({path!r} is not an executable file)")
    search_path = spec.env.get("PATH") or os.environ.get("PATH")
    found = shutil.which(default, path=search_path)
    if not found:
        raise AgentUnavailable(not_installed)
    return found


def child_env(spec: LaunchSpec, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(spec.env)
    if extra:
        env.update(extra)
    return env


def describe_exit(agent: str, returncode: int | None, stderr_tail: str) -> str:
    """One line: how the process ended and the last thing it said on stderr."""
    code, sig = exit_description(returncode)
    what = f"{agent} was killed by signal {sig}" if sig else f"{agent} exited with code {code}"
    lines = [ln.strip() for ln in stderr_tail.splitlines() if ln.strip()]
    return f"{what}: {lines[-1]}" if lines else what


class StdinFeeder:
    """Feed `data` to a child's stdin with non-blocking writes, then close it."""

    def __init__(self, proc: AgentProcess, data: bytes) -> None:
        self._proc = proc
        self._data = memoryview(data)
        self._pos = 0
        self.broken = False  # the child closed its stdin before reading everything
        stdin = proc.popen.stdin
        self.done = stdin is None
        if stdin is not None:
            os.set_blocking(stdin.fileno(), False)
        self.pump()

    def pump(self) -> None:
        stdin = self._proc.popen.stdin
        if self.done or stdin is None or stdin.closed:  # closed: the runner gave up feeding
            self.done = True
            return
        fd = stdin.fileno()
        while self._pos < len(self._data):
            try:
                self._pos += os.write(fd, self._data[self._pos : self._pos + _WRITE_CHUNK])
            except BlockingIOError:
                return
            except BrokenPipeError:
                # Not an error in itself: the process exited or does not read stdin. Its
                # exit status tells the story; keep a trace for debugging.
                log.debug("agent %s closed stdin after %d bytes", self._proc.pid, self._pos)
                self.broken = True
                break
        self.done = True
        self._proc.close_stdin()


def parse_line(line: bytes | OversizedLine) -> tuple[dict[str, Any] | None, Activity | None]:
    """A stdout line -> (object, None) or (None, a notice saying why it was skipped)."""
    if isinstance(line, OversizedLine):
        notice = f"skipped an oversized output line ({line.size} bytes)"
        return None, Activity("notice", {"message": notice})
    if not line.strip():
        return None, None
    try:
        obj = json.loads(line)
    except ValueError:
        head = line[:200].decode("utf-8", "replace")
        return None, Activity("notice", {"message": f"unparsed output line: {head}"}, log=False)
    if not isinstance(obj, dict):
        return None, None
    return obj, None


class Translator(Protocol):
    finished: bool
    aborting: bool

    def feed(self, obj: Mapping[str, Any], now: float) -> list[RunnerEvent]: ...

    def on_exit(self, description: str, *, aborted: bool) -> list[RunnerEvent]: ...


class ResumableRunner:
    """Base for agents run as one process per prompt, resumed by session id."""

    name = "oneshot"
    agent = "agent"  # how messages name the program

    def __init__(self) -> None:
        self._spec: LaunchSpec | None = None
        self._binary = ""
        self._proc: AgentProcess | None = None
        self._ended: list[AgentProcess] = []  # earlier runs' processes: kill() reaches their groups
        self._feeder: StdinFeeder | None = None
        self._translator: Translator | None = None
        self._pending: list[RunnerEvent] = []
        self._queued: deque[str] = deque()
        self._aborted = False
        self._closing = False  # no more runs: report AgentExited once no process is left
        self._exited = False  # AgentExited was reported
        self._last_returncode: int | None = None
        self._last_stderr = ""
        self._exit_deadline: float | None = None
        self._handle = AgentHandle()

    # --- subclass hooks ----------------------------------------------------------------

    def _resolve_binary(self, spec: LaunchSpec) -> str:
        raise NotImplementedError

    def _argv(self, spec: LaunchSpec, resume: str | None) -> list[str]:
        raise NotImplementedError

    def _env(self, spec: LaunchSpec) -> dict[str, str]:
        return child_env(spec)

    def _new_translator(self) -> Translator:
        raise NotImplementedError

    def _resume_id(self) -> str | None:
        """The agent session to resume for a follow-up."""
        raise NotImplementedError

    def _first_message(self, spec: LaunchSpec) -> str:
        return spec.prompt

    # --- AgentRunner -------------------------------------------------------------------

    @property
    def session_ref(self) -> str | None:
        return None  # subclasses: the agent's session id

    @property
    def handle(self) -> AgentHandle:
        pid = self._proc.pid if self._proc is not None else None
        self._handle = self._handle.moved_to(pid, self.session_ref)
        return self._handle

    def accepts(self) -> frozenset[CommandKind]:
        if self._spec is None or self._exited or self._closing:
            return ALWAYS_ACCEPTED
        answering = self._proc is not None and not (self._translator and self._translator.finished)
        return _IN_A_RUN if answering else _BETWEEN_RUNS

    def send(self, command: Command) -> None:
        if command.kind not in self.accepts():
            not_accepted(self.name, command)
        if command.kind == "follow_up":
            self._follow_up(command.message)
        elif command.kind == "steer":
            not_accepted(self.name, command)  # never accepted: one-shot agents read no stdin
        elif command.kind == "abort":
            self._abort()
        elif command.kind == "close":
            self._close()
        elif command.kind == "terminate":
            self._terminate()
        elif command.kind == "kill":
            self._kill()
        else:
            assert_never(command)

    def start(self, spec: LaunchSpec) -> None:
        if self._spec is not None:
            raise SpecialistsError(f"bug: {self.name} runner started twice")
        self._binary = self._resolve_binary(spec)
        self._spec = spec
        self._spawn(self._first_message(spec), spec.resume_session)

    def poll(self, timeout: float) -> list[RunnerEvent]:
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            if self._proc is not None:
                self._pump(deadline)
            self._report_exit_if_done()
            if self._pending or time.monotonic() >= deadline:
                break
            if self._proc is None:
                time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
        out, self._pending = self._pending, []
        return out

    def _follow_up(self, message: str) -> None:
        """Queued until the process that answered has exited, then resumed (`--resume`)."""
        self._queued.append(message)
        self._maybe_spawn_queued()

    def _abort(self) -> None:
        """No abort command in one-shot mode: interrupt the process; the run reports
        'aborted' and a follow-up can still resume the session."""
        self._queued.clear()
        if self._proc is not None and self._proc.poll_exit() is None:
            self._aborted = True
            if self._translator is not None:
                self._translator.aborting = True
            self._proc.signal_group(signal.SIGINT)

    def _close(self) -> None:
        self._closing = True
        self._queued.clear()
        if self._proc is not None and self._feeder is not None and not self._feeder.done:
            self._proc.close_stdin()  # nothing more to say

    def _terminate(self) -> None:
        self._closing = True
        self._queued.clear()
        if self._proc is not None:
            self._proc.signal_group(signal.SIGTERM)

    def _kill(self) -> None:
        self._closing = True
        self._queued.clear()
        if self._proc is not None:
            self._proc.signal_group(signal.SIGKILL)
        for ended in self._ended:  # children an exited run left behind
            ended.signal_group(signal.SIGKILL)

    # --- internals ---------------------------------------------------------------------

    def _spawn(self, message: str, resume: str | None) -> None:
        spec = self._spec
        assert spec is not None
        argv = [self._binary, *self._argv(spec, resume)]
        self._aborted = False
        self._translator = self._new_translator()
        self._exit_deadline = None
        self._proc = AgentProcess(
            argv,
            cwd=spec.cwd,
            env=self._env(spec),
            stderr_log=spec.job_dir / "stderr.log",
            stdin_pipe=True,
        )
        self._feeder = StdinFeeder(self._proc, message.encode("utf-8"))

    def _pump(self, deadline: float) -> None:
        proc, translator = self._proc, self._translator
        assert proc is not None and translator is not None
        feeding = self._feeder is not None and not self._feeder.done
        if self._feeder is not None:
            self._feeder.pump()
        wait = max(0.0, deadline - time.monotonic())
        lines = proc.read(min(wait, _FEED_SLICE) if feeding else wait)
        now = time.monotonic()
        for line in lines:
            obj, notice = parse_line(line)
            if notice is not None:
                self._pending.append(notice)
            if obj is not None:
                self._pending.extend(translator.feed(obj, now))
        if proc.poll_exit() is None:
            if proc.stdout_closed:  # about to exit: wait for it instead of spinning
                proc.wait(min(0.05, max(0.0, deadline - time.monotonic())))
            return
        # Exited: take what is left on stdout (bounded: a grandchild may hold the pipe).
        if self._exit_deadline is None:
            self._exit_deadline = now + _DRAIN_LIMIT
        if not proc.stdout_closed and now < self._exit_deadline:
            return
        self._on_process_exit(proc, translator)

    def _on_process_exit(self, proc: AgentProcess, translator: Translator) -> None:
        self._last_returncode = proc.returncode
        self._last_stderr = proc.stderr_tail
        proc.release()
        self._proc = None
        self._ended.append(proc)
        self._feeder = None
        answered = translator.finished
        description = describe_exit(self.agent, proc.returncode, proc.stderr_tail)
        self._pending.extend(translator.on_exit(description, aborted=self._aborted))
        if not answered and not self._aborted:
            self._closing = True  # the agent failed before answering: no more runs
        self._maybe_spawn_queued()

    def _maybe_spawn_queued(self) -> None:
        if self._proc is not None or not self._queued or self._closing:
            return
        resume = self._resume_id()
        message = self._queued.popleft()
        if resume is None:
            error = f"cannot follow up: {self.agent} reported no session to resume"
            self._pending.append(RunFinished(text=None, error=error))
            self._closing = True
            return
        self._spawn(message, resume)

    def _report_exit_if_done(self) -> None:
        if self._proc is None and self._closing and not self._exited:
            self._exited = True
            code, sig = exit_description(self._last_returncode)
            self._pending.append(AgentExited(code, sig, self._last_stderr))
