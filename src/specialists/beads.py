"""Beads runs: track a specialist job as a bead (an issue in the `bd` tracker).

A thin adapter over the `bd` CLI; the exact commands are listed in docs/beads.md:

    bd create <title> --description <text> --type task --labels specialists --json
    bd show <id> --json
    bd update <id> --append-notes <text> --json
    bd close <id> --reason <text> --json

bd reports many failures (an unknown id, a blocked close) on stderr with exit status 0 and
no JSON, so every command asks for --json and an empty answer counts as a failure.

Policy: `prepare` runs when a job is planned, before its job.json is written, so the bead id
is part of the job from its creation. It is free when `bd` is not on PATH. A tracking bead
is created when the specialist's beads_integration is "always", or "auto" for a specialist
that can write (permission above READ_ONLY) in a project that uses beads (a .beads/
directory). `run --bead <id>` makes that bead the prompt and never creates a second one.
`on_job_finished` pins the outcome to the bead's notes and closes the bead the run owns.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specialists.errors import SpecialistsError, UserError

if TYPE_CHECKING:
    from specialists.jobs.records import JobRecord, JobStatus
    from specialists.jobs.store import JobStore

BD_ENV = "SPECIALISTS_BD_BIN"
BD_TIMEOUT_S = 30.0
LABEL = "specialists"
MAX_NOTES_CHARS = 60_000  # one argv string must stay below Linux's 128 KiB MAX_ARG_STRLEN
MAX_BLOCKERS = 20
MAX_BLOCKER_CHARS = 4_000
MAX_TITLE_CHARS = 80
_BEAD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,99}")

Runner = Callable[..., "subprocess.CompletedProcess[str]"]


class BeadsError(SpecialistsError):
    """A bd command failed or answered something we cannot read."""


# --------------------------------------------------------------------------- pure


@dataclass(frozen=True)
class Bead:
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


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + f"\n… [{len(text) - limit} more chars]"


def bead_prompt(bead: Bead, blockers: Sequence[Bead], extra: str = "") -> str:
    """The task text for `run --bead`: the bead, its blockers' context, then any --prompt."""
    lines = [f"# Task: {bead.title}", f"Bead: {bead.id}"]
    if bead.description.strip():
        lines += ["", bead.description.strip()]
    if bead.notes.strip():
        lines += ["", "## Notes", _clip(bead.notes, MAX_BLOCKER_CHARS * 2)]
    if blockers:
        lines += ["", "## Context from blocking dependencies"]
        for b in blockers:
            lines += ["", f"### {b.title} ({b.id}, {b.status or 'unknown status'})"]
            if b.description.strip():
                lines.append(_clip(b.description, MAX_BLOCKER_CHARS))
            if b.notes.strip():
                lines += ["", _clip(b.notes, MAX_BLOCKER_CHARS)]
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


# --------------------------------------------------------------------------- adapter


def bd_path() -> str | None:
    """The bd executable: $SPECIALISTS_BD_BIN, else `bd` on PATH. No process is started."""
    configured = os.environ.get(BD_ENV)
    if configured:
        return configured if os.path.exists(configured) else shutil.which(configured)
    return shutil.which("bd")


def project_uses_beads(cwd: Path) -> bool:
    if os.environ.get("BEADS_DIR"):
        return True
    here = cwd.resolve()
    return any((d / ".beads").is_dir() for d in (here, *here.parents))


