"""The agent-process seam: one long-lived agent CLI (pi, claude -p, codex exec, a command).

- Spawned through process.spawn: own session and process group, SIGKILL when the thread that
  started it ends (PR_SET_PDEATHSIG), marked with its job (jobs/proctree.py) when the
  environment carries the mark.
- stdin never blocks the caller: `send` queues bytes that the reader writes as the pipe takes
  them; an agent that never reads a large prompt cannot hang us. `end_input` closes stdin once
  everything queued is written.
- stdout is read as bytes and split on b"\\n" only (process.lines); `raw=True` returns chunks.
  stderr goes to a log capped at `stderr_cap` bytes (None: no cap); its tail is kept.
- "Exited and drained" (`done`) has one limit, spawn.DRAIN_LIMIT_S: after the exit, reading
  stops as soon as the pipes are empty, or at the limit if a descendant keeps writing.
- `describe_exit` is the one-line account of an exit every runner and the supervisor use.
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

from specialists.base.errors import AgentUnavailable
from specialists.base.lazy import logger
from specialists.process.lines import Line, LineSplitter, OversizedLine
from specialists.process.orphans import tend_orphans
from specialists.process.spawn import (
    DRAIN_LIMIT_S,
    SpawnFailed,
    exit_fd,
    exit_status,
    reaped,
    signal_name,
    spawn,
)
from specialists.store import proctree
from specialists.store.files import create_private
from specialists.store.liveness import pid_exists

__all__ = ["AgentProcess", "OversizedLine", "describe_exit", "exit_status"]

log = logger(__name__)

DEFAULT_MAX_LINE = 32 * 1024 * 1024
STDERR_LOG_CAP = 1024 * 1024
STDERR_TAIL = 4096
_READ_CHUNK = 1 << 16
_CHUNKS_PER_READ = 64  # a flood cannot starve the caller: at most 4 MiB per stream per call


def describe_exit(
    who: str, exit_code: int | None, sig: int | None, stderr_tail: str = "", *, when: str = ""
) -> str:
    """One line: "claude exited with code 1: <last stderr line>", "agent killed by SIGKILL
    before finishing" (`when`="before finishing")."""
    what = f"{who} killed by {signal_name(sig)}" if sig is not None else f"{who} exited"
    if sig is None:
        what += f" with code {exit_code}"
    if when:
        what += f" {when}"
    last = [line.strip() for line in stderr_tail.splitlines() if line.strip()][-1:]
    return f"{what}: {last[0][:300]}" if last else what


