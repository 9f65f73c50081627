"""bash: run a command through the process seam with a timeout and bounded output.

The command runs in its own process group, marked with its job and SIGKILLed if the loop
thread that started it ends (process/agent.py). A timeout or an abort kills the group and
everything below the command, also what left the group (`setsid`). Output (stdout and stderr
merged) is kept inline up to `bash_max_chars`; beyond that the head and tail stay inline and
the whole output goes to a spill file (capped at 64 MiB). When the command exits, output
still held open by a background child is not waited for.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from specialists.errors import AgentUnavailable
from specialists.native.tools.base import ToolContext, ToolFailure, ToolOutput, arg_str
from specialists.process.agent import AgentProcess

DESCRIPTION = (
    "Execute a bash command in the current working directory. Returns stdout and stderr. "
    "Long output keeps its head and tail and the full text is saved to a file. Optionally "
    "provide a timeout in seconds (default 120)."
)
PARAMETERS = {
    "type": "object",
    "required": ["command"],
    "properties": {
        "command": {"type": "string", "description": "Bash command to execute"},
        "timeout": {"type": "number", "description": "Timeout in seconds (default 120)"},
    },
}
MAX_TIMEOUT_S = 3600.0
SPILL_CAP = 64 * 1024 * 1024
_REAP_WAIT_S = 5.0  # after SIGKILL: a process in uninterruptible sleep dies when it wakes
_SLICE_S = 0.1  # how often an abort is looked for while the command runs

log = logging.getLogger(__name__)


class _Capture:
    """Head, a rolling tail, and (past the inline cap) a spill file of everything."""

    def __init__(self, cap: int, spill_dir: Path) -> None:
        self.head_cap = cap // 5
        self.tail_cap = cap - self.head_cap
        self.inline_cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.spill_dir = spill_dir
        self.spill_path: Path | None = None
        self._spill: IO[bytes] | None = None
        self._spilled = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
        if self._spill is None and len(self.tail) + len(chunk) > self.inline_cap:
            self._open_spill()  # until now `tail` held everything
        self.tail += chunk
        if self._spill is not None:
            if self._spilled < SPILL_CAP:
                self._spill.write(chunk[: SPILL_CAP - self._spilled])
                self._spilled += len(chunk)
            del self.tail[: max(0, len(self.tail) - self.tail_cap)]

    def _open_spill(self) -> None:
        self.spill_dir.mkdir(parents=True, exist_ok=True)
        self.spill_path = self.spill_dir / f"bash-{time.time_ns()}.txt"
        self._spill = open(self.spill_path, "wb")  # noqa: SIM115 - closed in text()
        self._spill.write(bytes(self.tail))
        self._spilled = len(self.tail)

    def text(self) -> str:
        if self._spill is not None:
            self._spill.close()
        if self.spill_path is None:
            return bytes(self.tail).decode("utf-8", "replace")
        omitted = self.total - len(self.head) - len(self.tail)
        capped = " (file capped at 64 MiB)" if self.total > SPILL_CAP else ""
        return (
            bytes(self.head).decode("utf-8", "replace")
            + f"\n[... {omitted} of {self.total} bytes omitted; full output in "
            f"{self.spill_path}{capped}. Use read with offset and limit on it ...]\n"
            + bytes(self.tail).decode("utf-8", "replace")
        )


def run(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
    command = arg_str(args, "command")
    timeout = args.get("timeout")
    if timeout is None:
        timeout_s = ctx.bash_timeout_s
    elif isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0:
        timeout_s = min(float(timeout), MAX_TIMEOUT_S)
    else:
        raise ToolFailure("timeout must be a positive number of seconds")
    return run_command(command, ctx, timeout_s)


def run_command(command: str, ctx: ToolContext, timeout_s: float) -> ToolOutput:
    try:
        proc = AgentProcess(
            ["bash", "-c", command],
            cwd=ctx.cwd,
            env=ctx.env,
            stdin_pipe=False,
            raw=True,
            merge_stderr=True,
        )
    except AgentUnavailable as exc:
        raise ToolFailure(f"cannot start bash: {exc.one_line()}") from exc
    ctx.process_groups.add(proc.pid)
    capture = _Capture(ctx.bash_max_chars, ctx.spill_dir)
    try:
        outcome = _pump(proc, capture, ctx, timeout_s)
    finally:
        proc.release()
    text = capture.text()
    code = proc.returncode
    if outcome == "timeout":
        return ToolOutput(
            f"{text}\n[timed out after {timeout_s:g} s; process group killed]", is_error=True
        )
    if outcome == "cancelled":
        return ToolOutput(f"{text}\n[aborted; process group killed]", is_error=True)
    if code != 0:
        return ToolOutput(f"{text}\n[exit code {code}]", is_error=True)
    return ToolOutput(text if text else "(no output)")


def _pump(proc: AgentProcess, capture: _Capture, ctx: ToolContext, timeout_s: float) -> str:
    """Read until the command has exited and its output is drained (the process seam's one
    limit: a background child holding the pipe open is not waited for), or until the timeout
    or an abort, which kill the command's group and every process below it."""
    deadline = time.monotonic() + timeout_s
    while not proc.done:
        if ctx.cancel.is_set():
            _kill(proc)
            return "cancelled"
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            _kill(proc)
            return "timeout"
        for chunk in proc.read(min(_SLICE_S, remaining)):
            if isinstance(chunk, bytes):
                capture.feed(chunk)
    return "exited"


def _kill(proc: AgentProcess) -> None:
    # SIGKILL at once, tree first: once the shell is gone, its children are orphans that can
    # no longer be told from the job's other processes (those die with the job).
    proc.kill_tree()
    proc.wait(_REAP_WAIT_S)


def kill_process_groups(groups: set[int]) -> None:
    """SIGKILL what is left of the job's bash commands (`cmd &` children, daemons)."""
    for pgid in sorted(groups):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            continue  # already gone
        except PermissionError as exc:
            log.warning("cannot kill process group %s: %s", pgid, exc)
    groups.clear()
