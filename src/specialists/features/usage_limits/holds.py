"""Provider holds: a provider's usage limit, remembered until it resets, so that new jobs for
that provider wait for the reset instead of failing into it (docs/usage-limits.md).

One document per provider under `.specialists/holds/` (store/kinds.py PROVIDER_HOLDS):
{"schema": 1, "provider": ..., "until_ms": ..., "job": <the job that hit it>, "why": <the
line it said>}. A later reset replaces an earlier one, never the other way round; a hold
past its time is no hold (nothing needs to remove it).
"""

from __future__ import annotations

import re
from pathlib import Path

from specialists.base.errors import StoreError
from specialists.base.tuples import NamedTuple
from specialists.store.file_record import FileRecord
from specialists.store.kinds import PROVIDER_HOLDS

SCHEMA = 1
HOLDS_DIR = "holds"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


class ProviderHold(NamedTuple):
    provider: str
    until_ms: int
    job: str
    why: str


def provider_of(runner: str | None, model: str | None) -> str:
    """Whose limit a job meets: Claude Code's and Codex's subscriptions are their own; a
    `provider/model` model names its provider; else the runner."""
    if runner in ("claude", "codex") or not model or "/" not in model:
        return runner or "unknown"
    return model.split("/", 1)[0]


def _doc(provider: str) -> str:
    return _UNSAFE.sub("_", provider).lstrip(".")[:64] or "_"


def _record(state_root: Path) -> FileRecord:
    return PROVIDER_HOLDS.record(state_root / HOLDS_DIR)


def hold(state_root: Path, provider: str, until_ms: int, job: str, why: str) -> None:
    """Hold `provider`'s launches until `until_ms` (kept if a later hold is there already)."""
    record, doc = _record(state_root), _doc(provider)
    with record.locked(doc):
        now = _read(record, doc)
        if now is not None and now.until_ms >= until_ms:
            return
        record.replace(
            doc,
            {"schema": SCHEMA, "provider": provider, "until_ms": int(until_ms), "job": job,
             "why": why[:300]},
        )  # fmt: skip


def held(state_root: Path, provider: str, now_ms: int) -> ProviderHold | None:
    """The hold on `provider` at `now_ms`, or None. A damaged document is no hold (a hold
    only delays a launch; losing one costs a failed request, not data)."""
    try:
        found = _read(_record(state_root), _doc(provider))
    except (StoreError, OSError):
        return None
    return found if found is not None and found.until_ms > now_ms else None


def _read(record: FileRecord, doc: str) -> ProviderHold | None:
    data = record.read(doc, schema=SCHEMA)
    if data is None:
        return None
    until, job, why = data.get("until_ms"), data.get("job"), data.get("why")
    if not isinstance(until, int) or isinstance(until, bool):
        return None
    return ProviderHold(str(data.get("provider", doc)), until, str(job or "?"), str(why or ""))
