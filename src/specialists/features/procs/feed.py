"""A proc job's output as it arrives: logged whole, counted, its tail kept, its lines watched.

The supervisor is the only writer of `output.log` (R-J3): every chunk goes there in arrival
order (stdout and stderr share one pipe, so they interleave as the command wrote them), up
to LOG_CAP_BYTES. A full disk or the cap stops the log for good (a log with a hole in it
would lie); the rest is still counted and watched, and the job_exit says how much was not
kept. The last 64 KiB stay in memory, so the job's result and its job_exit tail survive a
log that could not be written.

Lines are split on b"\\n" in bounded memory: a line keeps at most LINE_KEEP_BYTES (enough
for the 65,536 characters a watch inspects); a longer one still counts once. Without watch
patterns no line is split or decoded at all: newlines are counted, which is what a command
writing 10,000 lines a second should cost.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from specialists.features.procs.watch import LINE_INSPECT_CHARS, MatchBatch, WatchBatcher
from specialists.process.lines import Line, LineSplitter, OversizedLine, TailBuffer

LOG_CAP_BYTES = 1 << 30  # one job's output.log; past it output is counted, not kept
RING_BYTES = 64 * 1024
LINE_KEEP_BYTES = 4 * LINE_INSPECT_CHARS  # a UTF-8 character is at most 4 bytes


class OutputFeed:
    def __init__(self, log_path: Path, batcher: WatchBatcher, *, log_cap: int = LOG_CAP_BYTES):
        self.log_path = log_path
        self.batcher = batcher
        self.log_cap = log_cap
        self.bytes = 0  # received from the command
        self.logged = 0  # of those, in output.log
        self.lines = 0
        self.log_problem: str | None = None  # why the log stopped, if it did
        self._open_line = False  # bytes after the last newline (a line still being written)
        self._ring = TailBuffer(RING_BYTES)
        # None: nothing to watch (or watching stopped), so lines are only counted.
        self._splitter: LineSplitter | None = (
            LineSplitter(LINE_KEEP_BYTES, head=LINE_KEEP_BYTES) if batcher.patterns else None
        )
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        self._fd = os.open(log_path, flags, 0o600)

    def add(self, chunk: bytes, now_ms: int) -> list[MatchBatch]:
        """One chunk of output; the match batches that are due because of it."""
        if not chunk:
            return []
        self._log(chunk)
        self._ring.add(chunk)
        self.bytes += len(chunk)
        self._open_line = not chunk.endswith(b"\n")
        if self._splitter is None:
            self.lines += chunk.count(b"\n")
            return []
        lines: list[Line] = []
        self._splitter.feed(chunk, lines)
        return self._watch(lines, now_ms)

    def finish(self, now_ms: int) -> list[MatchBatch]:
        """The command is done: a last line without newline counts, the open batch goes."""
        lines: list[Line] = []
        if self._splitter is not None:
            self._splitter.finish(lines)
        elif self._open_line:
            self.lines += 1
        self._open_line = False
        return self._watch(lines, now_ms) + self.batcher.close(now_ms)

    def tail_text(self) -> str:
        """The last 64 KiB of output, decoded (whole characters only)."""
        return self._ring.text()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    # --- internals ---------------------------------------------------------------------------

    def _watch(self, lines: list[Line], now_ms: int) -> list[MatchBatch]:
        out: list[MatchBatch] = []
        for line in lines:
            self.lines += 1
            if self.batcher.patterns:
                raw = line.head if isinstance(line, OversizedLine) else line
                out += self.batcher.feed(raw.decode("utf-8", "replace"), now_ms)
        if not self.batcher.patterns:
            # Watching stopped on the way (a pattern too slow): from the next chunk on, only
            # count. What the splitter holds is the start of a line the next newline ends.
            self._splitter = None
        return out

    def _log(self, chunk: bytes) -> None:
        if self.log_problem is not None:
            return
        room = self.log_cap - self.logged
        data = chunk if len(chunk) <= room else chunk[:room]
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            self.logged += len(data) - len(view)
            self.log_problem = _why(exc)
            return
        self.logged += len(data)
        if len(data) < len(chunk):
            self.log_problem = f"output.log reached its cap of {self.log_cap} bytes"


def _why(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk is full"
    return f"output.log could not be written: {exc.strerror or exc}"
