"""Parsed documents walked within bounds: YAML alias bombs, cycles and deep nesting stop here."""

from __future__ import annotations

import math
from collections.abc import Mapping

from specialists.base.reader.values import (
    MAX_EXACT,
    Invalid,
    check_text,
    describe,
    join,
    value_error_text,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


MAX_NODES = 20_000
MAX_DEPTH = 40  # no definition, workflow, schema, argument or answer of ours nests deeper


def load_json(
    text: str | bytes,
    what: str = "JSON",
    *,
    max_nodes: int | None = MAX_NODES,
    max_depth: int = MAX_DEPTH,
    unique_keys: bool = False,
) -> Any:
    """`json.loads` for untrusted text, bounded: a syntax error, a number Python refuses,
    nesting deeper than `max_depth` (also when it would exhaust the parser's own stack), more
    than `max_nodes` values (None: the text's size is the bound) and, with `unique_keys`, a
    key given twice in one object are each one `Invalid` line, never a RecursionError."""
    import json

    hook = _unique_pairs(what) if unique_keys else None
    try:
        data = json.loads(text, object_pairs_hook=hook)
    except json.JSONDecodeError as exc:
        raise Invalid(
            None, f"invalid {what} at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:  # an integer of more than 4,300 digits, bad UTF-8 bytes
        raise Invalid(None, f"invalid {what}: {value_error_text(exc)}") from None
    except RecursionError:
        # as check_tree says it of a parsed one: one line whichever of the two finds it
        raise Invalid(
            None, f"the {what} is nested too deeply (more than {max_depth} levels)"
        ) from None
    check_tree(data, f"the {what}", max_nodes=max_nodes, max_depth=max_depth)
    return data


def _unique_pairs(what: str) -> Any:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise Invalid(None, f"invalid {what}: the key {key[:80]!r} is given twice")
            out[key] = value
        return out

    return pairs


def check_tree(
    data: object,
    what: str = "the document",
    *,
    max_nodes: int | None = MAX_NODES,
    max_depth: int = MAX_DEPTH,
) -> None:
    """Refuse a parsed document too large or too deep to walk safely.

    YAML aliases share one value; each use counts here, so an alias "bomb" (a billion laughs)
    or a cycle (`&a [*a]`) stops at the budget instead of exhausting memory in a later walk.
    """
    budget = max_nodes if max_nodes is not None else float("inf")
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
