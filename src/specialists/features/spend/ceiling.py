"""Spend ceilings: what a tree of jobs may spend, and whether it has (pure: no files).

A ceiling is set on a job (`run --max-cost 2.50 --max-tokens 200k`, `workflow run`), a
mission, a session (config `[spend] session_max_cost`) or every tree (config `max_cost`), in
tokens, US dollars or both. It covers every job below the one it is set on: a job's
supervisor copies its parent's ceilings into its own status (`ceilings`), so each job knows
every ceiling it counts against, and the spend under one is the sum of the own spend of the
jobs whose status names it. Tokens are input + output (as a workflow's budget always was);
cache reads and writes count in the dollars only.

An entry (status.json `ceilings`): {"of": key, "tokens": N | null, "cost_usd": X | null,
"spent_tokens": n, "spent_usd": x}, where the key says whose ceiling it is: `job-<id>` (that
job's tree), `mission-<id>`, or an outside session's owner key (`claude-<id>`, ...).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from specialists.base.errors import UserError
from specialists.base.tuples import NamedTuple

WARN_AT = 0.8  # a ceiling this far spent is said once (an event on the job, shown by feed)
MAX_TOKENS = 10**12
MAX_USD = 1_000_000.0
_SUFFIX = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}


def parse_tokens(text: object, what: str = "--max-tokens") -> int:
    """`200000`, `200_000`, `200k`, `1.5M` -> a whole number of tokens over 0."""
    if isinstance(text, int) and not isinstance(text, bool):
        value: float = text
    else:
        raw = str(text).strip().lower().replace("_", "").replace(",", "")
        scale = _SUFFIX.get(raw[-1:], 1) if raw else 1
        digits = raw[:-1] if scale > 1 else raw
        try:
            value = float(digits) * scale
        except ValueError:
            value = -1.0
    if not (math.isfinite(value) and 1 <= value <= MAX_TOKENS and value == int(value)):
        raise UserError(
            f"{what} must be a whole number of tokens over 0; got {str(text)[:40]!r}",
            hint="e.g. 200000, 200k or 1.5M",
        )
    return int(value)


def parse_usd(text: object, what: str = "--max-cost") -> float:
    """`2.50` or `$2.50` -> dollars over 0."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        value = float(text)
    else:
        try:
            value = float(str(text).strip().removeprefix("$"))
        except ValueError:
            value = -1.0
    if not (math.isfinite(value) and 0 < value <= MAX_USD):
        raise UserError(
            f"{what} must be US dollars over 0; got {str(text)[:40]!r}", hint="e.g. 2.50"
        )
    return round(value, 6)


def own_ceiling(
    tokens: object = None,
    cost_usd: object = None,
    *,
    approved_usd: object = None,
    mission: str | None = None,
) -> dict[str, Any]:
    """A job record's `ceiling` from a front's values (None: not given), checked, and the
    mission it is run on when one is named (its ceiling covers the job too)."""
    out: dict[str, Any] = {}
    if tokens is not None:
        out["tokens"] = parse_tokens(tokens)
    if cost_usd is not None:
        out["cost_usd"] = parse_usd(cost_usd)
    if approved_usd is not None:
        out["approved_usd"] = parse_usd(approved_usd, "--approve-cost")
    if mission:
        out["mission"] = mission
    return out


class Entry(NamedTuple):
    """One ceiling a job counts against, and what was spent under it when last counted."""

    of: str
    tokens: int | None
    cost_usd: float | None
    spent_tokens: int = 0
    spent_usd: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()

    @classmethod
    def of_dict(cls, data: object) -> Entry | None:
        """An entry read from a status file (untrusted: a bad one is None)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("of"), str):
            return None
        tokens, usd = data.get("tokens"), data.get("cost_usd")
        if not (tokens is None or _whole(tokens)) or not (usd is None or _number(usd)):
            return None
        if tokens is None and usd is None:
            return None
        spent_t, spent_u = data.get("spent_tokens", 0), data.get("spent_usd", 0.0)
        return cls(
            data["of"],
            tokens,
            None if usd is None else float(usd),
            spent_t if _whole(spent_t) else 0,
            float(spent_u) if _number(spent_u) else 0.0,
        )

    def counted(self, tokens: int, usd: float) -> Entry:
        return self._replace(spent_tokens=tokens, spent_usd=round(usd, 6))

    def over(self) -> bool:
        return (self.tokens is not None and self.spent_tokens >= self.tokens) or (
            self.cost_usd is not None and self.spent_usd >= self.cost_usd
        )

    def used(self) -> float:
        """The larger share spent of its limits (0.5: half of one of them)."""
        shares = [self.spent_tokens / self.tokens] if self.tokens else []
        shares += [self.spent_usd / self.cost_usd] if self.cost_usd else []
        return max(shares, default=0.0)

    def whose(self) -> str:
        kind, _, ident = self.of.partition("-")
        if kind == "job":
            return f"job {ident}'s tree"
        if kind == "mission":
            return f"mission {ident}"
        return f"session {self.of}"

    def figures(self) -> str:
        """`$2.61 of $2.50, 180,000 of 200,000 tokens`: spent against each limit."""
        parts = []
        if self.cost_usd is not None:
            parts.append(f"{usd(self.spent_usd)} of {usd(self.cost_usd)}")
        if self.tokens is not None:
            parts.append(f"{self.spent_tokens:,} of {self.tokens:,} tokens")
        return ", ".join(parts)

    def left(self) -> str:
        """What may still be spent: `$1.20 left` (the nearest limit first)."""
        parts = []
        if self.cost_usd is not None:
            parts.append(usd(max(0.0, self.cost_usd - self.spent_usd)))
        if self.tokens is not None:
            parts.append(f"{max(0, self.tokens - self.spent_tokens):,} tokens")
        return " / ".join(parts) + " left"

    def reached(self) -> str:
        """The job's error when it stops at this ceiling."""
        return f"spend ceiling reached: {self.whose()} spent {self.figures()}"


def usd(amount: float) -> str:
    """Dollars as people read them: cents from $1 up, four places below (a cheap model's)."""
    return f"${amount:,.2f}" if amount >= 1 or amount == 0 else f"${amount:.4f}"


def entries(values: Iterable[object]) -> list[Entry]:
    """The good entries of a status's `ceilings`, one per key (the first wins)."""
    out: dict[str, Entry] = {}
    for value in values:
        entry = Entry.of_dict(value)
        if entry is not None and entry.of not in out:
            out[entry.of] = entry
    return list(out.values())


def tightest(found: Iterable[Entry]) -> Entry | None:
    """The ceiling nearest its limit: the one a view shows."""
    return max(found, key=Entry.used, default=None)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS


def _number(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= MAX_USD * 1000
    )
