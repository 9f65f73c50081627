"""A mission as plain data: why delegated work exists and how to find it again later.

`mission.json` holds the objective, the status, the runs linked to it (job ids; a workflow is
a job, so linking its job links the workflow), decisions, artifacts, receipts, labels and an
optional goal (the continuation driver, goal.py). The pure changes below return a new
Mission or raise UserError naming what is wrong; the store (store.py) applies them under the
mission's lock. Nothing here touches a file.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

from specialists.base.errors import StoreError, UserError
from specialists.store.fields import EMPTY, Declared
from specialists.store.rollup import checked

SCHEMA = 1
_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,47}")
ID_HINT = "1-48 of a-z, 0-9, '-', '_', starting with a letter or digit"
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/-]{0,63}")

MAX_TITLE = 200
TITLE_CHARS = 80  # an automatic title
MAX_TEXT = 4000  # an objective, a question, a summary, a note
MAX_RUNS = 5000
MAX_DECISIONS = 500
MAX_ARTIFACTS = 1000
MAX_RECEIPTS = 500
MAX_LABELS = 32
MAX_URL = 2000
MAX_BUDGET_TOKENS = 10**10

Status = Literal["active", "paused", "completed", "failed", "cancelled"]
STATUSES: tuple[Status, ...] = ("active", "paused", "completed", "failed", "cancelled")
Terminal = Literal["completed", "failed", "cancelled"]
TERMINAL: tuple[Terminal, ...] = ("completed", "failed", "cancelled")
ReceiptKind = Literal["pull_request", "ci", "deployment", "release"]
RECEIPT_KINDS: tuple[ReceiptKind, ...] = ("pull_request", "ci", "deployment", "release")
# Why a goal stopped driving: its budget is spent, or its mission closed.
GoalEnd = Literal["budget-exhausted", "closed"]
_LENIENT = ("spent", "parent")  # a run's fields written only when known


class Run(Declared):
    _what = "a mission's run"
    job_id: str
    linked_ms: int
    specialist: str = ""
    status: str = "starting"  # as last seen (mission show refreshes it)
    tokens: int = 0  # input + output tokens, as last seen (final once the job ended)
    # What it spent with any children (store/rollup.py's shape) and the job it is below, as
    # last seen: the mission's spending, with a workflow's children counted once. Read
    # leniently (a shape not ours is unknown, not damage) and written only when known.
    spent: Any = None
    parent: Any = None

    @classmethod
    def _after_read(cls, record: Run, where: str) -> None:
        record.spent = checked(record.spent)
        if not isinstance(record.parent, str):
            record.parent = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in super().to_dict().items() if v is not None or k not in _LENIENT}


class Decision(Declared):
    _what = "a mission's decision"
    id: str  # d1, d2, ...
    question: str
    created_ms: int
    status: Any = "open"  # written from resolved_ms ("open" or "resolved"), never read
    summary: str = ""  # set once, when resolved
    resolved_ms: int | None = None

    @property
    def open(self) -> bool:
        return self.resolved_ms is None

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {"status": "open" if self.open else "resolved"}


class Artifact(Declared):
    _what = "a mission's artifact"
    kind: str  # patch, review, note, report, ... (free text, one word)
    path: str
    added_ms: int
    note: str = ""


class Receipt(Declared):
    """Evidence of an outside outcome (a PR, a CI run, a deployment, a release). Evidence
    only: it never authorises or starts a merge, a deployment or a release."""

    _what = "a mission's receipt"
    _choices = {"kind": frozenset(RECEIPT_KINDS)}
    kind: str
    url: str
    status: str
    added_ms: int
    note: str = ""


class Goal(Declared):
    """The continuation driver: a notice to the owner after each idle turn of a linked job,
    until `spent_tokens` reaches `budget_tokens` or the mission is paused or closed."""

    _what = "a mission's goal"
    budget_tokens: int
    spent_tokens: int = 0
    notices: int = 0  # notices posted so far (the seq of the next one is notices + 1)
    ended: str | None = None  # a GoalEnd
    seen: list[str] = EMPTY  # idle turns already counted (bounded), so a repeat is ignored

    @classmethod
    def _after_read(cls, record: Goal, where: str) -> None:
        if record.ended not in (None, "budget-exhausted", "closed"):
            raise StoreError(f"unknown goal end {str(record.ended)[:20]!r}")


class Mission(Declared):
    """mission.json, its fields in the file's order: schema, id and status first (the
    SessionStart hook reads only a file's head for them). Keys that are not ours are kept as
    they were (`extra`, written back after the others)."""

    _what = "mission.json"
    _choices = {"status": frozenset(STATUSES)}
    extra: ClassVar[dict[str, Any]] = {}  # per mission once read; never changed in place
    schema: int = SCHEMA
    id: str
    status: str = "active"  # a Status
    title: str
    objective: str = ""
    created_ms: int
    updated_ms: int
    project_root: str
    owner: list[str] = EMPTY  # owner keys (owner.py) goal notices go to
    labels: list[str] = EMPTY
    runs: list[Run] = EMPTY
    decisions: list[Decision] = EMPTY
    artifacts: list[Artifact] = EMPTY
    receipts: list[Receipt] = EMPTY
    goal: Goal | None = None
    summary: str = ""
    closed_ms: int | None = None
    ceiling: dict[str, Any] = EMPTY  # what its jobs may spend (spend/); written when set

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def open_decisions(self) -> list[Decision]:
        return [d for d in self.decisions if d.open]

    def run_ids(self) -> set[str]:
        return {r.job_id for r in self.runs}

    @classmethod
    def _before_read(cls, data: dict[str, Any], where: str) -> None:
        schema = data.get("schema")
        if schema != SCHEMA:
            raise StoreError(
                f"schema {str(schema)[:10]} is not {SCHEMA} (written by a newer version?)"
            )

    @classmethod
    def _after_read(cls, record: Mission, where: str) -> None:
        check_id(record.id)
        _check_ceiling(record.ceiling)

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str | None = None) -> Mission:
        mission = super().from_dict(data, source=source)
        known = {f.name for f in cls._fields}
        mission.__dict__["extra"] = {k: v for k, v in data.items() if k not in known}
        return mission

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if not self.ceiling:
            del out["ceiling"]
        return out | self.extra


def _check_ceiling(data: dict[str, Any]) -> None:
    """What the mission's jobs may spend (features/spend): tokens and cost_usd, checked."""
    if set(data) - {"tokens", "cost_usd"}:
        raise StoreError("field 'ceiling' should be an object of tokens and cost_usd")
    tokens, usd = data.get("tokens"), data.get("cost_usd")
    if not (tokens is None or (type(tokens) is int and tokens > 0)):
        raise StoreError("field 'ceiling.tokens' should be a whole number over 0")
    if not (usd is None or (type(usd) in (int, float) and 0 < usd < 1e9)):
        raise StoreError("field 'ceiling.cost_usd' should be dollars over 0")


