"""edit: exact-text replacements, each matching one unique, non-overlapping region."""

from __future__ import annotations

import itertools
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
    "Edit a single file using exact text replacement. Every edits[].oldText must match a "
    "unique, non-overlapping region of the original file. Merge nearby changes into one edit."
)
PARAMETERS = {
    "type": "object",
    "required": ["path", "edits"],
    "properties": {
        "path": {"type": "string", "description": "Path to the file (relative or absolute)"},
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["oldText", "newText"],
                "properties": {
                    "oldText": {"type": "string", "description": "Exact text to replace"},
                    "newText": {"type": "string", "description": "Replacement text"},
                },
            },
        },
    },
}


def _edits(args: Mapping[str, Any]) -> list[tuple[str, str]]:
    raw = args.get("edits")
    if raw is None and "oldText" in args:  # the single-edit shape some models send
        raw = [{"oldText": args.get("oldText"), "newText": args.get("newText")}]
    if not isinstance(raw, list) or not raw:
        raise ToolFailure("edits must be a non-empty array of {oldText, newText}")
    out = []
    for n, item in enumerate(raw, 1):
        if not isinstance(item, dict):
            raise ToolFailure(f"edits[{n}] must be an object with oldText and newText")
        old, new = arg_str(item, "oldText"), arg_str(item, "newText")
        if not old:
            raise ToolFailure(f"edits[{n}].oldText is empty")
        out.append((old, new))
    return out


def run(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
    path = resolve_inside(ctx, args.get("path"))
    refused = claimed(ctx, path)
    if refused:
        raise ToolFailure(refused)
    edits = _edits(args)
    name = display(path, ctx)
    if not path.is_file():
        raise ToolFailure(f"{name} does not exist (use write to create it)")
    original = path.read_text(encoding="utf-8")
    spans: list[tuple[int, int, str]] = []
    for n, (old, new) in enumerate(edits, 1):
        count = original.count(old)
        if count == 0:
            raise ToolFailure(f"edits[{n}].oldText not found in {name}")
        if count > 1:
            raise ToolFailure(
                f"edits[{n}].oldText matches {count} places in {name}; add surrounding context"
            )
        start = original.index(old)
        spans.append((start, start + len(old), new))
    spans.sort()
    for (_, end, _), (start, _, _) in itertools.pairwise(spans):
        if start < end:
            raise ToolFailure("edits overlap; merge them into one edit")
    pieces, pos = [], 0
    for start, end, new in spans:
        pieces += [original[pos:start], new]
        pos = end
    pieces.append(original[pos:])
    path.write_text("".join(pieces), encoding="utf-8")
    return ToolOutput(f"Applied {len(spans)} edit(s) to {name}")
