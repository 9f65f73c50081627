"""What the agent says, as bounded `text` events: a person watching sees its words, and
events.jsonl keeps an excerpt, never the whole transcript (the agent's session has that).

Answer text arrives in pieces of any size (token deltas, or a whole message at once).
A block of text (from the runner's `text` activity to its next other event) is cut into
windows: the first `first` characters, kept whole, then every `window` characters, then
what is left when the block ends. Each later window becomes one event holding its first
`excerpt` characters and its full length, so the opening words show at once, a short remark
between tool calls is logged whole, and a long answer costs the log about 8% of its size.
The cuts depend only on the text, never on time, so a successor supervisor replaying the
same output writes the same events (checkpoint.py).
"""

from __future__ import annotations

from typing import Any

FIRST_WINDOW = 300  # a block's opening words, kept whole and logged at once
WINDOW_CHARS = 2000  # then one event per this many characters,
EXCERPT_CHARS = 160  # keeping the head of each (about what a feed line shows)


class Words:
    def __init__(self) -> None:
        self._limit = FIRST_WINDOW
        self._opening = True  # the block's first window: kept whole
        self._head: list[str] = []
        self._kept = 0  # characters in _head
        self._count = 0  # characters in the open window

    def add(self, text: str) -> list[dict[str, Any]]:
        """Take a piece of answer text; the fields of each window it filled."""
        out = []
        while text:
            room = self._limit - self._count
            piece, text = text[:room], text[room:]
            keep = self._limit if self._opening else EXCERPT_CHARS
            if self._kept < keep:
                kept = piece[: keep - self._kept]
                self._head.append(kept)
                self._kept += len(kept)
            self._count += len(piece)
            if self._count >= self._limit:
                out.append(self._take())
                self._limit, self._opening = WINDOW_CHARS, False
        return out

    def end(self) -> dict[str, Any] | None:
        """The block ended: the fields of its last, partial window (None when empty)."""
        fields = self._take() if self._count else None
        self._limit, self._opening = FIRST_WINDOW, True
        return fields

    def state(self) -> dict[str, Any]:
        """The open window, for a takeover checkpoint: a successor replays only the output
        after the checkpoint, so words read before it but not yet logged must travel with it."""
        head = "".join(self._head)
        return {"head": head, "count": self._count, "limit": self._limit, "opening": self._opening}

    def restore(self, state: dict[str, Any]) -> None:
        """The open window a checkpoint kept; ValueError for one these cuts never make."""
        head, count, limit = str(state["head"]), int(state["count"]), int(state["limit"])
        if limit not in (FIRST_WINDOW, WINDOW_CHARS) or not 0 <= len(head) <= count < limit:
            raise ValueError(f"a window of {count} of {limit} characters holding {len(head)}")
        self._head, self._kept = [head], len(head)
        self._count, self._limit = count, limit
        self._opening = bool(state["opening"])

    def _take(self) -> dict[str, Any]:
        fields = {"text": "".join(self._head), "chars": self._count}
        self._head, self._kept, self._count = [], 0, 0
        return fields
