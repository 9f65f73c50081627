"""One agent process on a cluster node, driven by the node's event loop (no thread each).

The node side of `AgentProcess`: spawned through process.spawn (own session, SIGKILL when the
event loop's thread ends, so the agent dies with the actor), stdout split into lines in
bounded memory (process.lines) or passed on as chunks, stderr forwarded up to its cap with
its tail kept, stdin written as the pipe takes it. Every piece of output becomes an *item*
with a sequence number; the supervisor's reads acknowledge what they have (`read(after=n)`
drops items up to n), so a supervisor that reconnects asks again from its last number and
loses nothing. Nothing is ever dropped for lack of room: past `buffer_cap` unacknowledged
bytes the pipes are no longer read, and the agent waits on its own writes (backpressure).

Item kinds: "l" a line, "L" an oversized line (head, size), "c" a raw chunk, "e" stderr
bytes, "x" the exit (returncode, stderr tail), always last.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from specialists.process.lines import LineSplitter, OversizedLine
from specialists.process.spawn import exit_fd, reaped, spawn
from specialists.store import proctree
from specialists.store.liveness import pid_exists

Item = tuple[int, str, Any]

BUFFER_CAP = 32 * 1024 * 1024  # unacknowledged output per process before backpressure
BATCH_BYTES = 4 * 1024 * 1024  # most output one read returns
STDERR_TAIL = 4096
STDERR_CAPPED = b"\n[stderr.log capped]\n"
_CHUNK = 1 << 16
_EXIT_POLL_S = 0.1  # without a pidfd, how often the exit is looked for


class NodeProcess:
    """An agent spawned on this node; see the module docstring."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        mark: str | None,
        stdin_pipe: bool = True,
        max_line: int,
        raw: bool,
        stderr_cap: int | None,
        buffer_cap: int = BUFFER_CAP,
    ) -> None:
        self._loop = loop
        self._raw = raw
        self._lines = LineSplitter(max_line)
        self._stderr_cap = stderr_cap
        self._stderr_sent = 0
        self._stderr_tail = bytearray()
        self._buffer_cap = buffer_cap
        self.mark = mark
        self.items: deque[Item] = deque()
        self.seq = 0
        self.buffered = 0
        self.paused = False
        self.done = False
        self.returncode: int | None = None
        self.touched = time.monotonic()  # last read by the supervisor (the lease)
        self.changed = asyncio.Event()
        self._outbox = bytearray()
        self._end_input = False
        self._next_in = 1  # stdin writes are applied in the order the supervisor numbered them
        self._early: dict[int, tuple[bytes, bool]] = {}
        # Raises SpawnFailed; the caller turns it into an answer.
        self.popen = spawn(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            die_with_parent=True,
        )
        self.pid = self.popen.pid
        self.ident = proctree.identify(self.pid)
        self._open: set[int] = set()
        for stream in (self.popen.stdout, self.popen.stderr):
            assert stream is not None
            os.set_blocking(stream.fileno(), False)
            self._open.add(stream.fileno())
        self._watch_pipes()
        self._exit_fd = exit_fd(self.pid)
        if self._exit_fd is not None:
            loop.add_reader(self._exit_fd, self._on_exit)
        else:
            loop.call_later(_EXIT_POLL_S, self._poll_exit)

    def _watch_pipes(self) -> None:
        for fd in self._open:
            self._loop.add_reader(fd, self._on_readable, fd)

    def _unwatch_pipes(self) -> None:
        for fd in self._open:
            self._loop.remove_reader(fd)

    def _on_readable(self, fd: int) -> None:
        self._read_fd(fd, limit=16)
        if self.buffered > self._buffer_cap and not self.paused and not self.done:
            self.paused = True  # the agent now waits on its own writes
            self._unwatch_pipes()

    def _read_fd(self, fd: int, *, limit: int | None) -> None:
        """Read what `fd` holds now (at most `limit` chunks); EOF closes it."""
        stdout = self.popen.stdout
        assert stdout is not None
        rounds = 0
        while limit is None or rounds < limit:
            rounds += 1
            try:
                chunk = os.read(fd, _CHUNK)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self._loop.remove_reader(fd)
                self._open.discard(fd)
                if fd == stdout.fileno() and not self._raw:
                    self._take_lines(finish=True)
                return
            if fd == stdout.fileno():
                self._on_stdout(chunk)
            else:
                self._on_stderr(chunk)

    def _on_stdout(self, chunk: bytes) -> None:
        if self._raw:
            self._push("c", chunk, len(chunk))
            return
        out: list[bytes | OversizedLine] = []
        self._lines.feed(chunk, out)
        self._push_lines(out)

    def _take_lines(self, *, finish: bool) -> None:
        out: list[bytes | OversizedLine] = []
        if finish:
            self._lines.finish(out)
        self._push_lines(out)

    def _push_lines(self, lines: list[bytes | OversizedLine]) -> None:
        for line in lines:
            if isinstance(line, OversizedLine):
                self._push("L", (line.head, line.size), len(line.head))
            else:
                self._push("l", line, len(line))

    def _on_stderr(self, chunk: bytes) -> None:
        self._stderr_tail += chunk
        del self._stderr_tail[:-STDERR_TAIL]
        cap, sent = self._stderr_cap, self._stderr_sent
        self._stderr_sent += len(chunk)
        if cap is None:
            self._push("e", chunk, len(chunk))
        elif sent < cap:
            piece = chunk[: cap - sent]
            if sent + len(chunk) > cap:
                piece += STDERR_CAPPED
            self._push("e", piece, len(piece))

    def _push(self, kind: str, payload: Any, size: int) -> None:
        self.seq += 1
        self.items.append((self.seq, kind, payload))
        self.buffered += size
        self.changed.set()

    def _poll_exit(self) -> None:
        if self.popen.poll() is None:
            self._loop.call_later(_EXIT_POLL_S, self._poll_exit)
        else:
            self._on_exit()

    def _on_exit(self) -> None:
        """The agent exited: what it wrote is in the pipes now; take it and end the stream.
        A descendant that keeps a pipe open is not waited for (as spawn.DRAIN_LIMIT_S)."""
        if self.done:
            return
        returncode = self.popen.poll()
        if returncode is None:
            return  # a spurious wake-up
        if self._exit_fd is not None:
            self._loop.remove_reader(self._exit_fd)
            os.close(self._exit_fd)
            self._exit_fd = None
        self.returncode = returncode
        reaped(self.popen)
        for fd in list(self._open):
            self._read_fd(fd, limit=None)
        self._unwatch_pipes()
        if not self._raw:
            self._take_lines(finish=True)
        self._close_pipes()
        self.done = True
        tail = self._stderr_tail.decode("utf-8", "replace")
        self._push("x", (returncode, tail), 0)

    def _close_pipes(self) -> None:
        if self._stdin_fd() >= 0:
            self._loop.remove_writer(self._stdin_fd())
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._open.clear()

    async def read(self, after: int, wait_s: float, ack: int | None = None) -> dict[str, Any]:
        """Items after `after` (at least one unless `wait_s` passed first); `ack` (default
        `after`) acknowledges everything up to it: a supervisor that checkpoints acknowledges
        only what it has recorded, so a successor can ask again from there."""
        self.touched = time.monotonic()
        ack = after if ack is None else min(ack, after)
        while self.items and self.items[0][0] <= ack:
            _, kind, payload = self.items.popleft()
            self.buffered -= _size(kind, payload)
        if self.paused and self.buffered <= self._buffer_cap // 2 and not self.done:
            self.paused = False
            self._watch_pipes()
        if not self.items and not self.done:
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), timeout=max(0.0, wait_s))
        self.touched = time.monotonic()
        batch: list[Item] = []
        size = 0
        for item in self.items:
            if item[0] <= after:
                continue
            batch.append(item)
            size += _size(item[1], item[2])
            if size >= BATCH_BYTES:
                break
        return {"items": batch}

    def write(self, seq: int, data: bytes, end: bool) -> None:
        """Stdin write number `seq`; writes are applied in their numbered order, each once
        (a successor supervisor may send again what its predecessor sent)."""
        if seq < self._next_in:
            return
        self._early[seq] = (data, end)
        while self._next_in in self._early:
            data, end = self._early.pop(self._next_in)
            self._next_in += 1
            self._outbox += data
            self._end_input = self._end_input or end
        self._write_stdin()

    def adopt(self) -> dict[str, Any]:
        """A new supervisor takes this process over: stdin writes its predecessor numbered
        and that never arrived are given up (the successor numbers on from the last one
        applied), and the lease starts again."""
        self._early.clear()
        self.touched = time.monotonic()
        first = self.items[0][0] if self.items else self.seq + 1  # the oldest item kept
        return {
            "pid": self.pid,
            "wseq": self._next_in - 1,
            "done": self.done,
            "seq": self.seq,
            "first": first,
        }

    def close_stdin(self) -> None:
        self._outbox.clear()
        fd = self._stdin_fd()
        if fd >= 0:
            self._loop.remove_writer(fd)
            assert self.popen.stdin is not None
            with contextlib.suppress(OSError):
                self.popen.stdin.close()

    def _stdin_fd(self) -> int:
        stdin = self.popen.stdin
        return -1 if stdin is None or stdin.closed else stdin.fileno()

    def _write_stdin(self) -> None:
        fd = self._stdin_fd()
        if fd < 0:
            self._outbox.clear()
            return
        os.set_blocking(fd, False)
        while self._outbox:
            try:
                written = os.write(fd, self._outbox[:_CHUNK])
            except BlockingIOError:
                break
            except OSError:  # EPIPE: the agent stopped reading; its exit says why
                self._outbox.clear()
                break
            del self._outbox[:written]
        self._loop.remove_writer(fd)
        if self._outbox:
            self._loop.add_writer(fd, self._write_stdin)
        elif self._end_input:
            self.close_stdin()

    def signal_group(self, sig: int) -> None:
        """As AgentProcess.signal_group: the group, also after the agent exited, never a
        group whose id names another live process again."""
        if self.returncode is not None and pid_exists(self.pid):
            return
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(sig)

    def kill_tree(self) -> None:
        self.signal_group(signal.SIGKILL)
        if self.ident is not None:
            proctree.kill_tree(self.ident, self.mark)

    def kill_job(self) -> None:
        self.signal_group(signal.SIGKILL)
        kill_marked(self.mark, self.ident)

    def release(self) -> None:
        """Forget the process: stop watching it (it is dead or is being killed)."""
        if not self.done:
            self._unwatch_pipes()
            if self._exit_fd is not None:
                self._loop.remove_reader(self._exit_fd)
        self.items.clear()
        self.buffered = 0


def kill_marked(
    mark: str | None, agent: proctree.Proc | None = None, spare: tuple[int, ...] = ()
) -> list[proctree.Proc]:
    """Kill everything of one job on this node: the agent's tree and every process carrying
    the job's mark (store/proctree.py), with what is below those."""
    killed: list[proctree.Proc] = []
    if agent is not None:
        killed += proctree.kill_tree(agent, mark)
    if not mark:
        return killed

    def find() -> list[proctree.Proc]:
        roots = proctree.marked(mark)
        return [*roots, *proctree.descendants([p.pid for p in roots], mark)]

    return killed + proctree.kill_all(find, spare=spare)


def _size(kind: str, payload: Any) -> int:
    if kind == "L":
        return len(payload[0])
    if kind == "x":
        return 0
    return len(payload)
