"""UserPromptSubmit: one banner per job with news for this session, then its notice is gone.

    [Specialist 'overthinker' completed (job a1b2c3d4, 1m47s). Run: specialists result a1b2c3d4]
    [Specialist 'x' failed (job 0badc0de, 0m12s): <error>. Run: specialists feed --job 0badc0de]

Only notices addressed to this session are taken (notices.py, owner.py): the hook input's
session_id, CLAUDE_CODE_SESSION_ID and the Claude Code process above the hook name it;
other sessions' notices stay for them. Each notice is first claimed by renaming it to
`.<id>.<pid>.claim`, so two hooks of one session never both report a job. Claims are
deleted only after the banners reached stdout; if writing fails they are renamed back. A
claim left by a hook that died is returned to the queue by the next hook. Expired notices
are dropped on the way. Nothing here imports yaml, the catalog or the job store classes.
"""

from __future__ import annotations

import os
from pathlib import Path

from specialists.display import display_line, duration
from specialists.hooks.common import hook_reply, log, read_json_object
from specialists.jobs.ids import is_job_id
from specialists.jobs.liveness import pid_exists
from specialists.notices import NOTICE_TTL_S, read_keys
from specialists.owner import Owner, reading_owner

# `typing` costs ~5 ms to import; annotations are strings here, so only type checkers need it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

EVENT = "UserPromptSubmit"
MAX_BANNERS = 10  # per prompt; the rest wait for the next prompt
MAX_ERROR_CHARS = 160
CLAIM_SUFFIX = ".claim"
ACTIVE = frozenset({"starting", "running", "waiting"})


class Report:
    """What one hook run found: banner lines and the claims to settle afterwards.

    A plain class, not a dataclass: `dataclasses` pulls in `inspect`, too slow for a hook.
    """

    def __init__(self) -> None:
        self.banners: list[str] = []
        self.consumed: list[Path] = []  # claims to delete once the output is written
        self.returned: list[tuple[Path, Path]] = []  # (claim, marker) to put back
        self.more = 0  # finished jobs left for a later prompt

    def context(self) -> str:
        lines = list(self.banners)
        if self.more:
            lines.append(f"[{self.more} more specialist jobs finished. Run: specialists status]")
        return "\n".join(lines)


def banner(job_id: str, status: dict[str, Any]) -> str | None:
    """The seed's one-line banner for a finished (or answered, waiting) job; None while the
    job is still working."""
    state = status.get("status")
    name = display_line(status.get("specialist") or "?", 60)
    elapsed = status.get("elapsed_s")
    took = duration(elapsed if isinstance(elapsed, int | float) else 0)
    if state == "waiting":  # a keep-alive job answered and waits for a follow-up
        return (
            f"[Specialist '{name}' answered (job {job_id}, {took}) and waits for a follow-up. "
            f"Run: specialists result {job_id}]"
        )
    if state in ACTIVE:
        return None
    if state == "done":
        return (
            f"[Specialist '{name}' completed (job {job_id}, {took}). "
            f"Run: specialists result {job_id}]"
        )
    if state == "cancelled":
        return (
            f"[Specialist '{name}' cancelled (job {job_id}, {took}). "
            f"Run: specialists feed --job {job_id}]"
        )
    error = display_line(status.get("error") or f"status {state!r}", MAX_ERROR_CHARS)
    return (
        f"[Specialist '{name}' failed (job {job_id}, {took}): {error}. "
        f"Run: specialists feed --job {job_id}]"
    )


def _claim_name(job_id: str) -> str:
    return f".{job_id}.{os.getpid()}{CLAIM_SUFFIX}"


def _requeue_stale_claim(ready: Path, name: str) -> str | None:
    """`.<id>.<pid>.claim` of a hook process that died -> back to `<id>`; returns the id."""
    parts = name[1 : -len(CLAIM_SUFFIX)].split(".")
    if len(parts) != 2 or not is_job_id(parts[0]) or not parts[1].isdigit():
        return None
    pid = int(parts[1])
    if pid == os.getpid() or pid_exists(pid):
        return None
    try:
        os.rename(ready / name, ready / parts[0])
    except FileNotFoundError:
        return None  # another hook requeued it first
    log("user-prompt-submit", f"requeued marker {parts[0]} claimed by dead hook pid {pid}")
    return parts[0]


