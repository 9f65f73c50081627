"""grep: search file contents with a regular expression (or a literal string)."""

from __future__ import annotations

import fnmatch
import re
import stat
from collections.abc import Mapping
from typing import Any

from specialists.native.tools.base import (
    ToolContext,
    ToolFailure,
    ToolOutput,
    arg_int,
    arg_str,
    display,
    resolve_inside,
)
from specialists.native.tools.walk import walk_files

DESCRIPTION = (
    "Search file contents for a pattern (Python regular expression, or literal with "
    "literal=true). Returns matching lines as path:line: text. Skips .git, node_modules and "
    "binary files. Limited to `limit` matches (default 100)."
)
PARAMETERS = {
    "type": "object",
    "required": ["pattern"],
    "properties": {
        "pattern": {"type": "string", "description": "Regex or literal to search for"},
        "path": {"type": "string", "description": "Directory or file to search (default .)"},
        "glob": {"type": "string", "description": "Only files matching this glob, e.g. *.py"},
        "ignoreCase": {"type": "boolean", "description": "Case-insensitive search"},
        "literal": {"type": "boolean", "description": "Treat pattern as a literal string"},
        "context": {"type": "number", "description": "Lines of context around each match"},
        "limit": {"type": "number", "description": "Maximum number of matches (default 100)"},
    },
}
MAX_LINE_CHARS = 500
MAX_FILE_BYTES = 10 * 1024 * 1024


def run(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
    pattern = arg_str(args, "pattern")
    root = resolve_inside(ctx, args.get("path", "."))
    glob = args.get("glob")
    if glob is not None and not isinstance(glob, str):
        raise ToolFailure("glob must be a string")
    limit = max(1, arg_int(args, "limit", 100) or 100)
    context = max(0, arg_int(args, "context", 0) or 0)
    flags = re.IGNORECASE if args.get("ignoreCase") else 0
    try:
        regex = re.compile(re.escape(pattern) if args.get("literal") else pattern, flags)
    except re.error as exc:
        raise ToolFailure(f"bad regular expression: {exc}") from exc
    if not root.exists():
        raise ToolFailure(f"{args.get('path')} does not exist")
    out: list[str] = []
    matches = 0
    inside = ctx.cwd.resolve()
    for path in walk_files(root):
        if ctx.cancel.is_set():
            raise ToolFailure("aborted")
        if not path.resolve().is_relative_to(inside):
            continue  # a symlink out of the working directory: read refuses it, so do we
        rel = display(path, ctx)
        if glob and not (fnmatch.fnmatch(path.name, glob) or fnmatch.fnmatch(rel, glob)):
            continue
        lines = _text_lines(path)
        if lines is None:
            continue
        for i, line in enumerate(lines):
            if not regex.search(line):
                continue
            matches += 1
            lo, hi = max(0, i - context), min(len(lines), i + context + 1)
            for j in range(lo, hi):
                sep = ":" if j == i else "-"
                out.append(f"{rel}{sep}{j + 1}{sep} {_clip(lines[j])}")
            if context:
                out.append("--")
            if matches >= limit:
                out.append(f"[match limit {limit} reached; narrow the pattern or path]")
                return ToolOutput("\n".join(out))
    return ToolOutput("\n".join(out) if out else "No matches found")


def _text_lines(path: Any) -> list[str] | None:
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None  # a FIFO or device would block the run on read
        data = path.read_bytes()
    except OSError:
        return None  # unreadable files (sockets, permission) are simply not searched
    if b"\x00" in data[:8192]:
        return None
    return data.decode("utf-8", "replace").splitlines()


def _clip(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " [...]"
