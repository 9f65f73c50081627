"""The rows as a tree: each row under its parent, ready to draw line by line.

Roots with anything active (or damaged: it needs a look) underneath come first, then the
most recently started; children
follow their parent in start order (a continuation chain reads top to bottom). A row whose
parent is missing (gc removed it) is a root; parent links that loop are cut at the loop's
first key, so a planted status file can never hide a row or hang the view. Every walk is
iterative: a chain of a thousand continuations must not hit the recursion limit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from specialists.fronts.fleet.rows import Row

MAX_DEPTH = 12  # deeper rows are drawn at this depth: the guides must leave room for the id


@dataclass(frozen=True, slots=True)
class TreeLine:
    row: Row
    depth: int
    prefix: str  # box-drawing guides, e.g. "│  └─ "


def build_tree(rows: Iterable[Row], *, active_only: bool = False) -> list[TreeLine]:
    """Every row once, parents before children; `active_only` keeps the busy subtrees."""
    by_key = {row.key: row for row in rows}
    children: dict[str, list[Row]] = {}
    roots: list[Row] = []
    for row in by_key.values():
        if row.parent is not None and row.parent in by_key and row.parent != row.key:
            children.setdefault(row.parent, []).append(row)
        else:
            roots.append(row)
    for kids in children.values():
        kids.sort(key=lambda r: (r.started_at_ms, r.key))
    seen = _reach(roots, children, set())
    for key in sorted(by_key):
        if key not in seen:  # on a parent loop, or below one
            roots.append(by_key[key])
            _reach([by_key[key]], children, seen)
    order = _preorder(roots, children)
    busy: dict[str, bool] = {}
    latest: dict[str, int] = {}
    for row in reversed(order):  # children before parents
        kids = [k for k in children.get(row.key, ()) if k.key in busy]
        busy[row.key] = row.active or row.kind == "damaged" or any(busy[k.key] for k in kids)
        latest[row.key] = max([row.started_at_ms, *(latest[k.key] for k in kids)])
    roots.sort(key=lambda r: (not busy[r.key], -latest[r.key], r.key))
    lines: list[TreeLine] = []
    placed: set[str] = set()
    stack: list[tuple[Row, int, str, str]] = [(r, 0, "", "") for r in reversed(roots)]
    while stack:
        row, depth, guides, mark = stack.pop()
        if row.key in placed or (active_only and not busy[row.key]):
            continue
        placed.add(row.key)
        lines.append(TreeLine(row, depth, guides + mark))
        kids = [k for k in children.get(row.key, ()) if k.key not in placed]
        if active_only:
            kids = [k for k in kids if busy[k.key]]
        if depth == 0 or depth >= MAX_DEPTH:
            below = guides
        else:
            below = guides + ("   " if mark.startswith("└") else "│  ")
        for index in range(len(kids) - 1, -1, -1):
            mark_kid = "└─ " if index == len(kids) - 1 else "├─ "
            stack.append((kids[index], min(depth + 1, MAX_DEPTH), below, mark_kid))
    return lines


def _reach(start: Iterable[Row], children: dict[str, list[Row]], seen: set[str]) -> set[str]:
    stack = [row.key for row in start]
    while stack:
        key = stack.pop()
        if key not in seen:
            seen.add(key)
            stack.extend(kid.key for kid in children.get(key, ()))
    return seen


def _preorder(roots: list[Row], children: dict[str, list[Row]]) -> list[Row]:
    order: list[Row] = []
    seen: set[str] = set()
    stack = list(reversed(roots))
    while stack:
        row = stack.pop()
        if row.key in seen:
            continue
        seen.add(row.key)
        order.append(row)
        stack.extend(reversed(children.get(row.key, ())))
    return order
