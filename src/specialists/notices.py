"""Completion notices: `.specialists/ready/<id>`, one per job with news for its owner.

A notice says "job <id> has an answer, or ended". It holds the job's owner keys (owner.py),
one per line, copied from job.json when it is posted, so a reader can tell whose it is
without opening job.json. Its life:

- posted by the job's supervisor (each answer of a keep-alive job, and the end) and by crash
  recovery, through `post_for_job`; a job without an owner (a person at a terminal) gets
  none, since no session would ever take it;
- taken by its owner's prompt hook (hooks/user_prompt_submit.py), which shows a banner;
  notices of other owners are left alone;
- cleared when the job's answer is read by any interface (`clear`): `specialists result`,
  a foreground run, the MCP tools `result`, `use_specialist`, `run_parallel`;
- dropped by `prune` (at every run start) after NOTICE_TTL_S, when its job is gone, or past
  MAX_NOTICES, oldest first, so a project used without hooks does not collect them.

Files here are untrusted: a reader opens a notice without following links or blocking (a
FIFO named like a notice is skipped and pruned), and reads at most MAX_NOTICE_BYTES.
Standard library only: the hooks use it on every prompt.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

from specialists.owner import is_key

READY_DIR = "ready"
NOTICE_TTL_S = 2 * 86400.0
MAX_NOTICES = 200
MAX_NOTICE_BYTES = 4096
MAX_JOB_FILE_BYTES = 4 * 1024 * 1024  # job.json holds the prompt: bounded like the store does
_HEX = frozenset("0123456789abcdef")


def is_job_id(name: str) -> bool:
    """As jobs.ids.is_job_id, without importing re and secrets on the hooks' path."""
    return len(name) == 8 and _HEX.issuperset(name)


def ready_dir(state_dir: Path) -> Path:
    return state_dir / READY_DIR


# --- writing ------------------------------------------------------------------------------


def post(state_dir: Path, job_id: str, keys: list[str] | tuple[str, ...]) -> bool:
    """Post (or refresh) the notice of `job_id` for `keys`. False when there is no owner.

    Written to a temporary name and renamed over the notice, so a reader sees a whole one or
    none; a link planted at the notice's name is replaced, never followed. Raises OSError.
    """
    keys = [k for k in keys if is_key(k)]
    if not keys or not is_job_id(job_id):
        return False
    directory = ready_dir(state_dir)
    directory.mkdir(mode=0o700, exist_ok=True)
    if not stat.S_ISDIR(os.lstat(directory).st_mode):
        raise OSError(f"{directory} is not a directory (a link?); notice of {job_id} not posted")
    tmp = directory / f".{job_id}.{os.getpid()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    fd = os.open(tmp, flags, 0o600)
    try:
        os.write(fd, ("\n".join(keys) + "\n").encode())
    finally:
        os.close(fd)
    os.replace(tmp, directory / job_id)
    return True


def post_for_job(state_dir: Path, job_id: str) -> bool:
    """Post the notice of a job to the owner recorded in its job.json. Raises OSError."""
    return post(state_dir, job_id, job_owner(state_dir / "jobs" / job_id))


def job_owner(job_dir: Path) -> list[str]:
    """The `owner` keys of a job's job.json; [] when absent or unreadable (then no one is
    told, which is what a job without an owner gets anyway)."""
    raw = _read_regular(job_dir / "job.json", MAX_JOB_FILE_BYTES)
    if raw is None:
        return []
    try:
        data = json.loads(raw)
    except ValueError:
        return []
    keys = data.get("owner") if isinstance(data, dict) else None
    return [k for k in keys if is_key(k)] if isinstance(keys, list) else []


def clear(state_dir: Path, job_id: str) -> None:
    """The job's answer was read: its notice has nothing left to say."""
    if not is_job_id(job_id):
        return
    try:
        os.unlink(ready_dir(state_dir) / job_id)
    except FileNotFoundError:
        return


def prune(state_dir: Path, now: float | None = None) -> list[str]:
    """Drop expired notices, notices of removed jobs, anything that is not a regular file,
    and the oldest past MAX_NOTICES. Returns one warning per entry that could not go."""
    now = time.time() if now is None else now
    directory = ready_dir(state_dir)
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    problems: list[str] = []
    kept: list[tuple[float, str]] = []
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        is_notice = is_job_id(entry.name)
        expired = now - info.st_mtime > NOTICE_TTL_S
        stray = not stat.S_ISREG(info.st_mode) or (
            is_notice and not (state_dir / "jobs" / entry.name).is_dir()
        )
        if stray or expired:
            if stat.S_ISDIR(info.st_mode):
                problems.append(f"{entry.path} is a directory, not a notice; remove it")
                continue
            _unlink(entry.path, problems)
        elif is_notice:
            kept.append((info.st_mtime, entry.path))
    kept.sort()
    for _, path in kept[: max(0, len(kept) - MAX_NOTICES)]:
        _unlink(path, problems)
    return problems


def _unlink(path: str, problems: list[str]) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        problems.append(f"cannot remove {path}: {exc.strerror or exc}")


# --- reading ------------------------------------------------------------------------------


def read_keys(path: Path) -> list[str] | None:
    """The owner keys in a notice; None when it is not a regular file (a FIFO, a link)."""
    raw = _read_regular(path, MAX_NOTICE_BYTES)
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace")
    return [line for line in text.splitlines() if is_key(line)]


def _read_regular(path: Path, limit: int) -> bytes | None:
    """At most `limit` bytes of a regular file, never following a link or blocking on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit)
    finally:
        os.close(fd)
