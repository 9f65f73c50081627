"""Command runner (the external-cli profile): any installed command as a one-shot agent.

options: `command` (str, required), `args` (list of str), `bin` is not used. No shell. The
system prompt and the task go to stdin ("\\n\\n" between them), then stdin is closed. All
of stdout goes to <job>/stdout.log and its last 64 KiB are kept in memory as the answer;
stderr goes to <job>/stderr.log in full (the external-cli profile keeps full logs). Exit 0 ->
the answer; anything else -> an error naming the exit code and the last stderr line. Timeout
and stop are the supervisor's: terminate() signals the command's process group; kill()
reaches everything of the job, also after the command exited (children it left behind, in
its group or out of it).
"""

from __future__ import annotations

import codecs
import os
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, assert_never

from specialists.base.errors import ConfigError, SpecialistsError
from specialists.process.agent import exit_status
from specialists.process.host import AdoptedProcess, HostedProcess, spawn_agent
from specialists.process.lines import TailBuffer
from specialists.process.lookup import find_executable
from specialists.runners.adopting import check_runner
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
    agent_started,
    not_accepted,
)
from specialists.runners.oneshot import child_env
from specialists.store.files import create_private

ANSWER_TAIL = 64 * 1024
STDOUT_LOG = "stdout.log"
_RUNNING: frozenset[CommandKind] = ALWAYS_ACCEPTED | {"abort"}  # one run, no follow-ups


def command_argv(options: Mapping[str, Any]) -> list[str]:
    delivery = options.get("prompt_delivery", options.get("promptDelivery", "stdin"))
    if delivery != "stdin":
        raise ConfigError(f"command runner: prompt delivery {delivery!r} is not supported (stdin)")
    command = options.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ConfigError("command runner: options.command must be a non-empty string")
    args = options.get("args", [])
    if not isinstance(args, Sequence) or isinstance(args, str):
        raise ConfigError("command runner: options.args must be a list of strings")
    if not all(isinstance(a, str) for a in args):
        raise ConfigError("command runner: options.args must be a list of strings")
    return [command, *args]


def command_input(spec: LaunchSpec) -> str:
    return f"{spec.system_prompt}\n\n{spec.prompt}" if spec.system_prompt else spec.prompt


def resolve_command(command: str, env: Mapping[str, str]) -> str:
    not_installed = f"command {command!r} is not installed or not executable"
    return find_executable(command, path=env.get("PATH"), not_installed=not_installed)


