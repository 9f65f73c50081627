"""A byte stream in bounded memory (pure): split into lines, or its last bytes kept.

Agents speak JSON lines, and JSON strings may hold U+2028/U+2029, so `str.splitlines()` is
wrong here. A line longer than `max_line` is not kept: only its head survives, as an
`OversizedLine`, so a 100 MB line costs `max_line` bytes of buffer, not 100 MB.
`TailBuffer` keeps the last bytes of a stream (a command's answer, a log's tail).
"""

from __future__ import annotations

from specialists.base.tuples import NamedTuple

OVERSIZED_HEAD = 4096


class OversizedLine(NamedTuple):
    head: bytes  # the first OVERSIZED_HEAD bytes of the line
    size: int


Line = bytes | OversizedLine


class LineSplitter:
    """Feed chunks, get complete lines; `finish()` returns a last line without newline."""

    def __init__(self, max_line: int, *, head: int = OVERSIZED_HEAD) -> None:
        self._max_line = max_line
        self._head = head  # what an OversizedLine keeps of its line
        self._buf = bytearray()
        self._skipping = 0  # >0 while discarding the rest of an oversized line
        self._skip_head = b""

    def feed(self, chunk: bytes, out: list[Line]) -> None:
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                self._keep(chunk[start:])
                return
            self._end_line(chunk[start:nl], out)
            start = nl + 1

    def finish(self, out: list[Line]) -> None:
        if self._skipping:
            out.append(OversizedLine(self._skip_head, self._skipping))
            self._skipping = 0
        elif self._buf:
            out.append(bytes(self._buf))
        self._buf.clear()

    def _keep(self, rest: bytes) -> None:
        if self._skipping:
            self._skipping += len(rest)
            return
        self._buf += rest
        if len(self._buf) > self._max_line:
            self._skip_head = bytes(self._buf[: self._head])
            self._skipping = len(self._buf)
            self._buf.clear()

    def _end_line(self, piece: bytes, out: list[Line]) -> None:
        if self._skipping:
            out.append(OversizedLine(self._skip_head, self._skipping + len(piece)))
            self._skipping = 0
        elif self._buf:
            self._buf += piece
            if len(self._buf) > self._max_line:
                out.append(OversizedLine(bytes(self._buf[: self._head]), len(self._buf)))
            else:
                out.append(bytes(self._buf))
            self._buf.clear()
        elif len(piece) > self._max_line:
            out.append(OversizedLine(piece[: self._head], len(piece)))
        else:
            out.append(piece)


class TailBuffer:
    """Keeps the last `limit` bytes of a stream."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buf = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self._buf += chunk
        if len(self._buf) > self.limit:
            del self._buf[: len(self._buf) - self.limit]

    def text(self) -> str:
        data = bytes(self._buf)
        if self.total > self.limit:
            # The cut may fall inside a UTF-8 sequence: drop its continuation bytes.
            data = data.lstrip(bytes(range(0x80, 0xC0)))
        return data.decode("utf-8", "replace")
