"""Refinement overlays: project-local guidance for one agent, with revisions and rollback.

    .specialists/refinements/<agent>/     a Record (store/kinds.py REFINEMENT)
      current.md          "revision N" on the first line, then the guidance (at most 4 KiB)
      revisions/N.md      every revision ever saved, as it was saved
      history.jsonl       saved / rolled back, when, from what (a job id, a person)

The guidance is appended to that agent's system prompt in this project
(catalog/managed.py `with_overlay`, applied by the job planner). It comes from a read-only
proposer run over the agent's recent jobs (the CLI runs it), or from a person; either way it
is validated here first: bounded, plain text, and refused when it tries to change what an
overlay must not touch (safety, policy, tools or permissions, the output contract,
acceptance criteria, system or developer instructions).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specialists.base.errors import UserError
from specialists.catalog.managed import MAX_OVERLAY, overlay_dir, read_overlay
from specialists.store.atomic import write_atomic
from specialists.store.files import ensure_dir
from specialists.store.kinds import REFINEMENT

if TYPE_CHECKING:
    from specialists.store.jobs import JobStore

MAX_LINES = 40
MAX_HISTORY = 200
MAX_EVIDENCE_JOBS = 5
CLIP = 1500
# What an overlay may not do, each with the reason shown when it is refused.
_FORBIDDEN = [
    (r"\b(ignore|disregard|forget)\b.{0,40}\b(instruction|rule|prompt|guidance)s?\b",
     "tells the agent to ignore its instructions"),
    (r"\boverrid(e|es|ing)\b|\bsupersed(e|es|ing)\b|\binstead of (the|your) (system|rules)\b",
     "tries to override other instructions"),
    (r"\b(system|developer)\s+(prompt|message|instruction)s?\b",
     "speaks about system or developer instructions"),
    (r"\b(safety|policy|policies|guardrails?|jailbreak)\b", "touches safety or policy"),
    (r"\b(tool|tools|permission|permissions|sandbox|approval)s?\b.{0,40}"
     r"\b(allow|allowed|enable|grant|unlock|bypass|skip|disable)",
     "changes tools or permissions"),
    (r"\b(you (may|can) now|you are (now )?allowed|no longer (need|have) to)\b",
     "grants itself new powers"),
    (r"\b(output|answer|response|result)\s+(format|schema|contract)\b",
     "changes the output contract"),
    (r"\bacceptance\s+criteri", "changes acceptance criteria"),
]  # fmt: skip
_PATTERNS = [(re.compile(p, re.IGNORECASE | re.DOTALL), why) for p, why in _FORBIDDEN]


@dataclass(frozen=True)
class Overlay:
    agent: str
    revision: int
    text: str
    history: tuple[dict[str, Any], ...]


def validate_guidance(text: str) -> str:
    """The guidance as it will be stored, or one UserError saying why it is refused."""
    if not isinstance(text, str):
        raise UserError("the guidance is not text")
    text = text.strip()
    if not text:
        raise UserError("the guidance is empty")
    if len(text.encode()) > MAX_OVERLAY or text.count("\n") >= MAX_LINES:
        raise UserError(f"the guidance is over {MAX_OVERLAY} bytes or {MAX_LINES} lines")
    if any(ch in text for ch in "\x00\x1b") or not all(
        c.isprintable() or c in "\n\t" for c in text
    ):
        raise UserError("the guidance holds control characters")
    for pattern, why in _PATTERNS:
        found = pattern.search(text)
        if found:
            quoted = " ".join(found.group(0).split())[:60]
            raise UserError(
                f"the guidance is refused: it {why} ({quoted!r})",
                hint="an overlay adds project advice; it cannot change rules, tools or output",
            )
    return text


def save(project_root: Path, agent: str, text: str, *, source: str, now_ms: int) -> Overlay:
    """Validate and store a new revision, which becomes current."""
    text = validate_guidance(text)
    base = _dir(project_root, agent)
    with REFINEMENT.record(base).locked():
        revision = _last_revision(base) + 1
        write_atomic(base / "revisions" / f"{revision}.md", text.encode() + b"\n")
        _make_current(base, revision, text)
        _log(base, {"ts": now_ms, "event": "saved", "revision": revision, "source": source})
    return show(project_root, agent)


def rollback(project_root: Path, agent: str, *, now_ms: int) -> Overlay:
    """Make the revision before the current one current again (revisions are kept)."""
    base = _dir(project_root, agent)
    with REFINEMENT.record(base).locked():
        current = read_overlay(project_root, agent)
        if current is None:
            raise UserError(f"{agent!r} has no refinement overlay to roll back")
        older = [n for n in _revisions(base) if n < current[0]]
        if not older:
            os.unlink(base / "current.md")  # back to no overlay at all
            restored = 0
        else:
            restored = older[-1]
            text = (base / "revisions" / f"{restored}.md").read_text(encoding="utf-8")
            _make_current(base, restored, validate_guidance(text))
        _log(base, {"ts": now_ms, "event": "rolled back", "from": current[0], "to": restored})
    return show(project_root, agent)


def show(project_root: Path, agent: str) -> Overlay:
    """The overlay in force and the last 50 entries of its history (none before the first
    refinement); a planted or damaged history is StoreError, a damaged line is skipped."""
    base = overlay_dir(project_root, agent)
    current = read_overlay(project_root, agent)
    revision, text = current if current else (0, "")
    history = REFINEMENT.record(base).lines("history").entries[-50:]
    return Overlay(agent, revision, text, tuple(history))


def proposal_prompt(agent: str, system_prompt: str, evidence: list[dict[str, Any]]) -> str:
    """The task for the read-only proposer: recent runs in, a few lines of guidance out."""
    runs = "\n\n".join(
        f"### job {e['id']} ({e['status']})\nTask: {e['prompt'][:CLIP]}\n"
        f"Outcome: {(e.get('error') or e.get('result') or '(no answer)')[:CLIP]}"
        for e in evidence
    )
    return (
        f"You are reviewing how the agent '{agent}' has done in this project, to write a short "
        "project-specific guidance note that will be added to its instructions. Read its recent "
        "runs below (and the project files if useful; change nothing). Reply with ONLY the "
        f"guidance: at most {MAX_LINES} lines of plain advice about this project (conventions, "
        "pitfalls seen in these runs, where things are). Do not restate or change its rules, "
        "tools, permissions, safety or output format.\n\n"
        f"## Its instructions\n{system_prompt[:4000]}\n\n## Recent runs\n{runs or '(none yet)'}"
    )


def _dir(project_root: Path, agent: str) -> Path:
    from specialists.base.reader import Invalid
    from specialists.catalog.schema import check_name

    try:
        check_name(agent, "agent")
    except Invalid as exc:
        raise UserError(f"invalid agent name {agent[:64]!r}: {exc.problem}") from None
    base = overlay_dir(project_root, agent)
    for path in (base.parent.parent, base.parent, base, base / "revisions"):
        ensure_dir(path)
    return base


def _revisions(base: Path) -> list[int]:
    names = os.listdir(base / "revisions")
    return sorted(int(n[:-3]) for n in names if n.endswith(".md") and n[:-3].isdigit())


def _last_revision(base: Path) -> int:
    revisions = _revisions(base)
    return revisions[-1] if revisions else 0


def _make_current(base: Path, revision: int, text: str) -> None:
    write_atomic(base / "current.md", f"revision {revision}\n{text}\n".encode())


def _log(base: Path, entry: dict[str, Any]) -> None:
    """Add a history line (under the overlay's lock; the log is kept to MAX_HISTORY)."""
    record = REFINEMENT.record(base)
    record.append("history", entry)
    record.trim("history", MAX_HISTORY)


def evidence(store: JobStore, agent: str, limit: int = MAX_EVIDENCE_JOBS) -> list[dict[str, Any]]:
    """The agent's latest finished jobs: task, status, answer or error (unreadable ones are
    left out: this is advice for a proposer, not a record)."""
    from specialists.base.errors import SpecialistsError

    found: list[tuple[int, dict[str, Any]]] = []
    for job_id in store.list_ids():
        try:
            record = store.read_record(job_id)
            if record.specialist != agent:
                continue
            status = store.read_status(job_id)
            if status is None or status.active:
                continue
            result = store.read_result(job_id) if status.status == "done" else None
        except (SpecialistsError, OSError):
            continue
        entry = {
            "id": job_id,
            "status": status.status,
            "prompt": record.prompt,
            "error": status.error,
            "result": result,
        }
        found.append((record.created_at_ms, entry))
    found.sort(key=lambda item: item[0])
    return [entry for _, entry in found[-limit:]]