def clip(value: str, limit: int) -> str:
    return value if len(value) <= limit else value[: limit - 1] + "…"


def auto_title(specialist: str, task: str) -> str:
    """The title of a run's automatic mission: `<specialist>: <first line of the task>`
    (what plain runs made before they stopped, leftovers.py)."""
    lines = task.strip().splitlines()
    return clip(f"{specialist}: {lines[0] if lines else ''}", TITLE_CHARS)


# --- checks ---------------------------------------------------------------------------------


def check_id(mission_id: object) -> str:
    if not isinstance(mission_id, str) or not _ID.fullmatch(mission_id):
        raise UserError(f"invalid mission id {str(mission_id)[:60]!r}", hint=ID_HINT)
    return mission_id


def text(value: object, what: str, *, limit: int = MAX_TEXT, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise UserError(f"{what} must be non-empty text")
    if len(value) > limit or "\x00" in value:
        raise UserError(f"{what} is over {limit} characters or holds a NUL byte")
    return value.strip()


def check_url(url: object) -> str:
    """An absolute http(s) URL with a host: a receipt points somewhere anyone can open."""
    raw = text(url, "a receipt's url", limit=MAX_URL)
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in raw):
        raise UserError(
            f"receipt url {raw[:80]!r} is not an absolute URL",
            hint="give the full link, e.g. https://github.com/org/repo/pull/12",
        )
    return raw


def check_labels(labels: object) -> tuple[str, ...]:
    if not isinstance(labels, list | tuple) or not all(isinstance(x, str) for x in labels):
        raise UserError("labels must be a list of words")
    bad = [x for x in labels if not _LABEL.fullmatch(x)]
    if bad:
        raise UserError(f"invalid label {bad[0][:40]!r}", hint="1-64 of A-Z a-z 0-9 _ . : / -")
    unique = tuple(dict.fromkeys(labels))
    if len(unique) > MAX_LABELS:
        raise UserError(f"at most {MAX_LABELS} labels")
    return unique


def check_budget(tokens: object) -> int:
    if (
        isinstance(tokens, bool)
        or not isinstance(tokens, int)
        or not 0 < tokens <= MAX_BUDGET_TOKENS
    ):
        raise UserError(
            "a goal needs a token budget: a whole number of tokens over 0",
            hint="e.g. --budget-tokens 200000",
        )
    return tokens