class AgentProcess:
    """A spawned agent with a non-blocking reader of its stdout and writer of its stdin."""

    def __init__(
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
        merge_stderr: bool = False,
    ) -> None:
        self.argv = list(argv)
        self._raw = raw  # read() returns stdout chunks as they come, not lines
        self._lines = LineSplitter(max_line)
        self._stderr_cap = stderr_cap
        self._stderr_written = 0
        self._stderr_tail = bytearray()
        self._outbox = bytearray()  # queued for stdin
        self._end_input = False  # close stdin once the outbox is written
        self.input_broken = False  # the agent closed its stdin before taking everything
        self._stdout_eof = False
        self._exited_at: float | None = None
        self._done = False
        self.returncode: int | None = None
        self._mark = (env if env is not None else os.environ).get(proctree.MARK_ENV)
        try:
            self.popen = spawn(
                self.argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                die_with_parent=True,
            )
        except SpawnFailed as exc:
            raise AgentUnavailable(f"cannot start agent: '{self.argv[0]}' {exc.reason}") from exc
        self.ident = proctree.identify(self.popen.pid)
        assert self.popen.stdout is not None
        # 0600 and never through a symlink planted in the job directory.
        log_fd = create_private(stderr_log, os.O_WRONLY | os.O_APPEND) if stderr_log else None
        self._stderr_log = os.fdopen(log_fd, "ab") if log_fd is not None else None
        self._sel = selectors.DefaultSelector()
        self._stderr_eof = self.popen.stderr is None  # merged into stdout
        for stream in (self.popen.stdout, self.popen.stderr):
            if stream is not None:
                os.set_blocking(stream.fileno(), False)
                self._sel.register(stream, selectors.EVENT_READ)
        self._exit_fd = exit_fd(self.popen.pid)
        if self._exit_fd is not None:
            self._sel.register(self._exit_fd, selectors.EVENT_READ)

    @property
    def pid(self) -> int:
        return self.popen.pid

    # --- stdin ---------------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        """Queue `data` for stdin; what the pipe does not take now goes out on later reads."""
        stdin = self.popen.stdin
        if stdin is None or stdin.closed or self.input_broken:
            return
        if not self._outbox:
            os.set_blocking(stdin.fileno(), False)
        self._outbox += data
        self._write_stdin()

    def end_input(self) -> None:
        """Close stdin once everything queued has been written."""
        self._end_input = True
        self._write_stdin()

    def close_stdin(self) -> None:
        """Close stdin now; whatever is still queued is dropped."""
        self._outbox.clear()
        stdin = self.popen.stdin
        if stdin is not None and not stdin.closed:
            with contextlib.suppress(KeyError, ValueError):
                self._sel.unregister(stdin)
            with contextlib.suppress(BrokenPipeError):
                stdin.close()

    @property
    def input_pending(self) -> bool:
        return bool(self._outbox)

    def _write_stdin(self) -> None:
        stdin = self.popen.stdin
        if stdin is None or stdin.closed:
            return
        while self._outbox:
            try:
                written = os.write(stdin.fileno(), self._outbox[:_READ_CHUNK])
            except BlockingIOError:
                break
            except OSError:  # EPIPE: the agent is gone or ignores stdin; its exit says why
                log.debug("agent %s closed stdin with %d bytes unsent", self.pid, len(self._outbox))
                self.input_broken = True
                self._outbox.clear()
                break
            del self._outbox[:written]
        registered = stdin in self._sel.get_map()
        if self._outbox and not registered:
            self._sel.register(stdin, selectors.EVENT_WRITE)
        elif not self._outbox:
            if registered:
                self._sel.unregister(stdin)
            if self._end_input or self.input_broken:
                self.close_stdin()

    # --- reading ---------------------------------------------------------------------------

    def read(self, timeout: float) -> list[Line]:
        """Complete stdout lines (raw: chunks) available within `timeout` seconds (maybe none).

        Once the agent has exited, what is left in the pipes is returned without waiting, and
        `done` turns true. A call after that sleeps `timeout` (a polling caller does not spin).
        """
        tend_orphans()
        out: list[Line] = []
        if self._done:
            time.sleep(max(0.0, timeout))
            return out
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            if self.poll_exit() is not None:
                self._drain(out)
                return out
            if not self._reading():  # both pipes closed, the agent lives: wait for its exit
                self.wait(max(0.0, deadline - time.monotonic()))
                if self.returncode is None:
                    return out
                continue
            for key, _ in self._sel.select(max(0.0, deadline - time.monotonic())):
                self._dispatch(key.fileobj, out)
            if out or time.monotonic() >= deadline:
                return out

    def _reading(self) -> bool:
        return not (self._stdout_eof and self._stderr_eof)

    def _dispatch(self, fileobj: object, out: list[Line]) -> bool:
        """Handle one ready descriptor; True when it gave data."""
        if fileobj is self.popen.stdout:
            return self._read_stdout(out)
        if fileobj is self.popen.stderr:
            return self._read_stderr()
        if fileobj is self.popen.stdin:
            self._write_stdin()
        elif self._exit_fd is not None and fileobj == self._exit_fd:
            self._sel.unregister(self._exit_fd)
        return False

    def _drain(self, out: list[Line]) -> None:
        """After the exit: take what the pipes hold now; `done` when they are empty."""
        assert self._exited_at is not None
        got = False
        for key, _ in self._sel.select(0):
            got = self._dispatch(key.fileobj, out) or got
        if not got or not self._reading() or time.monotonic() - self._exited_at >= DRAIN_LIMIT_S:
            self._done = True
            self._lines.finish(out)

    def _read_stdout(self, out: list[Line]) -> bool:
        assert self.popen.stdout is not None
        fd = self.popen.stdout.fileno()
        got = False
        for _ in range(_CHUNKS_PER_READ):
            try:
                chunk = os.read(fd, _READ_CHUNK)
            except BlockingIOError:
                return got
            if not chunk:
                self._stdout_eof = True
                self._sel.unregister(self.popen.stdout)
                if not self._raw:
                    self._lines.finish(out)  # a last line without newline
                return got
            got = True
            if self._raw:
                out.append(chunk)
            else:
                self._lines.feed(chunk, out)
        return got

    def _read_stderr(self) -> bool:
        assert self.popen.stderr is not None
        got = False
        for _ in range(_CHUNKS_PER_READ):
            try:
                chunk = os.read(self.popen.stderr.fileno(), _READ_CHUNK)
            except BlockingIOError:
                return got
            if not chunk:
                self._stderr_eof = True
                self._sel.unregister(self.popen.stderr)
                return got
            got = True
            self._log_stderr(chunk)
        return got

    def _log_stderr(self, chunk: bytes) -> None:
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
    def done(self) -> bool:
        """The agent has exited and its output has been read (see the module docstring)."""
        return self._done

    @property
    def stdout_closed(self) -> bool:
        return self._stdout_eof

    @property
    def stderr_tail(self) -> str:
        return self._stderr_tail.decode("utf-8", "replace")

    # --- exit and ending -------------------------------------------------------------------

    def poll_exit(self) -> int | None:
        if self.returncode is None:
            self._exited(self.popen.poll())
        return self.returncode

    def wait(self, timeout: float) -> int | None:
        try:
            self._exited(self.popen.wait(timeout))
        except subprocess.TimeoutExpired:
            return None
        return self.returncode

    def _exited(self, returncode: int | None) -> None:
        if returncode is not None and self.returncode is None:
            self.returncode = returncode
            self._exited_at = time.monotonic()
            reaped(self.popen)

    def describe_exit(self, who: str) -> str:
        code, sig = exit_status(self.returncode)
        return describe_exit(who, code, sig, self.stderr_tail)

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

    def kill_tree(self) -> None:
        """SIGKILL the agent's group and everything below the agent, in the group or not."""
        self.signal_group(signal.SIGKILL)
        if self.ident is not None:
            proctree.kill_tree(self.ident, self._mark)

    def kill_job(self) -> None:
        """SIGKILL everything of the agent's job: its group, its tree, every process marked
        with its job (those that left the group too). Without a mark: group and tree."""
        self.signal_group(signal.SIGKILL)
        if self._mark:
            proctree.kill_job(Path(self._mark), self.ident)
        elif self.ident is not None:
            proctree.kill_tree(self.ident)

    def release(self) -> None:
        """Close our ends of the pipes and the stderr log."""
        self.close_stdin()
        with contextlib.suppress(KeyError, ValueError):
            self._sel.close()
        for stream in (self.popen.stdout, self.popen.stderr):
            if stream is not None:
                stream.close()
        if self._exit_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._exit_fd)
            self._exit_fd = None
        if self._stderr_log is not None:
            self._stderr_log.close()
