"""Owner keys: who an event is for, as a string that is safe as a directory name.

`job-<8 hex>` is a job of this store. Outside sessions are `<kind>-<id>` with a short
lowercase kind (claude, pi, codex, mcp, cli, ...) and an id of letters, digits, `.`, `_`
and `-`. Keys are checked before they touch a path, like job ids.
"""

from __future__ import annotations

import os
import re

from specialists.base.errors import StoreError, UserError

TYPE_CHECKING = False  # no `pathlib` at run time: reading an answer looks for inboxes here
if TYPE_CHECKING:
    from pathlib import Path

OWNERS_DIR = "owners"
INBOX_NAME = "events.jsonl"  # an owner's inbox in its directory (events/inbox.py)
_OWNER_RE = re.compile(r"[a-z][a-z0-9]{0,15}-[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
_JOB_OWNER_RE = re.compile(r"job-[0-9a-f]{8}")


def check_owner(key: str) -> str:
    """`key` unchanged when it is a valid owner key; one clear error otherwise."""
    if not isinstance(key, str) or not _OWNER_RE.fullmatch(key) or ".." in key:
        shown = key[:60] if isinstance(key, str) else type(key).__name__
        raise UserError(
            f"invalid owner {shown!r}",
            hint="owners are job-<id> or <kind>-<id>, e.g. claude-1f2e3d or pi-session42",
        )
    return key


def is_owner(key: str) -> bool:
    return isinstance(key, str) and _OWNER_RE.fullmatch(key) is not None and ".." not in key


def job_owner(job_id: str) -> str:
    return check_owner(f"job-{job_id}")


def owner_job_id(key: str) -> str | None:
    """The job id of a `job-<id>` owner, else None."""
    return key[4:] if _JOB_OWNER_RE.fullmatch(key) else None


def session_owner(kind: str, session_id: str) -> str:
    """An outside session's key; ids outside the safe alphabet are reduced to it."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", session_id)
    safe = re.sub(r"\.{2,}", ".", safe).strip(".")[:128] or "unknown"
    return check_owner(f"{kind}-{safe}")


def owner_dir(state_root: Path, key: str) -> Path:
    """`.specialists/owners/<key>/`: the owner's inbox, cursor, timers and spill."""
    return state_root / OWNERS_DIR / check_owner(key)


def has_inbox(state_root: str | Path, key: str) -> bool:
    """`key` has an inbox (its file exists): one stat, before anything of the inbox loads."""
    return is_owner(key) and os.path.exists(os.path.join(state_root, OWNERS_DIR, key, INBOX_NAME))


def check_owner_dir(state_root: Path, owner: str) -> None:
    """Refuse an owner directory that is a symlink (reads would follow it)."""
    directory = owner_dir(state_root, owner)
    if directory.is_symlink():
        raise StoreError(
            f"{directory} is a symlink; its events and timers are not read",
            hint="remove the link; the job's inbox is made again when needed",
        )
