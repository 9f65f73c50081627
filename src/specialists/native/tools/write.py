"""write: create or overwrite a file (parents created)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specialists.native.tools.base import (
    ToolContext,
    ToolFailure,
    ToolOutput,
    arg_str,
    claimed,
    display,
    resolve_inside,
)

DESCRIPTION = (
    "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. "
    "Automatically creates parent directories."
)
PARAMETERS = {
    "type": "object",
    "required": ["path", "content"],
    "properties": {
        "path": {"type": "string", "description": "Path to the file (relative or absolute)"},
        "content": {"type": "string", "description": "Content to write to the file"},
    },
}


def run(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
    path = resolve_inside(ctx, args.get("path"))
    refused = claimed(ctx, path)
    if refused:
        raise ToolFailure(refused)
    content = arg_str(args, "content")
    if path.exists() and not path.is_file():  # a FIFO would block the run until read
        raise ToolFailure(f"{display(path, ctx)} exists and is not a regular file; not written")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    return ToolOutput(f"Wrote {len(content.encode())} bytes to {display(path, ctx)}")
