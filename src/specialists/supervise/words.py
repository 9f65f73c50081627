"""What the agent says, as bounded `text` events: a person watching sees its words, and
events.jsonl keeps an excerpt, never the whole transcript (the agent's session has that).

Answer text arrives in pieces of any size (token deltas, or a whole message at once).
A block of text (from the runner's `text` activity to its next other event) is cut into
windows: the first `first` characters, then every `window` characters, then what is left
when the block ends. Each window becomes one event holding its first `excerpt` characters
and its full length, so the opening words show at once and a long answer costs a few
hundred bytes per `window` characters. The cuts depend only on the text, never on time,
so a successor supervisor replaying the same output writes the same events (reattach.py).
"""

from __future__ import annotations

from typing import Any

EXCERPT_CHARS = 300  # kept of each window
FIRST_WINDOW = EXCERPT_CHARS  # the block's opening words, whole and at once
WINDOW_CHARS = 2000  # then one event per this many characters


class Words:
    def __init__(
        self,
        *,
        excerpt: int = EXCERPT_CHARS,
        first: int = FIRST_WINDOW,
        window: int = WINDOW_CHARS,
    ) -> None:
        self._excerpt, self._first, self._window = excerpt, first, window
        self._limit = first
        self._head: list[str] = []
        self._kept = 0  # characters in _head
        self._count = 0  # characters in the open window

    def add(self, text: str) -> list[dict[str, Any]]:
        """Take a piece of answer text; the fields of each window it filled."""
        out = []
        while text:
            room = self._limit - self._count
            piece, text = text[:room], text[room:]
            if self._kept < self._excerpt:
                kept = piece[: self._excerpt - self._kept]
                self._head.append(kept)
                self._kept += len(kept)
            self._count += len(piece)
            if self._count >= self._limit:
                out.append(self._take())
                self._limit = self._window
        return out

    def end(self) -> dict[str, Any] | None:
        """The block ended: the fields of its last, partial window (None when empty)."""
        fields = self._take() if self._count else None
        self._limit = self._first
        return fields

    def _take(self) -> dict[str, Any]:
        fields = {"text": "".join(self._head), "chars": self._count}
        self._head, self._kept, self._count = [], 0, 0
        return fields
