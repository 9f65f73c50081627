"""bash: run a command in its own process group with a timeout and bounded output.

Output (stdout and stderr merged) is kept inline up to `bash_max_chars`; beyond that the head
and tail stay inline and the whole output goes to a spill file (capped at 64 MiB). When the
command exits, output still held open by a background child is not waited for.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from specialists.native.tools.base import ToolContext, ToolFailure, ToolOutput, arg_str

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
_EXIT_GRACE_S = 0.2  # after exit, how long to drain a pipe a background child holds open
_KILL_GRACE_S = 1.0

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
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=str(ctx.cwd),
            env=dict(ctx.env) if ctx.env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolFailure(f"cannot start bash: {exc}") from exc
    ctx.process_groups.add(proc.pid)
    capture = _Capture(ctx.bash_max_chars, ctx.spill_dir)
    outcome = _pump(proc, capture, ctx, timeout_s)
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


def _pump(
    proc: subprocess.Popen[bytes], capture: _Capture, ctx: ToolContext, timeout_s: float
) -> str:
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    deadline = time.monotonic() + timeout_s
    exited_at: float | None = None
    eof = False
    outcome = "exited"
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if ctx.cancel.is_set():
                outcome = "cancelled"
                break
            if now >= deadline:
                outcome = "timeout"
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and (eof or now - exited_at > _EXIT_GRACE_S):
                break
            wait = min(0.1, max(0.0, deadline - now))
            if eof:
                # The command closed its output (`exec >log`) but runs on: the timeout and
                # abort still apply, so wait here rather than in an unbounded proc.wait().
                ctx.cancel.wait(wait)
                continue
            if not sel.select(wait):
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                eof = True
                sel.unregister(fd)
                continue
            capture.feed(chunk)
    if outcome != "exited":
        _kill_group(proc)
    proc.stdout.close()
    if proc.poll() is None:
        proc.wait()
    return outcome


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    for sig, grace in ((signal.SIGTERM, _KILL_GRACE_S), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(grace)
            # The leader is gone; make sure no child of the group survives it.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue


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
