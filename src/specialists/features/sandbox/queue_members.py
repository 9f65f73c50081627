"""Which sandboxes a merge queue takes and in what order: the members' overlaps, the orders
(`auto` by default) and the target they land in (queue.py has the queue itself)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from specialists.base.errors import UserError
from specialists.features.sandbox.backend import Sandbox
from specialists.features.sandbox.queue import Candidate, Member


def ordered(members: list[Member], order: str) -> list[Member]:
    """`given` as named; `fifo` by creation; `smallest` by lines changed; `auto` (the
    default): members that overlap nobody first, oldest first (they cannot conflict with each
    other and need no resolver), then the overlapping ones smallest first, so the fewest
    lines land before a conflict and the resolver adapts the larger change once."""
    if order == "given":
        return list(members)
    if order == "fifo":
        return sorted(members, key=lambda m: m.created_at_ms)
    if order == "smallest":
        return sorted(members, key=lambda m: (m.size, m.created_at_ms))
    touched = [set(m.files) for m in members]
    alone = [
        not any(touched[i] & touched[j] for j in range(len(members)) if j != i)
        for i in range(len(members))
    ]
    keyed = sorted(
        range(len(members)),
        key=lambda i: (
            not alone[i],
            members[i].size if not alone[i] else 0,
            members[i].created_at_ms,
        ),
    )
    return [members[i] for i in keyed]


def overlaps(members: list[Member]) -> list[dict[str, Any]]:
    """Each pair of members that changed a same file, with those files."""
    out = []
    for i, a in enumerate(members):
        for b in members[i + 1 :]:
            both = sorted(set(a.files) & set(b.files))
            if both:
                out.append({"a": a.sandbox, "b": b.sandbox, "paths": both})
    return out


def target_of(gs: Any, candidates: list[Candidate]) -> tuple[Path, Sandbox | None]:
    """Where the members go back to: their parent sandbox, else the working copy they were
    made from. Siblings share it; anything else is refused."""
    parents = {c.sandbox.parent for c in candidates}
    if len(parents) != 1:
        raise UserError("these sandboxes have different parents; queue siblings only")
    (parent_id,) = parents
    if parent_id is not None:
        parent = gs.get(parent_id)
        if parent is None:
            raise UserError(f"the parent sandbox {parent_id} has no record")
        return parent.path, parent
    origins = {os.path.realpath(c.sandbox.origin) for c in candidates}
    if len(origins) != 1:
        raise UserError("these sandboxes come from different working copies; queue siblings only")
    return Path(origins.pop()), None