def scan(state_dir: Path, owner: Owner, now: float | None = None) -> Report:
    """Claim up to MAX_BANNERS of `owner`'s notices (oldest first) and build their banners."""
    import time

    now = time.time() if now is None else now
    report = Report()
    ready = state_dir / "ready"
    try:
        entries = list(os.scandir(ready))
    except FileNotFoundError:
        return report
    markers: list[tuple[float, str]] = []
    for entry in entries:
        name: str | None = entry.name
        if entry.name.startswith(".") and entry.name.endswith(CLAIM_SUFFIX):
            name = _requeue_stale_claim(ready, entry.name)
        elif not is_job_id(entry.name):
            continue
        if name is None:
            continue
        try:
            mtime = (ready / name).stat(follow_symlinks=False).st_mtime
        except FileNotFoundError:
            continue  # consumed by another hook meanwhile
        if now - mtime > NOTICE_TTL_S:
            _drop_expired(ready / name)
            continue
        keys = read_keys(ready / name)  # None: not a regular file (a FIFO, a link)
        if keys is not None and owner.matches(keys):
            markers.append((mtime, name))
    markers.sort()
    report.more = max(0, len(markers) - MAX_BANNERS)
    for _, job_id in markers[:MAX_BANNERS]:
        marker = ready / job_id
        claim = ready / _claim_name(job_id)
        try:
            os.rename(marker, claim)
        except FileNotFoundError:
            continue  # another hook of this session claimed it
        _report_job(state_dir, job_id, marker, claim, report)
    return report


def _drop_expired(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        log("user-prompt-submit", f"cannot drop expired notice {path.name}: {exc}")


def _report_job(state_dir: Path, job_id: str, marker: Path, claim: Path, report: Report) -> None:
    job_dir = state_dir / "jobs" / job_id
    try:
        status = read_json_object(job_dir / "status.json")
    except FileNotFoundError:
        if not job_dir.is_dir():
            report.consumed.append(claim)  # the job was collected: drop its marker silently
            return
        status = None
        problem = "status.json is missing"
    except (ValueError, OSError) as exc:
        status = None
        problem = f"status.json is unreadable: {exc}"
    if status is None:
        log("user-prompt-submit", f"job {job_id}: {problem}")
        report.banners.append(
            f"[Specialist job {job_id} finished but its status is unreadable. "
            f"Run: specialists feed --job {job_id}]"
        )
        report.consumed.append(claim)
        return
    line = banner(job_id, status)
    if line is None:
        # A marker before the final status (its write failed): keep it for a later prompt.
        log("user-prompt-submit", f"job {job_id} has a ready marker but is {status['status']}")
        report.returned.append((claim, marker))
        return
    report.banners.append(line)
    report.consumed.append(claim)


def settle(report: Report, *, delivered: bool) -> None:
    """After output: delete consumed claims; if the output failed, put them all back."""
    for claim, marker in report.returned:
        _rename_quietly(claim, marker)
    for claim in report.consumed:
        if delivered:
            claim.unlink(missing_ok=True)
        else:
            job_id = claim.name[1:].split(".", 1)[0]
            _rename_quietly(claim, claim.with_name(job_id))


def _rename_quietly(src: Path, dst: Path) -> None:
    try:
        os.rename(src, dst)
    except OSError as exc:
        log("user-prompt-submit", f"could not rename {src.name} back to {dst.name}: {exc}")


def run(data: dict[str, Any], state_dir: Path, out: TextIO) -> None:
    """Scan, print the hook JSON (or nothing at all), then settle the claims."""
    report = scan(state_dir, reading_owner(data.get("session_id")))
    text = report.context()
    if not text:
        settle(report, delivered=True)
        return
    try:
        out.write(hook_reply(EVENT, text) + "\n")
        out.flush()
    except BaseException:
        settle(report, delivered=False)
        raise
    settle(report, delivered=True)
