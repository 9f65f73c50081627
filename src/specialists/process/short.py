"""Short commands (git, bd, pre/post scripts, version probes) run to the end as a value.

`run_short` never raises for what a command does: not installed, not executable, a missing
working directory, a timeout (the command's whole process group is killed), death by a
signal and a non-zero exit all come back in the `CommandResult`. It never hangs either: once
the command has exited, reading stops as soon as its pipes are empty, even if a background
child it left behind keeps them open. Each stream keeps its last `output_cap` bytes.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from specialists.base.tuples import NamedTuple
from specialists.process import spawn as spawning

DEFAULT_TIMEOUT_S = 30.0
OUTPUT_CAP = 16 * 1024 * 1024
_CHUNK = 1 << 16
_SLICE_S = 0.1  # without a pidfd, how often the loop looks for the exit


class CommandResult(NamedTuple):
    """How a short command ended. `error` says why it did not exit by itself, if it did not."""

    argv: tuple[str, ...]
    code: int | None  # the exit code; None when it never started, timed out or was killed
    out: bytes  # the streams as written (git paths need not be UTF-8)
    err: bytes
    error: str | None = None  # "not installed or not on PATH", "timed out after 5s", ...

    @property
    def ok(self) -> bool:
        return self.error is None and self.code == 0

    @property
    def stdout(self) -> str:
        return self.out.decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        return self.err.decode("utf-8", "replace")

    def describe(self, shown: str | None = None) -> str:
        """One line for a message: "`git rev-parse` exited with code 128: fatal: ..."."""
        if shown is None:
            shown = " ".join([os.path.basename(self.argv[0]), *self.argv[1:2]])
        if self.error is not None:
            return f"`{shown}` {self.error}"
        what = f"`{shown}` exited with code {self.code}"
        last = [line.strip() for line in self.stderr.splitlines() if line.strip()][-1:]
        return f"{what}: {last[0][:300]}" if last else what


def run_short(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    input: bytes | None = None,
    output_cap: int = OUTPUT_CAP,
) -> CommandResult:
    """Run `argv` (no shell) with stdin from `input` or /dev/null; see the module docstring."""
    shown = tuple(argv)
    if not shown:
        return CommandResult(shown, None, b"", b"", "is an empty command")
    try:
        proc = spawning.spawn(
            shown,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except spawning.SpawnFailed as exc:
        return CommandResult(shown, None, b"", b"", exc.reason)
    try:
        out, err, timed_out = _collect(proc, input, timeout, output_cap)
    finally:
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if proc.poll() is None:  # only when _collect itself failed: never leave it behind
            _kill_group(proc)
        spawning.reaped(proc)
    code, sig = spawning.exit_status(proc.returncode)
    if timed_out:
        return CommandResult(shown, None, out, err, f"timed out after {timeout:g}s")
    if sig is not None:
        return CommandResult(shown, None, out, err, f"was killed by {spawning.signal_name(sig)}")
    return CommandResult(shown, code, out, err)


def _collect(
    proc: subprocess.Popen[bytes], data: bytes | None, timeout: float, cap: int
) -> tuple[bytes, bytes, bool]:
    assert proc.stdout is not None and proc.stderr is not None
    tails = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    pending = memoryview(data or b"")
    deadline = time.monotonic() + max(0.0, timeout)
    exited_at: float | None = None
    timed_out = False
    with selectors.DefaultSelector() as sel:
        for fd in tails:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
        exit_watch = spawning.exit_fd(proc.pid)
        if exit_watch is not None:
            sel.register(exit_watch, selectors.EVENT_READ)
        try:
            while any(fd in sel.get_map() for fd in tails):
                now = time.monotonic()
                if exited_at is None and proc.poll() is not None:
                    exited_at = now
                if exited_at is None and now >= deadline:
                    timed_out = True
                    _kill_group(proc)
                    exited_at = time.monotonic()
                    continue
                if exited_at is not None and now - exited_at >= spawning.DRAIN_LIMIT_S:
                    break  # a descendant keeps writing to the inherited pipe
                if exited_at is not None:
                    wait = 0.0  # everything the command wrote is in the pipes already
                elif exit_watch is not None:
                    wait = deadline - now
                else:
                    wait = min(_SLICE_S, deadline - now)
                ready = sel.select(wait)
                if exited_at is not None and not ready:
                    break  # drained
                for key, events in ready:
                    fd = int(key.fd)
                    if fd == exit_watch:
                        sel.unregister(fd)
                    elif events & selectors.EVENT_WRITE:
                        pending = _feed(sel, proc, pending)
                    else:
                        _take(sel, fd, tails[fd], cap)
        finally:
            if exit_watch is not None:
                os.close(exit_watch)
    if proc.returncode is None:
        proc.wait()
    out, err = tails.values()
    return bytes(out), bytes(err), timed_out


def _take(sel: selectors.BaseSelector, fd: int, tail: bytearray, cap: int) -> None:
    try:
        chunk = os.read(fd, _CHUNK)
    except BlockingIOError:
        return
    if not chunk:
        sel.unregister(fd)
        return
    tail += chunk
    if len(tail) > cap:
        del tail[: len(tail) - cap]


def _feed(
    sel: selectors.BaseSelector, proc: subprocess.Popen[bytes], pending: memoryview
) -> memoryview:
    assert proc.stdin is not None
    fd = proc.stdin.fileno()
    try:
        written = os.write(fd, pending[:_CHUNK]) if pending else 0
    except BlockingIOError:
        return pending
    except OSError:  # EPIPE: it stopped reading; its exit status tells the rest
        written = len(pending)
    pending = pending[written:]
    if not pending:
        sel.unregister(fd)
        proc.stdin.close()
    return pending


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # The leader is not reaped yet, so its group id cannot name anyone else's group.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
