"""Forked contexts: a child that starts from its parent's conversation so far (issue 10 item 2).

A fork is honest only between two agents of one runner (the same session format), and only
where that runner can start from a copy of a conversation:

- native: the child's session starts as a copy of the parent's session file (its completed
  turns; runners/native.py open_session copies it).
- pi: a branch of the parent's session file, made as `pi --fork` makes one (pi 0.73.1,
  SessionManager.forkFrom): a new header (new id, the child's cwd, `parentSession` naming the
  source) and every other entry as it is, so pi runs it in the child's directory (pi runs a
  reused session in the cwd its header names). The parent's turn in progress (the assistant
  message calling spawn_thread, whose result does not exist yet) is cut: the child sees what
  the parent has finished, never a tool call of the parent's it could take for its own.
- claude: a snapshot of the parent's session file, taken at the spawn (the parent goes on
  writing its own), which the child's runner stages among its directory's sessions and starts
  from with `--resume <snapshot> --fork-session --session-id <new>` (runners/claude.py).
  The parent's turn in progress is cut from the snapshot as for pi: Claude Code 2.1.197
  dropped a tool use that had no result yet on resume, 2.1.332 keeps it (and the child would
  read the parent's spawn_thread call as its own), so we cut it ourselves.
- codex: refused. `codex exec fork <id>` (0.171.0) forks a live session when the child's
  agent starts, by then holding whatever the parent did after the spawn; a snapshot would
  need Codex's rollout files rewritten under a new id, which we have not verified.

A command child has no conversation to fork into.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from specialists.base.errors import UserError
from specialists.store.atomic import write_atomic

PI_SESSION_MAX = 256 << 20  # a session file larger than this is not copied whole into memory


def _entries(path: Path) -> list[dict[str, Any]]:
    """The session's entries; a line a crash cut short is skipped (pi skips it too)."""
    return [entry for entry in map(_loads, _session_lines(path)) if entry]


def _answered(entries: list[dict[str, Any]]) -> set[str]:
    return {
        str(m.get("toolCallId"))
        for e in entries
        if e.get("type") == "message"
        and isinstance(m := e.get("message"), dict)
        and m.get("role") == "toolResult"
    }


def _turn_in_progress(entries: list[dict[str, Any]]) -> int | None:
    """The index of the last assistant message when it calls a tool that has no result yet."""
    answered = _answered(entries)
    for i in range(len(entries) - 1, -1, -1):
        message = entries[i].get("message") if entries[i].get("type") == "message" else None
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        calls = [
            str(b.get("id"))
            for b in (content if isinstance(content, list) else [])
            if isinstance(b, dict) and b.get("type") == "toolCall"
        ]
        return i if any(c not in answered for c in calls) else None
    return None


def fork_pi_session(path: Path, cwd: Path, source: str) -> None:
    """Rewrite `path` (the child's own copy of its parent's pi session) into a fork of it."""
    entries = _entries(path)
    header = next((e for e in entries if e.get("type") == "session"), None)
    if header is None:
        raise UserError(
            "spawn_thread cannot fork: your pi session file has no header",
            hint="pass fresh_context: true with self-contained instructions",
        )
    body = [e for e in entries if e.get("type") != "session"]
    cut = _turn_in_progress(body)
    if cut is not None:
        body = body[:cut]
    new_header = {
        **header,
        "id": str(uuid.uuid4()),
        "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "cwd": str(cwd),
        "parentSession": source,
    }
    lines = [json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in (new_header, *body)]
    write_atomic(path, ("\n".join(lines) + "\n").encode("utf-8"))


def snapshot_claude_session(session_id: str, target: Path, env: Mapping[str, str]) -> Path:
    """A copy of the parent's Claude Code session as it is now (the child forks this)."""
    from specialists.runners.claude import session_file

    source = session_file(session_id, env)
    if source is None:
        raise UserError(
            f"spawn_thread cannot fork: your Claude Code session {session_id[:40]} has no file",
            hint="pass fresh_context: true with self-contained instructions",
        )
    lines = _session_lines(source)
    cut = _claude_turn_in_progress([_loads(line) for line in lines])
    kept = lines if cut is None else lines[:cut]
    write_atomic(target, b"".join(line + b"\n" for line in kept))
    return target


def _session_lines(path: Path) -> list[bytes]:
    if path.stat().st_size > PI_SESSION_MAX:
        raise UserError(
            f"spawn_thread cannot fork: your session file is over {PI_SESSION_MAX >> 20} MiB",
            hint="pass fresh_context: true with self-contained instructions",
        )
    return [line for line in path.read_bytes().split(b"\n") if line.strip()]


def _loads(line: bytes) -> dict[str, Any]:
    try:
        entry = json.loads(line)
    except ValueError:
        return {}  # a line a crash cut short: kept as it is, read as nothing
    return entry if isinstance(entry, dict) else {}


def _claude_turn_in_progress(entries: list[dict[str, Any]]) -> int | None:
    """Where the last assistant message starts when it calls a tool that has no result yet.
    Claude Code writes one entry per content block, all with the message's id."""
    answered = {
        str(block.get("tool_use_id"))
        for e in entries
        if e.get("type") == "user"
        for block in _blocks(e)
        if block.get("type") == "tool_result"
    }
    for i in range(len(entries) - 1, -1, -1):
        if entries[i].get("type") != "assistant":
            continue
        calls = [str(b.get("id")) for b in _blocks(entries[i]) if b.get("type") == "tool_use"]
        if not calls or all(c in answered for c in calls):
            return None
        start = i
        while start > 0 and _message_id(entries[start - 1]) == _message_id(entries[i]):
            start -= 1
        return start
    return None


def _message_id(entry: dict[str, Any]) -> object:
    message = entry.get("message")
    if entry.get("type") != "assistant" or not isinstance(message, dict):
        return None
    return message.get("id")


def _blocks(entry: dict[str, Any]) -> list[dict[str, Any]]:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
