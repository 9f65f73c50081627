"""What the Claude Code hooks share: stdin, the project, the hook JSON reply, the log.

Hooks run on every prompt and tool call, so this module imports only the standard
library's cheapest parts (json, os, sys, time), and the state directory is text: `pathlib`
(with `urllib.parse` and `ipaddress`) would cost each hook a fifth of its time. The events
room, which takes Paths, is imported only when there is something to deliver. A hook never
fails its host: every problem is written to $XDG_STATE_HOME/specialists/hooks.log and the
hook exits 0.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time

from specialists.store import logfile
from specialists.store.paths import STATE_DIR_NAME, find_project_root

# `typing` costs ~5 ms to import; annotations are strings here, so only type checkers need it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

HOOKS_DIR_NAME = "hooks"  # .specialists/hooks/: the hooks' own small caches and counters
LOG_NAME = "hooks.log"  # in $XDG_STATE_HOME/specialists/, rotated by logfile.py
STDIN_LIMIT = 1024 * 1024  # Claude Code sends a few KB; never buffer more than this
# PostToolUse carries the tool's whole result, which its result guard needs to see.
STDIN_LIMITS = {"post-tool-use": 16 * 1024 * 1024}
STDIN_WAIT_S = 1.0  # a host that never closes stdin must not hang the hook


def log(event: str, message: str) -> None:
    """Append one line to hooks.log. Never raises: the log is the last resort."""
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {event} pid={os.getpid()}: {message}"
    try:
        logfile.append(LOG_NAME, line)
    except OSError as exc:
        # Nowhere left to write but stderr, which Claude Code shows only in verbose mode.
        print(f"specialists hook: cannot write {LOG_NAME}: {exc}; {line}", file=sys.stderr)


def read_stdin(stream: TextIO | None, limit: int = STDIN_LIMIT) -> str:
    """Whatever the host wrote on stdin, or '' (a terminal, no stdin, or a silent host)."""
    if stream is None:
        return ""
    try:
        if stream.isatty():
            return ""
        fd = stream.fileno()
    except (OSError, ValueError):
        # A replaced sys.stdin (tests, embedding) without a descriptor: read it directly.
        return stream.read(limit)
    import select

    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + STDIN_WAIT_S
    while size < limit:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            log("stdin", f"stopped reading stdin after {STDIN_WAIT_S}s without end of input")
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace")


def parse_input(raw: str) -> tuple[dict[str, Any], str | None]:
    """The hook input object, or ({}, why) when stdin is empty or not a JSON object."""
    if not raw.strip():
        return {}, None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # RecursionError: "[[[[..." nested too deep
        return {}, f"stdin is not JSON ({exc}); first bytes: {raw[:60]!r}"
    if not isinstance(data, dict):
        return {}, f"stdin is JSON but not an object: {type(data).__name__}"
    return data, None


def state_dir_for(data: dict[str, Any]) -> str:
    """The project's .specialists/ as `specialists run` would find it from the session's cwd.

    SPECIALISTS_PROJECT_ROOT wins (inside find_project_root); then the hook input's `cwd`,
    then CLAUDE_PROJECT_DIR, then our own working directory.
    """
    start: str | None = None
    cwd = data.get("cwd")
    if isinstance(cwd, str) and cwd and os.path.isdir(cwd):
        start = cwd
    else:
        start = os.environ.get("CLAUDE_PROJECT_DIR") or None
    return os.path.join(find_project_root(start), STATE_DIR_NAME)


def hook_reply(event: str, context: str) -> str:
    """Claude Code's hook JSON: the text is added to the model's context for this turn."""
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}},
        ensure_ascii=False,
    )


def write_reply(out: TextIO, reply: dict[str, Any]) -> None:
    """One JSON line on stdout, flushed (Claude Code reads it when the hook exits)."""
    out.write(json.dumps(reply, ensure_ascii=False) + "\n")
    out.flush()


def reader_keys(data: dict[str, Any]) -> tuple[str, ...]:
    """The session's owner keys (owner.py): the hook input's session id, the session
    variables, and the Claude Code process above the hook."""
    from specialists.base.owner import reading_owner

    return reading_owner(data.get("session_id")).keys


def write_small(path: str, data: bytes, event: str) -> None:
    """Replace a small file of the hooks' own (a cache, a counter) atomically, never through
    a planted link. A failure is logged: such a file only saves work or counts."""
    from specialists.store.atomic import write_atomic  # only when there is something to save

    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(os.path.dirname(path), 0o700)
        write_atomic(path, data)
    except OSError as exc:
        log(event, f"cannot write {path}: {exc}")


EVENTS = {
    "user-prompt-submit": "specialists.fronts.hooks.user_prompt_submit",
    "session-start": "specialists.fronts.hooks.session_start",
    "pre-tool-use": "specialists.fronts.hooks.pre_tool_use",
    "post-tool-use": "specialists.fronts.hooks.post_tool_use",
    "stop": "specialists.fronts.hooks.stop",
}


def run_hook(name: str, stdin: TextIO | None, stdout: TextIO) -> int:
    """Entry point of `specialists hook <name>`: always 0, problems go to hooks.log."""
    try:
        raw = read_stdin(stdin, STDIN_LIMITS.get(name, STDIN_LIMIT))
        data, problem = parse_input(raw)
        if problem:
            log(name, problem)  # carry on: the hook does not need the input to be useful
        state_dir = state_dir_for(data)
        module_name = EVENTS.get(name)
        if module_name is None:
            log(name, "bug: unknown hook event")
            return 0
        import importlib

        importlib.import_module(module_name).run(data, state_dir, stdout)
    except BrokenPipeError:
        log(name, "the host closed stdout before reading the reply")
    except Exception as exc:  # noqa: BLE001 - a hook must never fail its host
        import traceback

        where = traceback.extract_tb(exc.__traceback__)[-1]
        log(name, f"{exc.__class__.__name__}: {exc} (at {where.filename}:{where.lineno})")
    return 0