class CommandRunner:
    name = "command"

    def __init__(self) -> None:
        self._spec: LaunchSpec | None = None
        self._proc: HostedProcess | None = None
        self._ended: HostedProcess | None = None  # the command, after it exited
        self._log: BinaryIO | None = None
        self._tail = TailBuffer(ANSWER_TAIL)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending: list[RunnerEvent] = []
        self._said_text = False
        self._handle = AgentHandle()

    @property
    def handle(self) -> AgentHandle:
        self._handle = self._handle.moved_to(self._proc.pid if self._proc else None, None)
        return self._handle

    def accepts(self) -> frozenset[CommandKind]:
        """A plain command is one-shot: no follow-up, no steer, ever."""
        return _RUNNING if self._proc is not None else ALWAYS_ACCEPTED

    def send(self, command: Command) -> None:
        if command.kind not in self.accepts():
            not_accepted(self.name, command)
        if command.kind == "follow_up" or command.kind == "steer":
            not_accepted(self.name, command)
        elif command.kind == "abort" or command.kind == "terminate":
            self._terminate()  # a plain command has no gentler way to stop a run
        elif command.kind == "close":
            self._close()
        elif command.kind == "kill":
            self._kill()
        else:
            assert_never(command)

    def start(self, spec: LaunchSpec) -> None:
        if self._spec is not None:
            raise SpecialistsError(f"bug: {self.name} runner started twice")
        env = child_env(spec)
        argv = self._argv(spec, env)
        self._spec = spec
        self._proc = spawn_agent(
            spec.host,
            argv,
            cwd=spec.cwd,
            env=env,
            stderr_log=spec.job_dir / "stderr.log",
            raw=True,
            stderr_cap=None,
        )
        self._pending.append(agent_started())  # a command has no start-up we can tell
        log_fd = create_private(Path(spec.job_dir) / STDOUT_LOG, os.O_WRONLY | os.O_TRUNC)  # 0600
        self._log = os.fdopen(log_fd, "wb")
        stdin = self._stdin(spec)
        if stdin:
            self._proc.send(stdin)
        self._proc.end_input()

    def _argv(self, spec: LaunchSpec, env: Mapping[str, str]) -> list[str]:
        argv = command_argv(spec.options)
        argv[0] = resolve_command(argv[0], env)
        return argv

    def _stdin(self, spec: LaunchSpec) -> bytes:
        return command_input(spec).encode("utf-8")

    # --- a successor supervisor takes the command over (executors/job.py) ---------------

    def adopt_state(self) -> dict[str, Any] | None:
        """What the command's output has come to so far: stdout.log's size (its tail is
        the answer) and the bytes of a character still cut in two."""
        if self._proc is None or self._log is None:
            return None
        undecoded, _ = self._decoder.getstate()
        size = os.fstat(self._log.fileno()).st_size
        return {
            "runner": self.name,
            "stdout_bytes": size,
            "said_text": self._said_text,
            "undecoded": undecoded.hex(),
        }

    def adopt(
        self, spec: LaunchSpec, state: Mapping[str, Any], proc: AdoptedProcess | None
    ) -> None:
        """Go on where a dead supervisor's last checkpoint stopped: stdout.log cut back to
        what it had recorded (the rest comes again), the answer's tail read back from it.
        The input is sent again: the node applies each numbered write once."""
        check_runner(state, self.name)
        if self._spec is not None or proc is None:
            raise SpecialistsError(
                "bug: command runner started twice, or adopted without a process"
            )
        self._spec, self._proc = spec, proc
        fd = os.open(spec.job_dir / STDOUT_LOG, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        self._log = os.fdopen(fd, "r+b")
        size = min(int(state["stdout_bytes"]), os.fstat(fd).st_size)
        self._log.truncate(size)
        self._log.seek(max(0, size - ANSWER_TAIL))
        self._tail.add(self._log.read())
        self._tail.total = size
        self._log.seek(size)
        self._said_text = bool(state.get("said_text"))
        self._decoder.setstate((bytes.fromhex(str(state.get("undecoded", ""))), 0))
        proc.renumber_input(0)
        stdin = self._stdin(spec)
        if stdin:
            proc.send(stdin)
        proc.end_input()

    def poll(self, timeout: float) -> list[RunnerEvent]:
        deadline = time.monotonic() + max(0.0, timeout)
        while self._proc is not None:
            self._pump(deadline)
            if self._pending or time.monotonic() >= deadline:
                break
        out, self._pending = self._pending, []
        return out

    def _close(self) -> None:
        if self._proc is not None:
            self._proc.close_stdin()

    def _terminate(self) -> None:
        if self._proc is not None:
            self._proc.signal_group(signal.SIGTERM)

    def _kill(self) -> None:
        proc = self._proc or self._ended  # after the exit: what the command left behind
        if proc is not None:
            proc.kill_job()

    def _pump(self, deadline: float) -> None:
        proc = self._proc
        assert proc is not None
        for chunk in proc.read(max(0.0, deadline - time.monotonic())):
            if isinstance(chunk, bytes):
                self._on_stdout(chunk)
        if proc.done:
            self._on_exit(proc)

    def _on_stdout(self, chunk: bytes) -> None:
        assert self._log is not None
        self._log.write(chunk)
        self._log.flush()
        self._tail.add(chunk)
        if not self._said_text:
            self._said_text = True
            self._pending.append(Activity("text"))
        text = self._decoder.decode(chunk)
        if text:
            self._pending.append(AnswerDelta(text))

    def _finished(self, returncode: int | None, proc: HostedProcess) -> RunFinished:
        if returncode == 0:
            return RunFinished(text=self._tail.text())
        return RunFinished(text=None, error=proc.describe_exit("command"))

    def _on_exit(self, proc: HostedProcess) -> None:
        stderr_tail = proc.stderr_tail
        returncode = proc.returncode
        proc.release()
        if self._log is not None:
            self._log.close()
            self._log = None
        self._proc, self._ended = None, proc
        self._pending.append(self._finished(returncode, proc))
        code, sig = exit_status(returncode)
        self._pending.append(AgentExited(code, sig, stderr_tail))
