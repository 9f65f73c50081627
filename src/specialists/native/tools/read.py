"""read: a text file, or a window of it (offset/limit in lines). Bounded by itself, so the
spill guard skips it: a spilled body is read back with this tool."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import IO, Any

from specialists.native.tools.base import (
    ToolContext,
    ToolFailure,
    ToolOutput,
    arg_int,
    display,
    resolve_inside,
)

DESCRIPTION = (
    "Read the contents of a text file. Output is truncated to 2000 lines or 50KB (whichever "
    "is hit first). Use offset/limit for large files; continue with offset until complete."
)
PARAMETERS = {
    "type": "object",
    "required": ["path"],
    "properties": {
        "path": {"type": "string", "description": "Path to the file (relative or absolute)"},
        "offset": {"type": "number", "description": "Line number to start from (1-indexed)"},
        "limit": {"type": "number", "description": "Maximum number of lines to read"},
    },
}


def run(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
    path = resolve_inside(ctx, args.get("path"), for_read=True)
    offset = arg_int(args, "offset", 1) or 1
    limit = arg_int(args, "limit", None)
    if offset < 1:
        raise ToolFailure("offset must be >= 1")
    if limit is not None and limit < 1:
        raise ToolFailure("limit must be >= 1")
    if path.is_dir():
        raise ToolFailure(f"{display(path, ctx)} is a directory; use ls")
    if not path.exists():
        raise ToolFailure(f"{display(path, ctx)} does not exist")
    if not path.is_file():  # a FIFO or device would block the run on open or read
        raise ToolFailure(f"{display(path, ctx)} is not a regular file; not read")
    max_lines = min(limit or ctx.read_max_lines, ctx.read_max_lines)
    kept: list[str] = []
    chars = 0
    total = 0
    cut_by_size = False
    with path.open("rb") as fh:
        if b"\x00" in fh.read(8192):
            raise ToolFailure(f"{display(path, ctx)} looks binary; not shown")
        fh.seek(0)
        for raw in _lines(fh, ctx.read_max_chars * 4 + 4):
            total += 1
            if total < offset or len(kept) >= max_lines or cut_by_size:
                continue
            line = raw.decode("utf-8", "replace")
            if chars + len(line) > ctx.read_max_chars:
                if not kept:  # one giant line: show its start rather than nothing
                    kept.append(line[: ctx.read_max_chars] + "\n[line truncated]\n")
                cut_by_size = True
                continue
            kept.append(line)
            chars += len(line)
    if total and offset > total:
        raise ToolFailure(f"offset {offset} is past the end of the file ({total} lines)")
    text = "".join(kept)
    last = offset + len(kept) - 1
    if last < total:
        text += f"\n[Showing lines {offset}-{last} of {total}. Use offset={last + 1} to continue.]"
    return ToolOutput(text)


def _lines(fh: IO[bytes], cap: int) -> Iterator[bytes]:
    """The file's lines, each cut to `cap` bytes: one huge line (a minified bundle, a log
    without newlines) must not be loaded whole just to count it or show its start."""
    while True:
        line = fh.readline(cap)
        if not line:
            return
        if not line.endswith(b"\n"):
            rest = line
            while len(rest) == cap and not rest.endswith(b"\n"):
                rest = fh.readline(cap)  # skip the remainder of the long line
        yield line
