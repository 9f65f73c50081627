"""ls: the entries of one directory (directories end with /)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specialists.native.tools.base import (
    ToolContext,
    ToolFailure,
    ToolOutput,
    arg_int,
    display,
    resolve_inside,
)

DESCRIPTION = (
    "List directory contents, sorted, directories suffixed with /. Includes dotfiles. "
    "Limited to `limit` entries (default 500)."
)
PARAMETERS = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Directory to list (default .)"},
        "limit": {"type": "number", "description": "Maximum number of entries (default 500)"},
    },
}


def run(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
    path = resolve_inside(ctx, args.get("path", "."))
    limit = max(1, arg_int(args, "limit", 500) or 500)
    if not path.is_dir():
        raise ToolFailure(f"{display(path, ctx)} is not a directory")
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
    shown = names[:limit]
    if len(names) > limit:
        shown.append(f"[{len(names) - limit} more entries not shown]")
    return ToolOutput("\n".join(shown) if shown else "(empty directory)")
