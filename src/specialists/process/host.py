"""The process-host seam: what a runner spawns its agent through, and what it gets back.

`ProcessHost.spawn(argv, ...)` takes the arguments `AgentProcess` takes and returns a
`HostedProcess`: the part of `AgentProcess` the runners use (stdin that never blocks, stdout
as lines or chunks, stderr to a capped log, the exit, signals to the group, killing the tree
and the job). A host is chosen per job (`LaunchSpec.host`); None is this machine, served by
`AgentProcess` itself, so the local path costs nothing new.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from specialists.process.agent import DEFAULT_MAX_LINE, STDERR_LOG_CAP, AgentProcess
from specialists.process.lines import Line


class HostedProcess(Protocol):
    """One agent process, wherever it runs (see process/agent.py for the semantics)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def send(self, data: bytes) -> None: ...

    def end_input(self) -> None: ...

    def close_stdin(self) -> None: ...

    @property
    def input_pending(self) -> bool: ...

    def read(self, timeout: float) -> list[Line]: ...

    @property
    def done(self) -> bool: ...

    @property
    def stdout_closed(self) -> bool: ...

    @property
    def stderr_tail(self) -> str: ...

    def poll_exit(self) -> int | None: ...

    def wait(self, timeout: float) -> int | None: ...

    def describe_exit(self, who: str) -> str: ...

    def signal_group(self, sig: int) -> None: ...

    def kill_tree(self) -> None: ...

    def kill_job(self) -> None: ...

    def release(self) -> None: ...


class AdoptedProcess(HostedProcess, Protocol):
    """A running agent that a restarted supervisor took over (executors/job.py `adopt`)."""

    def renumber_input(self, wseq: int) -> int: ...


class ProcessHost(Protocol):
    """Where a job's agent processes run. Raises AgentUnavailable when one cannot start."""

    def spawn(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        stderr_log: Path | None = None,
        stdin_pipe: bool = True,
        max_line: int = DEFAULT_MAX_LINE,
        raw: bool = False,
        stderr_cap: int | None = STDERR_LOG_CAP,
    ) -> HostedProcess: ...


def spawn_agent(
    host: ProcessHost | None,
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    stderr_log: Path | None = None,
    stdin_pipe: bool = True,
    max_line: int = DEFAULT_MAX_LINE,
    raw: bool = False,
    stderr_cap: int | None = STDERR_LOG_CAP,
) -> HostedProcess:
    """Start an agent through `host`; None starts it here, as an AgentProcess."""
    if host is None:
        return AgentProcess(
            argv,
            cwd=cwd,
            env=env,
            stderr_log=stderr_log,
            stdin_pipe=stdin_pipe,
            max_line=max_line,
            raw=raw,
            stderr_cap=stderr_cap,
        )
    return host.spawn(
        argv,
        cwd=cwd,
        env=env,
        stderr_log=stderr_log,
        stdin_pipe=stdin_pipe,
        max_line=max_line,
        raw=raw,
        stderr_cap=stderr_cap,
    )
