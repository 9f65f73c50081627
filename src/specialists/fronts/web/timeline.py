"""A job and its children on a time axis, as an SVG: one bar per job, start to end (or now).

Bars beat a table here: overlap (what ran in parallel), gaps (waiting on a parent) and the
long pole are seen at a glance. Every text is escaped; nothing refers outside the document.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from specialists.fronts.fleet.rows import Row

WIDTH = 960
LABEL_W = 230
ROW_H = 22
AXIS_H = 26
MAX_BARS = 300  # a page stays readable; the rest are counted below the chart

STATUS_FILL = {
    "starting": "#d4a72c",
    "running": "#2da44e",
    "waiting": "#1f8fbf",
    "done": "#8c959f",
    "error": "#cf222e",
    "cancelled": "#8250df",
    "pending": "#0969da",  # a timer: from when it was set to when it is due
}


def span_ms(row: Row, now_ms: int) -> tuple[int, int]:
    """(start, end) of a job's bar; an active job runs until now."""
    start = row.started_at_ms
    if row.active:
        return start, max(start, now_ms)
    end = row.finished_at_ms or start + int(row.elapsed_s * 1000)
    return start, max(start, end)


def timeline_svg(rows: Sequence[Row], now_ms: int, *, root_key: str | None = None) -> str:
    timed = [r for r in rows if r.started_at_ms > 0]
    hidden = max(0, len(timed) - MAX_BARS)
    timed = timed[:MAX_BARS]
    if not timed:
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} 40" role="img">'
            '<text x="8" y="24" class="empty">no job with a start time to draw</text></svg>'
        )
    t0 = min(span_ms(r, now_ms)[0] for r in timed)
    t1 = max(span_ms(r, now_ms)[1] for r in timed)
    total = max(t1 - t0, 1000)
    plot_w = WIDTH - LABEL_W - 16
    height = AXIS_H + ROW_H * len(timed) + (24 if hidden else 8)

    def x_of(ms: int) -> float:
        return LABEL_W + (ms - t0) / total * plot_w

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="100%" role="img" aria-label="timeline of {len(timed)} jobs">'
    ]
    for tick_ms, label in _ticks(total):
        x = x_of(t0 + tick_ms)
        anchor = ' text-anchor="end"' if x > WIDTH - 40 else ""
        parts.append(
            f'<line x1="{x:.1f}" y1="{AXIS_H - 6}" x2="{x:.1f}" y2="{height}" class="grid"/>'
            f'<text x="{x:.1f}" y="{AXIS_H - 10}" class="tick"{anchor}>{label}</text>'
        )
    for index, row in enumerate(timed):
        y = AXIS_H + index * ROW_H
        start, end = span_ms(row, now_ms)
        x0, x1 = x_of(start), x_of(end)
        fill = STATUS_FILL.get(row.status, "#57606a")
        name = escape((row.job_id or row.key.rsplit(":", 1)[-1])[:18])
        title = escape(
            f"{row.job_id or row.key} {row.name}: {row.status}, "
            f"{(end - start) / 1000:.1f}s" + (f", {row.activity}" if row.activity else "")
        )
        strong = ' class="root"' if row.key == root_key else ""
        parts.append(
            f"<g><title>{title}</title>"
            f'<text x="6" y="{y + 15}"{strong}>{name} '
            f'<tspan class="who">{escape(row.name[:18])}</tspan></text>'
            f'<rect x="{x0:.1f}" y="{y + 4}" width="{max(x1 - x0, 2):.1f}" height="{ROW_H - 8}" '
            f'rx="3" fill="{fill}"'
            + (' class="live"' if row.active else "")
            + "/>"
            + (  # the length after the bar, or inside its end when the bar reaches the edge
                f'<text x="{x1 + 4:.1f}" y="{y + 15}" class="tick">'
                if x1 < WIDTH - 60
                else f'<text x="{x1 - 4:.1f}" y="{y + 15}" class="tick inbar" text-anchor="end">'
            )
            + f"{_length(end - start)}</text></g>"
        )
    if hidden:
        y = AXIS_H + ROW_H * len(timed) + 16
        parts.append(f'<text x="6" y="{y}" class="more">… {hidden} more jobs not drawn</text>')
    parts.append("</svg>")
    return "".join(parts)


def _length(ms: int) -> str:
    return f"{ms / 1000:.1f}s" if ms < 60_000 else _label(ms // 1000).lstrip("+")


def _ticks(total_ms: int) -> list[tuple[int, str]]:
    """About six round ticks over the span, labelled relative to its start."""
    steps_s = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200)
    day_s = 86400
    whole_days = -(-total_ms // (7 * day_s * 1000)) * day_s  # a wild span: still about six
    step_s = next((s for s in steps_s if total_ms / (s * 1000) <= 7), whole_days)
    return [(t * 1000, _label(t)) for t in range(0, total_ms // 1000 + 1, step_s)]


def _label(seconds: int) -> str:
    if seconds < 60:
        return f"+{seconds}s"
    if seconds < 3600:
        return f"+{seconds // 60}m" + (f"{seconds % 60:02d}s" if seconds % 60 else "")
    return f"+{seconds // 3600}h" + (f"{(seconds % 3600) // 60:02d}m" if seconds % 3600 else "")
