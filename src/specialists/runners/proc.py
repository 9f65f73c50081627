"""The one subprocess seam every CLI runner uses.

The agent runs in its own process group (so stop/kill reach its children too) and gets
SIGKILL if the supervisor dies (PR_SET_PDEATHSIG on Linux). stdout is read as bytes and split
on b"\\n" only; a line longer than `max_line` is not kept in memory: only its head survives,
as an `OversizedLine`, so a 100 MB line costs a bounded buffer (`raw=True` returns the chunks
as read instead). stderr goes to a log capped at `stderr_cap` bytes (None: no cap), and its
tail is kept for error messages.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from specialists.errors import AgentUnavailable
from specialists.jobs.files import create_private
from specialists.jobs.liveness import pid_exists

DEFAULT_MAX_LINE = 32 * 1024 * 1024
OVERSIZED_HEAD = 4096
STDERR_LOG_CAP = 1024 * 1024
STDERR_TAIL = 4096
_READ_CHUNK = 1 << 16


@dataclass(frozen=True)
class OversizedLine:
    head: bytes  # the first OVERSIZED_HEAD bytes of the line
    size: int


def _die_with_parent() -> None:
    """preexec hook: SIGKILL this child when the process that spawned it dies."""
    if not sys.platform.startswith("linux"):
        return
    libc_name = ctypes.util.find_library("c") or "libc.so.6"
    libc = ctypes.CDLL(libc_name, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)


class AgentProcess:
    """A spawned agent with a non-blocking line reader over its stdout."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        stderr_log: Path | None = None,
        stdin_pipe: bool = True,
        stdin_file: Path | None = None,
        max_line: int = DEFAULT_MAX_LINE,
        raw: bool = False,
        stderr_cap: int | None = STDERR_LOG_CAP,
    ) -> None:
        self.argv = list(argv)
        self._max_line = max_line
        self._raw = raw  # read() returns stdout chunks as they come, not lines
        self._stderr_cap = stderr_cap
        self._buf = bytearray()
        self._skipping: int = 0  # >0 while discarding the rest of an oversized line
        self._skip_head = b""
        self._stderr_log_path = stderr_log
        self._stderr_written = 0
        self._stderr_tail = bytearray()
        self._stdout_eof = False
        self._stderr_eof = False
        self.returncode: int | None = None
        stdin: int | object
        stdin_handle = None
        if stdin_file is not None:
            stdin_handle = open(stdin_file, "rb")  # noqa: SIM115 - closed after spawn
            stdin = stdin_handle
        else:
            stdin = subprocess.PIPE if stdin_pipe else subprocess.DEVNULL
        try:
            self.popen = subprocess.Popen(
                self.argv,
                cwd=str(cwd),
                env=dict(env) if env is not None else None,
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        except FileNotFoundError as exc:
            raise AgentUnavailable(
                f"cannot start agent: '{self.argv[0]}' is not installed or not on PATH"
            ) from exc
        except PermissionError as exc:
            raise AgentUnavailable(
                f"cannot start agent: '{self.argv[0]}' is not executable"
            ) from exc
        finally:
            if stdin_handle is not None:
                stdin_handle.close()
        assert self.popen.stdout is not None and self.popen.stderr is not None
        # 0600 and never through a symlink planted in the job directory.
        log_fd = create_private(stderr_log, os.O_WRONLY | os.O_APPEND) if stderr_log else None
        self._stderr_log = os.fdopen(log_fd, "ab") if log_fd is not None else None
        self._sel = selectors.DefaultSelector()
        for stream in (self.popen.stdout, self.popen.stderr):
            os.set_blocking(stream.fileno(), False)
            self._sel.register(stream, selectors.EVENT_READ)

    @property
    def pid(self) -> int:
        return self.popen.pid

    # --- reading ---------------------------------------------------------------------

    def read(self, timeout: float) -> list[bytes | OversizedLine]:
        """Complete stdout lines (raw: chunks) available within `timeout` seconds (maybe none).

        Once both pipes are closed there is nothing left to read: wait up to `timeout` for the
        exit instead, so a caller polling in a loop does not spin while the agent lingers.
        """
        out: list[bytes | OversizedLine] = []
        if self._stdout_eof and self._stderr_eof:
            if self.popen.returncode is None:
                self.wait(max(0.0, timeout))
            return out
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            remaining = deadline - time.monotonic()
            ready = self._sel.select(max(0.0, remaining)) if self._sel.get_map() else []
            for key, _ in ready:
                if key.fileobj is self.popen.stdout:
                    self._read_stdout(out)
                else:
                    self._read_stderr()
            if out or (self._stdout_eof and self._stderr_eof) or time.monotonic() >= deadline:
                return out

    def _read_stdout(self, out: list[bytes | OversizedLine]) -> None:
        assert self.popen.stdout is not None
        fd = self.popen.stdout.fileno()
        # Drain what is there now, but cap one call so a flood cannot starve the caller.
        for _ in range(64):
            try:
                chunk = os.read(fd, _READ_CHUNK)
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                raise
            if not chunk:
                self._stdout_eof = True
                self._sel.unregister(self.popen.stdout)
                if self._skipping:  # a last oversized line without newline
                    out.append(OversizedLine(self._skip_head, self._skipping))
                    self._skipping = 0
                elif self._buf:
                    out.append(bytes(self._buf))  # a last line without newline
                self._buf.clear()
                return
            if self._raw:
                out.append(chunk)
            else:
                self._split(chunk, out)

    def _split(self, chunk: bytes, out: list[bytes | OversizedLine]) -> None:
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                rest = chunk[start:]
                if self._skipping:
                    self._skipping += len(rest)
                else:
                    self._buf += rest
                    if len(self._buf) > self._max_line:
                        self._skip_head = bytes(self._buf[:OVERSIZED_HEAD])
                        self._skipping = len(self._buf)
                        self._buf.clear()
                return
            piece = chunk[start:nl]
            if self._skipping:
                out.append(OversizedLine(self._skip_head, self._skipping + len(piece)))
                self._skipping = 0
            elif self._buf:
                self._buf += piece
                if len(self._buf) > self._max_line:
                    out.append(OversizedLine(bytes(self._buf[:OVERSIZED_HEAD]), len(self._buf)))
                else:
                    out.append(bytes(self._buf))
                self._buf.clear()
            elif len(piece) > self._max_line:
                out.append(OversizedLine(piece[:OVERSIZED_HEAD], len(piece)))
            else:
                out.append(piece)
            start = nl + 1

    def _read_stderr(self) -> None:
        assert self.popen.stderr is not None
        try:
            chunk = os.read(self.popen.stderr.fileno(), _READ_CHUNK)
        except BlockingIOError:
            return
        if not chunk:
            self._stderr_eof = True
            self._sel.unregister(self.popen.stderr)
            return
        self._stderr_tail += chunk
        del self._stderr_tail[:-STDERR_TAIL]
        if self._stderr_log is None:
            return
        cap, written = self._stderr_cap, self._stderr_written
        self._stderr_written += len(chunk)
        if cap is None:
            self._stderr_log.write(chunk)
        elif written < cap:
            self._stderr_log.write(chunk[: cap - written])
        if cap is not None and written <= cap < self._stderr_written:  # once, at the cut
            self._stderr_log.write(b"\n[stderr.log capped]\n")
        if cap is None or written <= cap:
            self._stderr_log.flush()

    @property
    def stdout_closed(self) -> bool:
        return self._stdout_eof

    @property
    def stderr_tail(self) -> str:
        return self._stderr_tail.decode("utf-8", "replace")

    # --- writing and ending ------------------------------------------------------------

    def write(self, data: bytes) -> bool:
        """Write to stdin; False when the agent has gone (broken pipe)."""
        stdin = self.popen.stdin
        if stdin is None or stdin.closed:
            return False
        try:
            stdin.write(data)
            stdin.flush()
        except (BrokenPipeError, ValueError):
            return False
        return True

    def close_stdin(self) -> None:
        stdin = self.popen.stdin
        if stdin is not None and not stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                stdin.close()

    def poll_exit(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.popen.poll()
        return self.returncode

    def wait(self, timeout: float) -> int | None:
        try:
            self.returncode = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        return self.returncode

    def signal_group(self, sig: int) -> None:
        """Signal the agent's whole process group; a group already gone is fine.

        Also after the agent itself has exited, so children it left behind can be killed.
        While any of them lives, the kernel keeps the group's id from being reused as a pid;
        once the id names a live process again, the group is not ours any more.
        """
        if self.popen.returncode is not None and pid_exists(self.popen.pid):
            return
        try:
            os.killpg(self.popen.pid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(sig)

    def release(self) -> None:
        """Close our ends of the pipes and the stderr log."""
        with contextlib.suppress(KeyError, ValueError):
            self._sel.close()
        for stream in (self.popen.stdout, self.popen.stderr):
            if stream is not None:
                stream.close()
        self.close_stdin()
        if self._stderr_log is not None:
            self._stderr_log.close()


def exit_description(returncode: int | None) -> tuple[int | None, int | None]:
    """Popen returncode -> (exit_code, signal)."""
    if returncode is None:
        return None, None
    if returncode < 0:
        return None, -returncode
    return returncode, None
