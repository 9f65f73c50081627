"""The threads ops (base/ops.py): `specialists threads`, and the agent tools (tools.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from specialists.base.ops import Noun, Op
from specialists.features.threads.tools import TOOL_OPS

if TYPE_CHECKING:
    from specialists.native.agent_tools import Caller


def threads(caller: Caller, *, tree: bool = False) -> dict[str, Any]:
    """Every child thread, its phase and its transport.

    Args:
        tree: each child under its parent thread
    """
    from specialists.features.threads.listing import row_dict, thread_rows, tree_order

    rows, problems = thread_rows(caller.state_root)
    caller.warnings.extend(problems)
    ordered = tree_order(rows) if tree else [(0, c) for c in rows]
    return {"threads": [{**row_dict(c), "depth": depth} for depth, c in ordered]}


THREADS = Noun(
    "threads",
    "list child threads (jobs spawned by spawn_thread)",
    (Op(threads, reads=True, tool=None), *TOOL_OPS),
)