class BeadsClient:
    """One method per bd command used; `runner` is the subprocess seam for tests."""

    def __init__(self, bd: str, cwd: Path, runner: Runner = subprocess.run) -> None:
        self.bd = bd
        self.cwd = cwd
        self.runner = runner

    def _json(self, args: list[str]) -> Any:
        argv = [self.bd, *args]
        shown = " ".join(args[:2])
        try:
            proc = self.runner(
                argv,
                cwd=self.cwd,
                capture_output=True,
                text=True,
                timeout=BD_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BeadsError(f"`bd {shown}` could not run: {exc}") from exc
        stderr = " ".join(proc.stderr.split())[-300:]
        if proc.returncode != 0:
            raise BeadsError(f"`bd {shown}` exited {proc.returncode}: {stderr or 'no message'}")
        out = proc.stdout.strip()
        if not out:
            raise BeadsError(f"`bd {shown}` gave no answer: {stderr or 'no message'}")
        try:
            return json.loads(out)
        except ValueError:
            # Some versions print a notice before the JSON: take the last line that parses.
            for line in reversed(out.splitlines()):
                try:
                    return json.loads(line)
                except ValueError:
                    continue
        raise BeadsError(f"`bd {shown}` did not answer JSON: {out[:120]!r}")

    def create(self, title: str, description: str) -> str:
        answer = self._json(
            [
                "create",
                title,
                "--description",
                description,
                "--type",
                "task",
                "--labels",
                LABEL,
                "--json",
            ]
        )
        return Bead.from_json(answer).id

    def show(self, bead_id: str) -> Bead:
        return Bead.from_json(self._json(["show", check_bead_id(bead_id), "--json"]))

    def append_notes(self, bead_id: str, text: str) -> None:
        self._json(["update", check_bead_id(bead_id), "--append-notes", text, "--json"])

    def close(self, bead_id: str, reason: str) -> None:
        self._json(["close", check_bead_id(bead_id), "--reason", reason, "--json"])


def git_head(cwd: Path) -> str | None:
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    sha = proc.stdout.strip()
    return sha if proc.returncode == 0 and sha else None


# --------------------------------------------------------------------------- job hooks


def track(record: JobRecord, mode: str, *, runner: Runner = subprocess.run) -> JobRecord:
    """Create a tracking bead for a planned job (no id yet) when the policy says so.

    Free when `bd` is not on PATH. A tracker failure never stops the run: it runs untracked.
    """
    if record.bead_id:
        return record
    bd = bd_path()
    if bd is None:
        return record
    cwd = Path(record.cwd)
    if not should_track(mode, record.permission, project_uses_beads(cwd)):
        return record
    description = f"Tracking bead for a specialists run.\n\nPrompt:\n{_clip(record.prompt, 4000)}"
    try:
        bead_id = BeadsClient(bd, cwd, runner).create(
            run_title(record.specialist, record.prompt), description
        )
    except BeadsError as exc:
        print(f"specialists: run not tracked as a bead: {exc.one_line()}", file=sys.stderr)
        return record
    return record.replace(bead_id=bead_id, owns_bead=True)


def bead_prompt_for(
    cwd: Path, bead_id: str, depth: int, extra: str = "", *, runner: Runner = subprocess.run
) -> tuple[str, str]:
    """`run --bead`: the bead and its blockers' context (up to `depth`) as the prompt.

    Returns (prompt, bead id). The orchestrator owns an input bead: the job pins notes to
    it but never closes it, and no second bead is created.
    """
    bead_id = check_bead_id(bead_id)
    bd = bd_path()
    if bd is None:
        raise UserError(
            "--bead needs the `bd` CLI (beads), which is not on PATH",
            hint=f"install beads, or point {BD_ENV} at bd",
        )
    client = BeadsClient(bd, cwd, runner)
    try:
        target = client.show(bead_id)
        blockers = collect_blockers(client.show, target, depth)
    except BeadsError as exc:
        raise UserError(f"cannot read bead {bead_id}: {exc.message}") from exc
    return bead_prompt(target, blockers, extra), target.id


def on_job_finished(
    record: JobRecord,
    status: JobStatus,
    final: str,
    last_answer: str | None,
    error: str | None,
    *,
    runner: Runner = subprocess.run,
    now_ms: int | None = None,
) -> None:
    """Pin the outcome to the job's bead; close the bead if the run owns it.

    Raises BeadsError (the supervisor records it as a notice event) after trying both.
    """
    if not record.bead_id:
        return
    bd = bd_path()
    if bd is None:
        raise BeadsError(f"`bd` is no longer on PATH; bead {record.bead_id} was not updated")
    import time

    now = now_ms if now_ms is not None else int(time.time() * 1000)
    started = status.started_at_ms or record.created_at_ms
    cwd = Path(record.cwd)
    client = BeadsClient(bd, cwd, runner)
    notes = pin_notes(
        record,
        status,
        final,
        last_answer,
        error,
        git_sha=git_head(cwd),
        elapsed_ms=max(0, now - started),
    )
    problems = []
    try:
        client.append_notes(record.bead_id, notes)
    except BeadsError as exc:
        problems.append(exc.message)
    if record.owns_bead:
        try:
            client.close(record.bead_id, close_reason(final, error, record.id))
        except BeadsError as exc:
            problems.append(exc.message)
    if problems:
        raise BeadsError(f"bead {record.bead_id}: " + "; ".join(problems))


SETTLED_MARKER = "bead_settled"


def settle_crashed(store: JobStore, job_ids: Sequence[str]) -> list[str]:
    """Close the beads of jobs whose supervisor crashed (recovery cannot: it is in jobs/).

    Called at every run start with the finished jobs that ended "supervisor crashed"; a
    marker file makes it once per job. Returns one line per bead that could not be updated.
    """
    from specialists.jobs.recovery import CRASHED

    if bd_path() is None:
        return []
    problems: list[str] = []
    for job_id in job_ids:
        marker = store.job_dir(job_id) / SETTLED_MARKER
        if marker.exists():
            continue
        record = store.read_record(job_id)
        status = store.read_status(job_id)
        if record.bead_id and status is not None:
            try:
                on_job_finished(record, status, "error", None, CRASHED)
            except BeadsError as exc:
                problems.append(exc.one_line())
        marker.touch()
    return problems
