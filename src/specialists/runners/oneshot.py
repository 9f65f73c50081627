"""What the one-process-per-run CLI runners share (claude -p, codex exec, any command).

`ResumableRunner`: one agent process per run. The prompt goes to stdin through the process
seam (never blocking us: an agent that never reads a large prompt cannot hang the
supervisor), then stdin is closed. `follow_up` after a run spawns a new process that resumes
the agent's own session (`--resume`), so keep-alive jobs work with agents that exit after
every answer. The exit of a process that answered is held back until the supervisor closes
the runner: AgentExited means "no more runs", not "this process ended".
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import deque
from collections.abc import Mapping
from typing import Any, Protocol, assert_never

from specialists.base.errors import SpecialistsError
from specialists.process.agent import OversizedLine, exit_status
from specialists.process.host import AdoptedProcess, HostedProcess, spawn_agent
from specialists.process.jobenv import agent_env
from specialists.process.lookup import find_executable
from specialists.runners.adopting import check_runner, events_held, held_events
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

# A one-shot agent takes no steer; a follow-up once the run in progress has answered.
_IN_A_RUN: frozenset[CommandKind] = ALWAYS_ACCEPTED | {"abort"}
_BETWEEN_RUNS: frozenset[CommandKind] = ALWAYS_ACCEPTED | {"follow_up"}


def find_binary(default: str, spec: LaunchSpec, env_var: str, not_installed: str) -> str:
    """options["bin"], then the environment variable, then `default` on the agent's PATH."""
    explicit = spec.options.get("bin") or spec.env.get(env_var) or os.environ.get(env_var)
    search_path = spec.env.get("PATH") or os.environ.get("PATH")
    name = str(explicit) if explicit else default
    return find_executable(
        name, path=search_path, not_installed=not_installed, configured=bool(explicit)
    )