# --- changes (pure) -------------------------------------------------------------------------


def _open_for_change(mission: Mission, what: str) -> None:
    if mission.terminal:
        raise UserError(
            f"mission {mission.id} is {mission.status}; cannot {what}",
            hint="open a new mission for new work",
        )


def link_run(mission: Mission, job_id: str, specialist: str, now_ms: int) -> Mission:
    """Link a job; linking one that is linked already changes nothing."""
    if job_id in mission.run_ids():
        return mission
    _open_for_change(mission, f"link job {job_id}")
    if len(mission.runs) >= MAX_RUNS:
        raise UserError(f"mission {mission.id} has {MAX_RUNS} runs, the most it keeps")
    run = Run(job_id, now_ms, specialist=specialist)
    return mission.replace(runs=(*mission.runs, run), updated_ms=now_ms)


def add_decision(mission: Mission, question: object, now_ms: int) -> tuple[Mission, Decision]:
    _open_for_change(mission, "add a decision")
    if len(mission.decisions) >= MAX_DECISIONS:
        raise UserError(f"mission {mission.id} has {MAX_DECISIONS} decisions, the most it keeps")
    decision = Decision(f"d{len(mission.decisions) + 1}", text(question, "a decision"), now_ms)
    return mission.replace(decisions=(*mission.decisions, decision), updated_ms=now_ms), decision


def resolve_decision(
    mission: Mission, decision_id: object, summary: object, now_ms: int
) -> tuple[Mission, Decision]:
    """Settle an open decision with a summary. Resolving one twice is refused: the first
    summary is the record."""
    found = next((d for d in mission.decisions if d.id == decision_id), None)
    if found is None:
        known = ", ".join(d.id for d in mission.decisions[-10:]) or "none"
        raise UserError(
            f"mission {mission.id} has no decision {str(decision_id)[:20]!r}",
            hint=f"decisions: {known}",
        )
    if not found.open:
        raise UserError(
            f"decision {found.id} of mission {mission.id} is resolved already",
            hint=f"its summary: {found.summary[:120]}",
        )
    settled = found.replace(summary=text(summary, "a resolution summary"), resolved_ms=now_ms)
    decisions = tuple(settled if d.id == found.id else d for d in mission.decisions)
    return mission.replace(decisions=decisions, updated_ms=now_ms), settled


def add_artifact(
    mission: Mission, kind: object, path: object, note: object, now_ms: int
) -> Mission:
    _open_for_change(mission, "add an artifact")
    if len(mission.artifacts) >= MAX_ARTIFACTS:
        raise UserError(f"mission {mission.id} has {MAX_ARTIFACTS} artifacts, the most it keeps")
    artifact = Artifact(
        text(kind, "an artifact's kind", limit=40),
        text(path, "an artifact's path", limit=4096),
        now_ms,
        text(note, "a note", required=False),
    )
    return mission.replace(artifacts=(*mission.artifacts, artifact), updated_ms=now_ms)


def add_receipt(
    mission: Mission, kind: object, url: object, status: object, note: object, now_ms: int
) -> Mission:
    if kind not in RECEIPT_KINDS:
        raise UserError(f"unknown receipt kind {str(kind)[:30]!r}", hint=", ".join(RECEIPT_KINDS))
    receipt = Receipt(
        kind,  # checked just above
        check_url(url),
        text(status, "a receipt's status", limit=200),
        now_ms,
        text(note, "a note", required=False),
    )
    if len(mission.receipts) >= MAX_RECEIPTS:
        raise UserError(f"mission {mission.id} has {MAX_RECEIPTS} receipts, the most it keeps")
    return mission.replace(receipts=(*mission.receipts, receipt), updated_ms=now_ms)


def set_paused(mission: Mission, paused: bool, now_ms: int) -> Mission:
    _open_for_change(mission, "pause or resume it")
    status: Status = "paused" if paused else "active"
    return (
        mission if mission.status == status else mission.replace(status=status, updated_ms=now_ms)
    )


def close(mission: Mission, status: object, summary: object, now_ms: int) -> Mission:
    if status not in TERMINAL:
        raise UserError(f"a mission closes as {', '.join(TERMINAL)}; not {str(status)[:20]!r}")
    _open_for_change(mission, "close it again")
    goal = mission.goal
    if goal is not None and goal.ended is None:
        goal = goal.replace(ended="closed")
    return mission.replace(
        status=status,  # checked just above
        summary=text(summary, "a closing summary"),
        closed_ms=now_ms,
        updated_ms=now_ms,
        goal=goal,
    )
