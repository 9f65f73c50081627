"""A workflow's shape as stages and edges, drawn by `specialists web` beside its timeline.

A stage (a node) is one call of the script: `runs.run` (one child), `runs.all` (its items
side by side) or one stage of `runs.pipeline` (each item's run of that stage). The engine
journals a `node` entry when a call begins and tags each child's `launch` with its node, so
the shape survives the engine and is folded from the journal like everything else.

Edges follow what the script awaited, not what it declared (a Python script declares
nothing): a call that begins after others ended depends on those ended since the previous
call began; a call that begins while no call ended since (`asyncio.gather` of two calls) is
their sibling and shares the previous call's parents. A pipeline's stages follow each other.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

NodeKind = Literal["run", "all", "stage"]
MAX_NODES = 500  # a script with more calls than this draws the first ones
MAX_LABEL = 80


class Planner:
    """The engine's side: node entries for the journal, with the edges decided above."""

    def __init__(self) -> None:
        self._count = 0
        self._parents: list[str] = []  # what the previous call began after
        self._ended: list[str] = []  # calls ended since the previous call began

    def begin(
        self, kind: NodeKind, labels: list[str], count: int, phase: str | None
    ) -> list[dict[str, Any]]:
        """Node entries for a call beginning now: one, or one per pipeline stage."""
        if self._ended:
            self._parents, self._ended = self._ended, []
        entries = []
        after = list(self._parents)
        for label in labels:
            self._count += 1
            node = f"n{self._count}"
            entries.append(
                {
                    "e": "node",
                    "id": node,
                    "kind": kind,
                    "label": label[:MAX_LABEL],
                    "count": count,
                    "after": after,
                    "phase": phase,
                }
            )
            after = [node]
        return entries

    def end(self, node: str) -> None:
        """A call ended (for a pipeline: its last stage, once every item is through)."""
        self._ended.append(node)


@dataclass
class Node:
    id: str
    kind: str
    label: str
    count: int  # children the call asked for (known ones; a pipeline stage: its items)
    after: list[str]
    phase: str | None
    agents: list[str] = field(default_factory=list)
    done: int = 0
    failed: int = 0
    running: int = 0  # launched, not ended

    @property
    def queued(self) -> int:
        return max(0, self.count - self.done - self.failed - self.running)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "queued": self.queued}


def fold_graph(entries: list[dict[str, Any]]) -> list[Node]:
    """The nodes of a journal, in the order they began, with each key's last state counted
    in its node. Entries of the wrong shape are skipped (a journal is untrusted input)."""
    nodes: dict[str, Node] = {}
    key_node: dict[str, str] = {}
    key_state: dict[str, str] = {}
    for e in entries:
        kind = e.get("e")
        if kind == "node" and len(nodes) < MAX_NODES:
            node = _node(e)
            if node is not None and node.id not in nodes:
                nodes[node.id] = node
            continue
        key = e.get("key")
        if not isinstance(key, str):
            continue
        if kind in ("launch", "cached") and isinstance(e.get("node"), str):
            key_node[key] = e["node"]
            agent = e.get("agent")
            target = nodes.get(e["node"])
            if target is not None and isinstance(agent, str) and agent not in target.agents:
                target.agents.append(agent[:40])
        if kind == "launch":
            key_state[key] = "running"
        elif kind == "cached":
            key_state[key] = "done"
        elif kind == "end":
            key_state[key] = "done" if e.get("status") == "done" else "failed"
    for key, state in key_state.items():
        node = nodes.get(key_node.get(key, ""))
        if node is not None:
            setattr(node, state, getattr(node, state) + 1)
    for node in nodes.values():
        node.count = max(node.count, node.done + node.failed + node.running)
        node.after = [a for a in node.after if a in nodes]
    return list(nodes.values())


def _node(e: dict[str, Any]) -> Node | None:
    node_id, label, count = e.get("id"), e.get("label"), e.get("count")
    after = e.get("after")
    if not (isinstance(node_id, str) and isinstance(label, str)):
        return None
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return None
    if not isinstance(after, list) or not all(isinstance(a, str) for a in after):
        return None
    phase = e.get("phase")
    return Node(
        id=node_id[:20],
        kind=str(e.get("kind") or "run")[:10],
        label=label[:MAX_LABEL],
        count=min(count, 100_000),
        after=[a[:20] for a in after[:MAX_NODES]],
        phase=phase[:MAX_LABEL] if isinstance(phase, str) else None,
    )


SEPARATORS = "-_:/.@+ "


def common_label(keys: list[str]) -> str:
    """What the children of one `runs.all` have in common: their keys' shared start
    (`lint-a.py`, `lint-b.py` -> `lint`), else how many they are."""
    prefix = os.path.commonprefix(keys).rstrip(SEPARATORS) if len(keys) > 1 else ""  # noqa: RUF071 - keys are names, not paths
    if prefix:
        return prefix
    return keys[0] if len(keys) == 1 else f"{len(keys)} children"


def stage_label(stage: Callable[..., Any], n: int) -> str:
    """A pipeline stage's name: its function's (`review`), else its position."""
    name = getattr(stage, "__name__", "")
    return name if isinstance(name, str) and name and not name.startswith("<") else f"stage {n}"
