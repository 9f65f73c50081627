"""How one fleet row and one event are drawn in `top`: plain strings and style names."""

from __future__ import annotations

from typing import Any

from specialists.events.lines import duration
from specialists.fronts.fleet.rows import Row
from specialists.fronts.fleet.tree import TreeLine

# (key, label, width): None lets the column take what its longest cell needs.
COLUMNS: tuple[tuple[str, str, int | None], ...] = (
    ("job", "job", None),
    ("what", "what", 26),
    ("status", "status", 9),
    ("flags", "flags", 14),
    ("elapsed", "elapsed", 7),
    ("tokens", "tokens", 13),
    ("cost", "cost", 8),
    ("activity", "activity", None),  # last, and as wide as the terminal leaves
)
MIN_ACTIVITY = 20


def activity_width(terminal_width: int, job_width: int = 14) -> int:
    """What the activity column gets of the terminal: the rest after the fixed columns."""
    fixed = job_width + sum(width or 0 for key, _, width in COLUMNS if key not in ("job",))
    padding = 2 * len(COLUMNS) + 2  # one cell of padding each side, and the scrollbar
    return max(MIN_ACTIVITY, terminal_width - fixed - padding)


STATUS_STYLE = {
    "starting": "yellow",
    "running": "green",
    "waiting": "cyan",
    "done": "dim",
    "error": "red",
    "cancelled": "magenta",
    "damaged": "bold red reverse",
    "pending": "blue",
}

FLAG_TEXT = {"damaged": "DAMAGED", "attention": "⚠ATTN", "stalled": "STALLED", "ceiling": "$CEIL"}


def compact(count: int) -> str:
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.1f}M"


def money(usd: float) -> str:
    if usd <= 0:
        return "-"
    return f"${usd:.4f}" if usd < 10 else f"${usd:,.2f}"


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def what(row: Row) -> str:
    """What the row is: a workflow child by its key; another job as `specialist · task`."""
    if row.workflow_key or not row.task or row.task == row.title:
        return row.name
    return f"{row.title} · {row.task}"


def spending(row: Row) -> tuple[str, str]:
    """(tokens in/out, cost): a workflow's with its children's, marked Σ."""
    tokens_in, tokens_out, cost = row.spent()
    mark = "Σ" if row.rollup is not None else ""
    tokens = f"{mark}{compact(tokens_in)}/{compact(tokens_out)}" if tokens_in or tokens_out else ""
    return tokens, (mark + money(cost) if cost else "")


def row_cells(line: TreeLine, now_ms: int, activity: int = 60) -> dict[str, str]:
    row = line.row
    name = row.job_id or row.key.rsplit(":", 1)[-1]
    tokens, cost = spending(row)
    return {
        "job": line.prefix + name,
        "what": clip(what(row), 26),
        "status": row.status,
        "activity": clip(row.activity, activity),
        "elapsed": duration(row.elapsed(now_ms)) if row.started_at_ms or row.elapsed_s else "",
        "tokens": tokens,
        "cost": cost,
        "flags": " ".join(FLAG_TEXT[f] for f in row.flags()),
    }


def summary_text(root: str, totals: Any, active_only: bool) -> str:
    parts = [f"{totals.active} active", f"{totals.finished} finished"]
    if totals.damaged:
        parts.append(f"{totals.damaged} damaged")
    if totals.timers:
        parts.append(f"{totals.timers} timers")
    if totals.attention:
        parts.append(f"{totals.attention} need attention")
    parts.append(f"tokens {compact(totals.tokens_in)}/{compact(totals.tokens_out)}")
    parts.append(money(totals.cost_usd) if totals.cost_usd else "$0")
    shown = "  [active only]" if active_only else ""
    return f"specialists top · {root} · " + " · ".join(parts) + shown


def row_title(row: Row) -> str:
    """The feed pane's title for the selected row."""
    name = row.job_id or row.key
    extra = f" · {row.model}" if row.model else ""
    task = f" · {row.task}" if row.task and row.task != row.name else ""
    key = f" · {row.workflow_key}" if row.workflow_key else ""
    c = row.ceiling
    left = f" · ceiling of {c['whose']}: {c['left']}" if c else ""
    return f"feed · {name} · {row.title}{key}{task} · {row.status}{extra}{left}"
