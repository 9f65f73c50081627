"""The native agent's session: a JSONL file, one line per complete turn (P3).

    {"type": "session", "version": 1, "created_at": ms, ...meta}          header, line 1
    {"type": "entry", "seq": 1, "ts": ms, "items": [{"kind": "user", ...}]}
    {"type": "entry", "seq": 2, "ts": ms, "items": [thinking, assistant, tool_call...],
     "model": "openai/gpt-4.1", "stop_reason": "tool_use", "usage": {...}}
    {"type": "entry", "seq": 3, "ts": ms, "items": [{"kind": "tool_result", ...}]}

A model turn, with its tool calls, is one line written before any of those tools runs; each
tool result is its own line written when the tool returns. Each line goes out in a single
write and is flushed, so a killed process leaves whole lines (a torn last line is cut off on
load).

Resume policy for a tool call that has no result (the process died while it ran): it is NOT
re-run, because its side effects are unknown (a half-applied edit, a command that already
pushed). It gets an error result saying it was interrupted, and the model decides.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from specialists.base.errors import StoreError
from specialists.native.messages import Item, ToolCall, ToolResult, item_from_dict, item_to_dict

SCHEMA_VERSION = 1
INTERRUPTED_TEXT = (
    "interrupted: the agent process stopped while this tool call was running, so it has no "
    "result and its effects are unknown. Check the current state before repeating it."
)


class Session:
    def __init__(self, path: Path, header: Mapping[str, Any], items: list[Item], seq: int) -> None:
        self.path = path
        self.header = dict(header)
        self._items = items
        self._seq = seq
        self._fh: IO[bytes] | None = None
        self.fsync = False  # True: fsync every line (survives power loss, costs ~ms per line)

    @classmethod
    def create(cls, path: Path, meta: Mapping[str, Any] | None = None) -> Session:
        header = {
            "type": "session",
            "version": SCHEMA_VERSION,
            "created_at": int(time.time() * 1000),
            **(meta or {}),
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "xb") as fh:
            fh.write(_line(header))
        return cls(path, header, [], 0)

    @classmethod
    def load(cls, path: Path) -> Session:
        try:
            raw = path.read_bytes()
        except FileNotFoundError as exc:
            raise StoreError(f"session file {path} does not exist") from exc
        except OSError as exc:
            raise StoreError(f"cannot read session file {path}: {exc.strerror or exc}") from exc
        lines = raw.split(b"\n")
        complete, torn = lines[:-1], lines[-1]
        if not complete:
            raise StoreError(f"session file {path} is empty (no header line)")
        header = _parse(path, 1, complete[0])
        if header.get("type") != "session":
            raise StoreError(f"{path}: line 1 is not a session header")
        version = header.get("version")
        if not isinstance(version, int) or version < 1:
            raise StoreError(f"{path}: header has no valid schema version")
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{path} was written by a newer specialists (session schema {version}, this "
                f"one reads up to {SCHEMA_VERSION})",
                hint="upgrade specialists to resume it",
            )
        if torn.strip():
            # A line without its newline was cut by a crash mid-write: drop it. Only now,
            # once the file is known to be ours: a newer schema's file is left untouched.
            with open(path, "r+b") as fh:
                fh.truncate(len(raw) - len(torn))
        items: list[Item] = []
        seq = 0
        for number, line in enumerate(complete[1:], start=2):
            if not line.strip():
                continue
            entry = _parse(path, number, line)
            if entry.get("type") != "entry":
                continue  # a later version may add other line types; entries are what we need
            try:
                items.extend(item_from_dict(d) for d in entry.get("items", []))
            except (ValueError, TypeError, AttributeError) as exc:
                raise StoreError(f"{path}: line {number}: {exc}") from exc
            seq = max(seq, int(entry.get("seq", seq + 1)))
        return cls(path, header, items, seq)

    @classmethod
    def open_or_create(cls, path: Path, meta: Mapping[str, Any] | None = None) -> Session:
        if path.exists() and path.stat().st_size > 0:
            return cls.load(path)
        return cls.create(path, meta)

    @property
    def items(self) -> tuple[Item, ...]:
        return tuple(self._items)

    def unanswered_calls(self) -> list[ToolCall]:
        answered = {item.call_id for item in self._items if isinstance(item, ToolResult)}
        return [i for i in self._items if isinstance(i, ToolCall) and i.id not in answered]

    def append(self, items: Sequence[Item], **meta: Any) -> None:
        """Record one complete turn (or one message) as one line."""
        self._seq += 1
        entry = {
            "type": "entry",
            "seq": self._seq,
            "ts": int(time.time() * 1000),
            "items": [item_to_dict(i) for i in items],
            **{k: v for k, v in meta.items() if v is not None},
        }
        fh = self._handle()
        fh.write(_line(entry))
        fh.flush()
        if self.fsync:
            os.fsync(fh.fileno())
        self._items.extend(items)

    def close_interrupted(self) -> list[ToolCall]:
        """Give every unanswered tool call an 'interrupted' error result; return them."""
        calls = self.unanswered_calls()
        for call in calls:
            self.append([ToolResult(call.id, call.name, INTERRUPTED_TEXT, is_error=True)])
        return calls

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def _handle(self) -> IO[bytes]:
        if self._fh is None:
            self._fh = open(self.path, "ab")  # noqa: SIM115 - kept open across appends
        return self._fh


def _line(obj: Mapping[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _parse(path: Path, number: int, line: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise StoreError(f"{path}: line {number} is not valid JSON ({exc})") from exc
    if not isinstance(obj, dict):
        raise StoreError(f"{path}: line {number} is not a JSON object")
    return obj
