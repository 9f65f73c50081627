"""Evidence: one JSON file per gate run in the job's directory, `evidence/<label>.json`.

    {"schema": 1, "kind": "gate", "label": "gate", "command": "pytest -q", "cwd": "/abs",
     "outcome": "passed", "exit_code": 0, "duration_ms": 812, "tail": "...",
     "output_bytes": 5123, "workspace_key": "<sha256>|null", "env_key": "<sha256>",
     "memo_key": "<sha256>|null", "memo": "miss", "memo_of": null, "at_ms": 1764...}

`memo` is "hit" (not run: a pass recorded for this exact state, `memo_of` names the evidence
of the run that passed), "miss" (run), "off" (run: the gate asked for no memo) or "unkeyed"
(run: not a git working copy, `workspace_reason` says why). Written atomically, 0600.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from specialists.base.errors import StoreError
from specialists.features.gates.spec import GateError
from specialists.store.file_record import FileRecord

SCHEMA = 1
EVIDENCE_DIR = "evidence"
MAX_EVIDENCE_BYTES = 256 * 1024
MAX_FILES_READ = 256
_LABEL = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")


def check_label(label: str) -> str:
    if not _LABEL.fullmatch(label) or ".." in label:
        raise GateError(
            f"evidence label {label[:80]!r} is not usable as a file name",
            hint="1 to 64 lower-case letters, digits, '_', '-' or '.'",
        )
    return label


def write_evidence(job_dir: Path, label: str, data: dict[str, Any]) -> Path:
    _evidence(job_dir).replace(check_label(label), {"schema": SCHEMA, **data})
    return job_dir / EVIDENCE_DIR / f"{label}.json"


def read_evidence(job_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Every gate evidence file of a job (oldest first) and a warning per unreadable one."""
    folder = _evidence(job_dir)
    try:
        names = folder.docs()
    except (OSError, StoreError) as exc:
        return [], [f"evidence of {job_dir.name} not readable: {exc}"]
    found: list[dict[str, Any]] = []
    warnings: list[str] = []
    for name in names[:MAX_FILES_READ]:
        path = job_dir / EVIDENCE_DIR / f"{name}.json"
        try:
            data = folder.read(name) or {}
        except (StoreError, OSError) as exc:
            shown = exc.one_line() if isinstance(exc, StoreError) else str(exc)
            warnings.append(f"evidence ignored: {shown}")
            continue
        if data.get("kind") == "gate" and isinstance(data.get("command"), str):
            found.append(data)
        else:
            warnings.append(f"evidence ignored: {path} is not gate evidence")
    found.sort(key=_at_ms)
    return found, warnings


def _evidence(job_dir: Path) -> FileRecord:
    """The job's gate evidence: documents of the job's record (store/kinds.py JOB)."""
    return FileRecord(job_dir / EVIDENCE_DIR, max_doc=MAX_EVIDENCE_BYTES)


def _at_ms(data: dict[str, Any]) -> int:
    at = data.get("at_ms")
    return at if type(at) is int else 0
