"""Parsed documents walked within bounds: YAML alias bombs, cycles and deep nesting stop here."""

from __future__ import annotations

import math
from collections.abc import Mapping

from specialists.base.reader.values import MAX_EXACT, Invalid, check_text, describe, join

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def check_tree(
    data: object, what: str = "the document", *, max_nodes: int = 20_000, max_depth: int = 40
) -> None:
    """Refuse a parsed document too large or too deep to walk safely.

    YAML aliases share one value; each use counts here, so an alias "bomb" (a billion laughs)
    or a cycle (`&a [*a]`) stops at the budget instead of exhausting memory in a later walk.
    """
    budget = max_nodes
    stack: list[tuple[object, int]] = [(data, 0)]
    while stack:
        item, depth = stack.pop()
        budget -= 1
        if budget < 0:
            raise Invalid(
                None,
                f"{what} is too large: more than {max_nodes:,} values"
                " (each use of a YAML alias counts)",
            )
        if depth > max_depth:
            raise Invalid(None, f"{what} is nested too deeply (more than {max_depth} levels)")
        if isinstance(item, Mapping):
            stack.extend((v, depth + 1) for v in item.values())
            stack.extend((k, depth + 1) for k in item if not isinstance(k, str))
        elif isinstance(item, list | tuple):
            stack.extend((v, depth + 1) for v in item)


def plain_data(value: object, field: str, *, max_nodes: int = 2000, max_depth: int = 16) -> Any:
    """A copy made only of text, finite numbers, booleans, null, lists and text-keyed
    mappings; bounded in size and depth. Text must be fit for a command line ("arg")."""
    budget = [max_nodes]

    def copy(item: object, where: str, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0 or depth > max_depth:
            raise Invalid(field, f"too large or too deeply nested (at most {max_nodes:,} values)")
        if item is None or isinstance(item, bool):
            return item
        if isinstance(item, str):
            check_text(item, where, form="arg")
            return item
        if isinstance(item, int | float):
            if (isinstance(item, float) and not math.isfinite(item)) or abs(item) > MAX_EXACT:
                raise Invalid.wrong(where, "a finite number of sensible size", describe(item))
            return item
        if isinstance(item, list):
            return [copy(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(item)]
        if isinstance(item, Mapping):
            out = {}
            for key, v in item.items():
                if not isinstance(key, str):
                    raise Invalid(where, f"keys must be text, got {describe(key)}")
                check_text(key, where, form="line", max_chars=256)
                out[key] = copy(v, join(where, key), depth + 1)
            return out
        raise Invalid.wrong(where, "text, a number, a list or a mapping", describe(item))

    return copy(value, field, 0)
