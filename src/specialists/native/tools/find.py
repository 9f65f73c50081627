"""find: files whose path matches a glob pattern."""

from __future__ import annotations

import fnmatch
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
    "Find files by glob pattern, e.g. '*.py' or 'src/**/test_*.py'. Returns paths relative "
    "to the working directory. Skips .git and node_modules. Limited to `limit` results "
    "(default 1000)."
)
PARAMETERS = {
    "type": "object",
    "required": ["pattern"],
    "properties": {
        "pattern": {"type": "string", "description": "Glob pattern to match"},
        "path": {"type": "string", "description": "Directory to search in (default .)"},
        "limit": {"type": "number", "description": "Maximum number of results (default 1000)"},
    },
}


def run(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
    pattern = arg_str(args, "pattern")
    root = resolve_inside(ctx, args.get("path", "."))
    limit = max(1, arg_int(args, "limit", 1000) or 1000)
    if not root.is_dir():
        raise ToolFailure(f"{args.get('path')} is not a directory")
    plain = pattern.replace("**/", "")
    found: list[str] = []
    for path in walk_files(root):
        if ctx.cancel.is_set():
            raise ToolFailure("aborted")
        rel_root = str(path.relative_to(root))
        if (
            fnmatch.fnmatch(rel_root, pattern)
            or fnmatch.fnmatch(rel_root, plain)
            or ("/" not in pattern and fnmatch.fnmatch(path.name, pattern))
        ):
            found.append(display(path, ctx))
            if len(found) >= limit:
                found.append(f"[result limit {limit} reached; narrow the pattern]")
                break
    return ToolOutput("\n".join(found) if found else "No files found")
