"""A workflow's stages and edges as an SVG: the pipeline a script ran, with each stage's
children counted (done, running, queued, failed), beside the timeline's bars in time.

Stages come from the workflow's journal (workflows/graph.py); they are laid out in columns
by their longest path from a first stage, in the order they began, and the columns of one
phase share a band titled with its name. Plain SVG made on the server: every text escaped,
nothing referred to outside the document, no script.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from specialists.workflows.graph import Node

NODE_W = 210
NODE_H = 58
COL_GAP = 60
ROW_GAP = 14
TOP = 30  # room for the phase titles
PAD = 8
MAX_DRAWN = 200

FILL = {"running": "#dafbe1", "failed": "#ffebe9", "done": "#eaeef2", "queued": "#ddf4ff"}
STROKE = {"running": "#2da44e", "failed": "#cf222e", "done": "#8c959f", "queued": "#0969da"}


def graph_svg(nodes: Sequence[Node]) -> str:
    drawn = list(nodes[:MAX_DRAWN])
    if not drawn:
        return (
            '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 600 40" role="img">'
            '<text x="8" y="24" class="empty">no stage has begun yet</text></svg>'
        )
    column = _columns(drawn)
    rows: dict[int, int] = {}
    place: dict[str, tuple[float, float]] = {}
    for node in drawn:
        col = column[node.id]
        row = rows.get(col, 0)
        rows[col] = row + 1
        place[node.id] = (PAD + col * (NODE_W + COL_GAP), TOP + row * (NODE_H + ROW_GAP))
    width = PAD * 2 + (max(column.values()) + 1) * (NODE_W + COL_GAP) - COL_GAP
    height = TOP + max(rows.values()) * (NODE_H + ROW_GAP) + (24 if len(nodes) > MAX_DRAWN else 0)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" role="img" aria-label="the workflow\'s {len(drawn)} stages">'
    ]
    parts += _phase_bands(drawn, column, height)
    for node in drawn:
        x, y = place[node.id]
        for parent in node.after:
            if parent in place:
                px, py = place[parent]
                parts.append(_edge(px + NODE_W, py + NODE_H / 2, x, y + NODE_H / 2))
    parts += [_box(node, *place[node.id]) for node in drawn]
    if len(nodes) > MAX_DRAWN:
        parts.append(
            f'<text x="{PAD}" y="{height - 6}" class="more">… {len(nodes) - MAX_DRAWN} more '
            "stages not drawn</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def state_of(node: Node) -> str:
    if node.failed:
        return "failed"
    if node.running:
        return "running"
    if node.queued:
        return "queued" if not node.done else "running"
    return "done"


def counts_text(node: Node) -> str:
    parts = [f"{node.done}/{node.count} done"]
    parts += [f"{n} {what}" for n, what in ((node.running, "running"), (node.queued, "queued"))]
    parts += [f"{node.failed} failed"] if node.failed else []
    return " · ".join(p for p in parts if not p.startswith("0 "))


def _columns(nodes: list[Node]) -> dict[str, int]:
    """Each node's column: one past its deepest parent's (parents begin first)."""
    column: dict[str, int] = {}
    for node in nodes:
        column[node.id] = 1 + max((column[a] for a in node.after if a in column), default=-1)
    return column


def _phase_bands(nodes: list[Node], column: dict[str, int], height: int) -> list[str]:
    """A titled band behind each run of columns whose first stages share a phase."""
    phase_of: dict[int, str | None] = {}
    for node in nodes:
        phase_of.setdefault(column[node.id], node.phase)
    last = max(phase_of)
    out, start = [], 0
    for col in range(last + 1):
        if col < last and phase_of.get(col + 1) == phase_of.get(col):
            continue
        phase = phase_of.get(col)
        if phase:
            x = PAD + start * (NODE_W + COL_GAP) - 5
            w = (col + 1 - start) * (NODE_W + COL_GAP) - COL_GAP + 10
            out.append(
                f'<rect x="{x:.0f}" y="2" width="{w:.0f}" height="{height - 4}" rx="6" '
                f'class="phase"/><text x="{x + 8:.0f}" y="19" class="phase">phase '
                f"{escape(phase[:60])}</text>"
            )
        start = col + 1
    return out


def _edge(x0: float, y0: float, x1: float, y1: float) -> str:
    mid = (x0 + x1) / 2
    return (
        f'<path d="M{x0:.0f},{y0:.0f} C{mid:.0f},{y0:.0f} {mid:.0f},{y1:.0f} {x1 - 6:.0f},'
        f'{y1:.0f}" class="edge"/><polygon points="{x1:.0f},{y1:.0f} {x1 - 7:.0f},'
        f'{y1 - 4:.0f} {x1 - 7:.0f},{y1 + 4:.0f}" class="arrow"/>'
    )


def _box(node: Node, x: float, y: float) -> str:
    state = state_of(node)
    agents = ", ".join(node.agents[:3]) + (" …" if len(node.agents) > 3 else "")
    kind = {"all": "side by side", "stage": "pipeline stage", "run": "one child"}.get(
        node.kind, node.kind
    )
    second = f"{kind} ×{node.count}" + (f" · {agents}" if agents else "")
    title = f"{node.label}: {counts_text(node)} ({second})"
    return (
        f'<g class="stage {state}"><title>{escape(title)}</title>'
        f'<rect x="{x:.0f}" y="{y:.0f}" width="{NODE_W}" height="{NODE_H}" rx="6" '
        f'fill="{FILL[state]}" stroke="{STROKE[state]}"/>'
        f'<text x="{x + 8:.0f}" y="{y + 17:.0f}" class="label">{escape(node.label[:26])}</text>'
        f'<text x="{x + 8:.0f}" y="{y + 34:.0f}" class="tick">{escape(second[:32])}</text>'
        f'<text x="{x + 8:.0f}" y="{y + 50:.0f}" class="counts">'
        f"{escape(counts_text(node)[:32])}</text></g>"
    )
