"""mission.json to and from a Mission, with every field checked on the way in.

A file that is not ours (a wrong type anywhere, a newer schema) is refused with one line
naming the field: the store reports the mission as damaged and lists the others.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from specialists.base.errors import UserError
from specialists.features.missions.model import (
    RECEIPT_KINDS,
    SCHEMA,
    STATUSES,
    Artifact,
    Decision,
    Goal,
    Mission,
    Receipt,
    Run,
    check_id,
)
from specialists.store.rollup import checked

_KNOWN = {
    "schema", "id", "title", "objective", "status", "created_ms", "updated_ms",
    "project_root", "owner", "labels", "runs", "decisions", "artifacts", "receipts", "goal",
    "summary", "closed_ms", "ceiling",
}  # fmt: skip


def mission_to_dict(m: Mission) -> dict[str, Any]:
    # schema, id and status first: the SessionStart hook reads only a file's head for them.
    return {
        "schema": SCHEMA,
        "id": m.id,
        "status": m.status,
        "title": m.title,
        "objective": m.objective,
        "created_ms": m.created_ms,
        "updated_ms": m.updated_ms,
        "project_root": m.project_root,
        "owner": list(m.owner),
        "labels": list(m.labels),
        "runs": [
            {k: v for k, v in asdict(r).items() if v is not None or k not in ("spent", "parent")}
            for r in m.runs
        ],
        "decisions": [
            {
                "id": d.id,
                "question": d.question,
                "created_ms": d.created_ms,
                "status": "open" if d.open else "resolved",
                "summary": d.summary,
                "resolved_ms": d.resolved_ms,
            }
            for d in m.decisions
        ],
        "artifacts": [asdict(a) for a in m.artifacts],
        "receipts": [asdict(r) for r in m.receipts],
        "goal": goal_to_dict(m.goal),
        "summary": m.summary,
        "closed_ms": m.closed_ms,
        **({"ceiling": dict(m.ceiling)} if m.ceiling else {}),
        **m.extra,
    }


def goal_to_dict(goal: Goal | None) -> dict[str, Any] | None:
    if goal is None:
        return None
    return {
        "budget_tokens": goal.budget_tokens,
        "spent_tokens": goal.spent_tokens,
        "notices": goal.notices,
        "ended": goal.ended,
        "seen": list(goal.seen),
    }


def _str(data: dict[str, Any], key: str, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise UserError(f"field {key!r} is not text")
    return value


def _int(data: dict[str, Any], key: str, *, optional: bool = False) -> int:
    value = data.get(key)
    if value is None and optional:
        return None  # type: ignore[return-value]  # callers that pass optional accept None
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"field {key!r} is not a whole number")
    return value


def _objects(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(x, dict) for x in value):
        raise UserError(f"field {key!r} is not a list of objects")
    return value


def _strings(data: dict[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise UserError(f"field {key!r} is not a list of text")
    return tuple(value)


def mission_from_dict(data: dict[str, Any]) -> Mission:
    schema = data.get("schema")
    if schema != SCHEMA:
        raise UserError(f"schema {str(schema)[:10]} is not {SCHEMA} (written by a newer version?)")
    status = data.get("status")
    if status not in STATUSES:
        raise UserError(f"unknown status {str(status)[:20]!r}")
    decisions = []
    for d in _objects(data, "decisions"):
        resolved = _int(d, "resolved_ms", optional=True)
        decisions.append(
            Decision(
                _str(d, "id"),
                _str(d, "question"),
                _int(d, "created_ms"),
                _str(d, "summary", ""),
                resolved,
            )
        )
    receipts = []
    for r in _objects(data, "receipts"):
        if r.get("kind") not in RECEIPT_KINDS:
            raise UserError(f"unknown receipt kind {str(r.get('kind'))[:20]!r}")
        receipts.append(
            Receipt(
                r["kind"],
                _str(r, "url"),
                _str(r, "status"),
                _int(r, "added_ms"),
                _str(r, "note", ""),
            )
        )
    return Mission(
        id=check_id(data.get("id")),
        title=_str(data, "title"),
        created_ms=_int(data, "created_ms"),
        updated_ms=_int(data, "updated_ms"),
        project_root=_str(data, "project_root"),
        objective=_str(data, "objective", ""),
        status=status,
        owner=_strings(data, "owner"),
        labels=_strings(data, "labels"),
        runs=tuple(
            Run(
                _str(r, "job_id"),
                _int(r, "linked_ms"),
                _str(r, "specialist", ""),
                _str(r, "status", "?"),
                _int({"tokens": r.get("tokens", 0)}, "tokens"),
                checked(r.get("spent")),
                r["parent"] if isinstance(r.get("parent"), str) else None,
            )
            for r in _objects(data, "runs")
        ),
        decisions=tuple(decisions),
        artifacts=tuple(
            Artifact(_str(a, "kind"), _str(a, "path"), _int(a, "added_ms"), _str(a, "note", ""))
            for a in _objects(data, "artifacts")
        ),
        receipts=tuple(receipts),
        goal=goal_from_dict(data.get("goal")),
        summary=_str(data, "summary", ""),
        closed_ms=_int(data, "closed_ms", optional=True),
        ceiling=_ceiling(data.get("ceiling")),
        extra={k: v for k, v in data.items() if k not in _KNOWN},
    )


def _ceiling(data: object) -> dict[str, Any]:
    """What the mission's jobs may spend (features/spend): tokens and cost_usd, checked."""
    if data is None:
        return {}
    if not isinstance(data, dict) or set(data) - {"tokens", "cost_usd"}:
        raise UserError("field 'ceiling' should be an object of tokens and cost_usd")
    tokens, usd = data.get("tokens"), data.get("cost_usd")
    if not (tokens is None or (type(tokens) is int and tokens > 0)):
        raise UserError("field 'ceiling.tokens' should be a whole number over 0")
    if not (usd is None or (type(usd) in (int, float) and 0 < usd < 1e9)):
        raise UserError("field 'ceiling.cost_usd' should be dollars over 0")
    return dict(data)


def goal_from_dict(data: object) -> Goal | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise UserError("field 'goal' is not an object")
    ended = data.get("ended")
    if ended not in (None, "budget-exhausted", "closed"):
        raise UserError(f"unknown goal end {str(ended)[:20]!r}")
    return Goal(
        budget_tokens=_int(data, "budget_tokens"),
        spent_tokens=_int(data, "spent_tokens"),
        notices=_int(data, "notices"),
        ended=ended,
        seen=_strings(data, "seen"),
    )