def child_env(spec: LaunchSpec, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The agent's environment: ours, the job's, `extra`, and the job's process mark."""
    return agent_env(spec.job_dir, spec.env, extra)


def parse_line(line: bytes | OversizedLine) -> tuple[dict[str, Any] | None, Activity | None]:
    """A stdout line -> (object, None) or (None, a notice saying why it was skipped)."""
    if isinstance(line, OversizedLine):
        notice = f"skipped an oversized output line ({line.size} bytes)"
        return None, Activity("notice", {"message": notice})
    if not line.strip():
        return None, None
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
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

    def adopt_state(self, now: float) -> dict[str, Any]: ...

    def restore(self, state: Mapping[str, Any], now: float) -> None: ...


class ResumableRunner:
    """Base for agents run as one process per prompt, resumed by session id."""

    name = "oneshot"
    agent = "agent"  # how messages name the program

    def __init__(self) -> None:
        self._spec: LaunchSpec | None = None
        self._binary = ""
        self._proc: HostedProcess | None = None
        self._last: HostedProcess | None = None  # the last run's process, after it exited
        self._translator: Translator | None = None
        self._pending: list[RunnerEvent] = []
        self._queued: deque[str] = deque()
        self._aborted = False
        self._closing = False  # no more runs: report AgentExited once no process is left
        self._exited = False  # AgentExited was reported
        self._last_returncode: int | None = None
        self._last_stderr = ""
        self._handle = AgentHandle()
        self._runs = 0  # processes started (the first answers the task)
        self._message = ""  # what the run in progress answers, after the first

    # --- subclass hooks ----------------------------------------------------------------

    def _resolve_binary(self, spec: LaunchSpec) -> str:
        raise NotImplementedError

    def _argv(self, spec: LaunchSpec, resume: str | None) -> list[str]:
        raise NotImplementedError

    def _env(self, spec: LaunchSpec) -> dict[str, str]:
        return child_env(spec)

    def _new_translator(self) -> Translator:
        raise NotImplementedError

    def _own_state(self) -> dict[str, Any]:
        """The subclass's part of `adopt_state` (its session id)."""
        return {}

    def _restore_own(self, state: Mapping[str, Any]) -> None:
        return None

    def _first_message(self, spec: LaunchSpec) -> str:
        return spec.prompt

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

    # --- a successor supervisor takes the agent over (executors/job.py `Adoptable`) ------

    def adopt_state(self) -> dict[str, Any] | None:
        """The translator of the run in progress (or of the last one, between runs: the
        session to resume), the follow-ups queued behind it, and what the run answers."""
        held = held_events(self._pending)
        if self._spec is None or self._exited or self._closing or held is None:
            return None
        now = time.monotonic()
        translator = self._translator
        return {
            "runner": self.name,
            "idle": self._proc is None,
            "runs": self._runs,
            "message": self._message if self._runs > 1 else None,
            "queued": list(self._queued),
            "aborted": self._aborted,
            "last_returncode": self._last_returncode,
            "last_stderr": self._last_stderr,
            "pending": held,
            "translator": None if translator is None else translator.adopt_state(now),
            **self._own_state(),
        }

    def adopt(
        self, spec: LaunchSpec, state: Mapping[str, Any], proc: AdoptedProcess | None
    ) -> None:
        """Go on from a dead supervisor's checkpoint: between runs, nothing runs (the next
        follow-up resumes the session); in a run, on its process, read on from the
        checkpoint. Its input is sent again only if the node never applied it."""
        check_runner(state, self.name)
        if self._spec is not None:
            raise SpecialistsError(f"bug: {self.name} runner started twice")
        if state["idle"] != (proc is None):
            raise SpecialistsError(f"bug: {self.name} runner adopted with the wrong process")
        self._binary = self._resolve_binary(spec)
        self._spec = spec
        self._runs, self._message = int(state["runs"]), str(state.get("message") or "")
        self._queued = deque(str(m) for m in state["queued"])
        self._aborted = bool(state["aborted"])
        self._last_returncode, self._last_stderr = state["last_returncode"], state["last_stderr"]
        self._pending = events_held(state["pending"])
        self._restore_own(state)
        if state["translator"] is not None:
            self._translator = self._new_translator()
            self._translator.restore(state["translator"], time.monotonic())
        if proc is None:
            return
        if self._translator is None:
            raise SpecialistsError(f"bug: {self.name} runner adopted a run without its state")
        self._proc = proc
        if proc.renumber_input(0) < 2:  # the message, then the end of input: writes 1 and 2
            first = self._runs <= 1
            proc.send((self._first_message(spec) if first else self._message).encode("utf-8"))
            proc.end_input()

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
        if self._proc is not None and self._proc.input_pending:
            self._proc.close_stdin()  # nothing more to say

    def _terminate(self) -> None:
        self._closing = True
        self._queued.clear()
        if self._proc is not None:
            self._proc.signal_group(signal.SIGTERM)

    def _kill(self) -> None:
        """SIGKILL everything of the job: the agent's group and tree, and every process marked
        with the job (children an earlier run left behind, a bash tool in its own session)."""
        self._closing = True
        self._queued.clear()
        proc = self._proc or self._last
        if proc is not None:
            proc.kill_job()

    def _spawn(self, message: str, resume: str | None) -> None:
        spec = self._spec
        assert spec is not None
        argv = [self._binary, *self._argv(spec, resume)]
        self._aborted = False
        self._runs += 1
        self._message = message if self._runs > 1 else ""
        self._translator = self._new_translator()
        self._proc = spawn_agent(
            spec.host,
            argv,
            cwd=spec.cwd,
            env=self._env(spec),
            stderr_log=spec.job_dir / "stderr.log",
            stdin_pipe=True,
        )
        self._proc.send(message.encode("utf-8"))
        self._proc.end_input()

    def _pump(self, deadline: float) -> None:
        proc, translator = self._proc, self._translator
        assert proc is not None and translator is not None
        lines = proc.read(max(0.0, deadline - time.monotonic()))
        now = time.monotonic()
        for line in lines:
            obj, notice = parse_line(line)
            if notice is not None:
                self._pending.append(notice)
            if obj is not None:
                self._pending.extend(translator.feed(obj, now))
        if proc.done:
            self._on_process_exit(proc, translator)

    def _on_process_exit(self, proc: HostedProcess, translator: Translator) -> None:
        self._last_returncode = proc.returncode
        self._last_stderr = proc.stderr_tail
        proc.release()
        self._proc, self._last = None, proc
        answered = translator.finished
        description = proc.describe_exit(self.agent)
        self._pending.extend(translator.on_exit(description, aborted=self._aborted))
        if not answered and not self._aborted:
            self._closing = True  # the agent failed before answering: no more runs
        self._maybe_spawn_queued()

    def _maybe_spawn_queued(self) -> None:
        if self._proc is not None or not self._queued or self._closing:
            return
        resume = self.session_ref  # the agent session a follow-up resumes
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
            code, sig = exit_status(self._last_returncode)
            self._pending.append(AgentExited(code, sig, self._last_stderr))
