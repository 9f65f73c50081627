"""Rows: one line of the fleet, whatever its source.

Every source (the job store today; wave 2 adds timers, missions and schedules beside the
jobs) yields `Row`s keyed `<source>:<id>`. A row names its parent by key, so the tree is
built the same way for a continuation, a thread, a workflow child, a proc job or a timer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from specialists.base.display import for_terminal
from specialists.store.records import ACTIVE_STATES
from specialists.store.rollup import tokens_in as prompt_tokens

# "job": a job directory with a readable status.json. "damaged": one whose status cannot be
# read; it is shown, never dropped, and the rest still render. "timer": a pending timer under
# its owner (fleet/timersource.py). Wave 2 adds its kinds here ("proc", "thread",
# "workflow"), each with the source that yields it.
RowKind = Literal["job", "damaged", "timer"]


def printable(text: str | None) -> str:
    """`text` on one line, safe to put on a terminal or a page: control characters (an
    escape sequence an agent printed) shown as visible escapes such as `\\e[31m`."""
    return for_terminal(text or "").replace("\n", " ").replace("\t", " ")


def printable_block(text: str | None) -> str:
    """Like `printable`, keeping line breaks and tabs (an answer shown whole)."""
    return for_terminal(text or "")


@dataclass(frozen=True, slots=True)
class Row:
    key: str  # "<source>:<id>", unique across sources
    kind: RowKind
    title: str  # the specialist's name
    status: str  # a job status, or "damaged"
    workflow_key: str | None = None  # what a workflow child is: its key
    task: str = ""  # what the row is for: the task's first line (a workflow's: its name)
    parent: str | None = None  # the parent row's key
    job_id: str | None = None  # set on rows a person can act on (stop, steer, feed)
    activity: str = ""  # current tool or event; the error of a failed or damaged job
    started_at_ms: int = 0
    finished_at_ms: int | None = None
    elapsed_s: float = 0.0  # as recorded; `elapsed()` is live for active rows
    tokens_in: int = 0  # prompt tokens, cache reads and writes included
    tokens_out: int = 0
    cost_usd: float = 0.0
    attention: str | None = None  # why the job needs a person (status.json needs_attention)
    stalled: bool = False
    keep_alive: bool = False
    model: str | None = None
    runner: str | None = None
    # A workflow's progress (done, failed, running, queued of total, phase, concurrency),
    # and what it spent with its children (store/rollup.py's shape); None for other rows.
    progress: dict[str, Any] | None = None
    rollup: dict[str, Any] | None = None
    # The spend ceiling nearest its limit that the job counts against (status.json
    # `ceilings`, features/spend/ceiling.py: of, tokens, cost_usd, spent_tokens, spent_usd).
    ceiling: dict[str, Any] | None = None

    def spent(self) -> tuple[int, int, float]:
        """(tokens in, tokens out, cost): a workflow's with its children's (`rollup`)."""
        if self.rollup is None:
            return self.tokens_in, self.tokens_out, self.cost_usd
        spent = self.rollup
        return prompt_tokens(spent), int(spent["tokens"]["output"]), float(spent["cost_usd"])

    @property
    def name(self) -> str:
        """What the row is called in a narrow column: a workflow child by its key, any
        other row by its specialist (its task goes beside it)."""
        return self.workflow_key or self.title

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_STATES

    def elapsed(self, now_ms: int) -> float:
        if self.active and self.started_at_ms:
            return max(0.0, (now_ms - self.started_at_ms) / 1000)
        return self.elapsed_s

    def flags(self) -> tuple[str, ...]:
        """What should catch a person's eye, most urgent first."""
        out = []
        if self.kind == "damaged":
            out.append("damaged")
        if self.attention:
            out.append("attention")
        if self.stalled and self.active:
            out.append("stalled")
        if self.ceiling is not None and self.active and self.ceiling.get("used", 0) >= 0.8:
            out.append("ceiling")
        return tuple(out)

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "kind": self.kind,
            "title": self.title,
            "status": self.status,
            "parent": self.parent,
            "job_id": self.job_id,
            "activity": self.activity,
            "started_at_ms": self.started_at_ms,
            "finished_at_ms": self.finished_at_ms,
            "elapsed_s": self.elapsed_s,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cost_usd": self.cost_usd,
            "attention": self.attention,
            "stalled": self.stalled,
            "keep_alive": self.keep_alive,
            "model": self.model,
            "runner": self.runner,
            "name": self.name,
            "workflow_key": self.workflow_key,
            "task": self.task,
            "progress": self.progress,
            "rollup": self.rollup,
            "ceiling": self.ceiling,
            "active": self.active,
            "flags": list(self.flags()),
        }


class RowSource(Protocol):
    """Where rows come from. `refresh` re-reads only what changed since the last call."""

    def refresh(self) -> bool:
        """Bring the rows up to date; True when any row was added, changed or removed."""
        ...

    def rows(self) -> Iterable[Row]: ...
