"""Beads, the pure part: the bead record, the run policy, and every text we send to bd.

No processes here: the bd client (client.py) and the job hooks (jobs.py) use these.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from specialists.base.errors import SpecialistsError, UserError
from specialists.base.tuples import NamedTuple
from specialists.process.lookup import which

if TYPE_CHECKING:
    from specialists.store.records import JobRecord, JobStatus

BD_ENV = "SPECIALISTS_BD_BIN"
LABEL = "specialists"
MAX_NOTES_CHARS = 60_000  # one argv string must stay below Linux's 128 KiB MAX_ARG_STRLEN
MAX_BLOCKERS = 20
MAX_BLOCKER_CHARS = 4_000
MAX_TITLE_CHARS = 80
_BEAD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,99}")


def bd_path() -> str | None:
    """The bd executable: $SPECIALISTS_BD_BIN, else `bd` on PATH. No process is started."""
    configured = os.environ.get(BD_ENV)
    if configured:
        return configured if os.path.exists(configured) else which(configured)
    return which("bd")


class BeadsError(SpecialistsError):
    """A bd command failed or answered something we cannot read."""


class Bead(NamedTuple):
    id: str
    title: str
    description: str = ""
    notes: str = ""
    status: str = ""
    blockers: tuple[str, ...] = ()  # ids of issues this one depends on with type "blocks"

    @classmethod
    def from_json(cls, data: object) -> Bead:
        """One issue from `bd show --json` (an array of issue details, or one object)."""
        if isinstance(data, list):
            if not data:
                raise BeadsError("bd returned no issue")
            data = data[0]
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            raise BeadsError("bd returned an issue without an id")
        deps = data.get("dependencies") or []
        blockers = tuple(
            d["id"]
            for d in deps
            if isinstance(d, dict)
            and isinstance(d.get("id"), str)
            and d.get("dependency_type", "blocks") == "blocks"
        )
        return cls(
            id=data["id"],
            title=str(data.get("title") or ""),
            description=str(data.get("description") or ""),
            notes=str(data.get("notes") or ""),
            status=str(data.get("status") or ""),
            blockers=blockers,
        )


def check_bead_id(text: str) -> str:
    """Bead ids (bd-a3f8, proj-12.3) are passed to bd as arguments: never let one be a flag."""
    text = text.strip()
    if not _BEAD_ID.fullmatch(text):
        raise UserError(f"invalid bead id {text[:40]!r}", hint="e.g. bd-a3f8 (see `bd list`)")
    return text


def should_track(mode: str, permission: str, project_uses_beads: bool) -> bool:
    """Whether a run gets its own tracking bead (see the module docstring)."""
    if mode == "never":
        return False
    if mode == "always":
        return True
    return permission.upper() != "READ_ONLY" and project_uses_beads


def run_title(specialist: str, prompt: str) -> str:
    first = next((ln.strip() for ln in prompt.splitlines() if ln.strip()), "")
    title = f"specialist {specialist}: {first}" if first else f"specialist {specialist}"
    return title if len(title) <= MAX_TITLE_CHARS else title[: MAX_TITLE_CHARS - 1] + "…"


def prompt_hash(text: str) -> str:
    import hashlib  # lazy: loading OpenSSL costs ~10 ms on every run otherwise

    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def collect_blockers(show: Callable[[str], Bead], bead: Bead, depth: int) -> list[Bead]:
    """Blockers breadth first, `depth` levels deep, each once, at most MAX_BLOCKERS."""
    found: list[Bead] = []
    seen = {bead.id}
    level = list(bead.blockers)
    for _ in range(max(0, depth)):
        next_level: list[str] = []
        for bead_id in level:
            if bead_id in seen or len(found) >= MAX_BLOCKERS:
                continue
            seen.add(bead_id)
            blocker = show(bead_id)
            found.append(blocker)
            next_level.extend(blocker.blockers)
        level = next_level
    return found


def clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + f"\n… [{len(text) - limit} more chars]"


def bead_prompt(bead: Bead, blockers: Sequence[Bead], extra: str = "") -> str:
    """The task text for `run --bead`: the bead, its blockers' context, then any --prompt."""
    lines = [f"# Task: {bead.title}", f"Bead: {bead.id}"]
    if bead.description.strip():
        lines += ["", bead.description.strip()]
    if bead.notes.strip():
        lines += ["", "## Notes", clip(bead.notes, MAX_BLOCKER_CHARS * 2)]
    if blockers:
        lines += ["", "## Context from blocking dependencies"]
        for b in blockers:
            lines += ["", f"### {b.title} ({b.id}, {b.status or 'unknown status'})"]
            if b.description.strip():
                lines.append(clip(b.description, MAX_BLOCKER_CHARS))
            if b.notes.strip():
                lines += ["", clip(b.notes, MAX_BLOCKER_CHARS)]
    if extra.strip():
        lines += ["", "## Additional instructions", extra.strip()]
    return "\n".join(lines).strip() + "\n"


def pin_notes(
    record: JobRecord,
    status: JobStatus,
    final: str,
    answer: str | None,
    error: str | None,
    *,
    git_sha: str | None,
    elapsed_ms: int,
) -> str:
    """The notes appended to the bead: outcome metadata, then the output (bounded)."""
    lines = [
        f"## specialists job {record.id}: {final}",
        f"specialist: {record.specialist}",
        f"model: {status.model or record.model or 'default'}",
        f"backend: {status.backend or record.runner}",
        f"runner: {record.runner}",
        f"elapsed_ms: {elapsed_ms}",
        f"prompt_hash: {prompt_hash(record.task or record.prompt)}",
        f"git_sha: {git_sha or 'unknown'}",
    ]
    if final == "error" and error:
        lines.append(f"error: {error}")
    text = "\n".join(lines)
    if answer:
        room = MAX_NOTES_CHARS - len(text) - 200
        body = answer.strip()
        if len(body) > room:
            body = (
                body[:room] + f"\n… [{len(body) - room} more chars: specialists result {record.id}]"
            )
        text += "\n\n" + body
    return text + "\n"


def close_reason(final: str, error: str | None, job_id: str) -> str:
    if final == "done":
        return f"specialists job {job_id} completed"
    if final == "cancelled":
        return f"specialists job {job_id} cancelled"
    return f"failed: specialists job {job_id}: {(error or 'unknown error')[:300]}"
