"""File claims: which live job is writing which files, so agents working in parallel stay out
of each other's way (issue 23 item 4). A kind of Record:

    .specialists/claims/claims.json   {"schema": 1, "claims": [{"path": "src/a.py",
                                       "dir": false, "job": "1a2b3c4d", "specialist": "...",
                                       "at_ms": ..., "note": "..."}]}
    .specialists/claims/lock          taken for every change

A claim names a path relative to the top of the working copy that holds it (a sandbox's
worktree, or the project itself), so one file in twenty worktrees is one claim; a directory
claim covers everything below it. Claiming is all or nothing: a path another live job holds
refuses the whole call with the holder's name, and so does a claim that would grow the file
past the size a reader accepts (a file it refuses holds nothing).

A claim blocks only while its holder lives: its status is active and its supervisor is the
process recorded (pid and start time). A holder that crashed blocks nothing from that moment,
before anyone cleans up; the next change drops its claims. A claim also lets the holder's
descendants write (its threads, a workflow's children): handing claimed work down is not a
conflict. The sandbox feature releases a job's claims when it ends.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from specialists.base.errors import StoreError, UserError
from specialists.store.fields import Declared
from specialists.store.file_record import FileRecord
from specialists.store.files import unwritten
from specialists.store.jobs import JobStore
from specialists.store.liveness import is_alive
from specialists.store.paths import CLAIMS_DIR, SANDBOXES_DIR, STATE_DIR_NAME
from specialists.store.record import DocTooLong

DOC = "claims"
SCHEMA = 1
MAX_PATHS_PER_CALL = 200
MAX_PER_JOB = 1000
MAX_PATH_CHARS = 1024
MAX_NOTE_CHARS = 300
MAX_ANCESTORS = 8  # how far up a writer's parents are looked for the holder


class Claim(Declared):
    _what = "claim"
    path: str  # relative to its working copy's top, "/"-separated, no trailing "/"
    dir: bool  # covers everything below `path`
    job: str
    specialist: str = ""
    at_ms: int = 0
    note: str = ""

    def covers(self, key: str, is_dir: bool = False) -> bool:
        """Do this claim and a claim of `key` (a directory when `is_dir`) overlap?"""
        if key == self.path:
            return True
        if self.dir and key.startswith(self.path + "/"):
            return True
        return is_dir and self.path.startswith(key + "/")

    def shown(self) -> str:
        return self.path + ("/" if self.dir else "")

    def holder(self) -> str:
        """The holder's name as a refusal gives it: `job 1a2b3c4d (executor)`."""
        who = f"job {self.job}"
        return f"{who} ({self.specialist})" if self.specialist else who

    @classmethod
    def _after_read(cls, record: Claim, where: str) -> None:
        if not record.path or not record.job:
            raise StoreError(f"{where}: a claim names a path and a job")


def claim_key(path: str | Path, project: Path) -> str:
    """The key of `path` (absolute, or relative to the current directory): relative to the
    sandbox worktree holding it, else to the project, else to the nearest git working copy,
    else the absolute path. Symlinks in the existing part are resolved."""
    real = Path(os.path.realpath(path))
    top = Path(os.path.realpath(project))
    sandboxes = top / STATE_DIR_NAME / SANDBOXES_DIR
    if real.is_relative_to(sandboxes):
        parts = real.relative_to(sandboxes).parts
        return "/".join(parts[1:])  # "" for a worktree itself
    if real == top:
        return ""
    if real.is_relative_to(top):
        return real.relative_to(top).as_posix()
    for parent in real.parents:
        if os.path.lexists(parent / ".git"):
            return real.relative_to(parent).as_posix()
    return real.as_posix()


def _entry(raw: object) -> Claim | None:
    """A recorded claim, or None for a damaged one (skipped: see Claims.all)."""
    try:
        return Claim.from_dict(raw) if isinstance(raw, dict) else None
    except StoreError:
        return None


class Claims:
    """The project's claims (`state_root` is its `.specialists/`)."""

    def __init__(self, state_root: Path) -> None:
        self.state_root = state_root
        self.project = state_root.parent
        self.record = FileRecord(state_root / CLAIMS_DIR)
        self.jobs = JobStore(state_root, news=None)

    # --- reading -----------------------------------------------------------------------------

    def all(self) -> list[Claim]:
        """Every recorded claim, live or not; damaged entries are skipped (a damaged file
        holds no claim: a guard must never lock everyone out)."""
        if not os.path.lexists(self.record.path):
            return []
        try:
            data = self.record.read(DOC, schema=SCHEMA)
        except (StoreError, OSError):
            return []
        entries = data.get("claims") if data else None
        if not isinstance(entries, list):
            return []
        return [c for c in map(_entry, entries) if c is not None]

    def live(self) -> list[Claim]:
        alive: dict[str, bool] = {}
        return [c for c in self.all() if self._alive(c.job, alive)]

    def holder(self, path: str | Path, *, writer: str | None) -> Claim | None:
        """The live claim another job holds on the file `path`, or None: what a guard asks
        before a write. `writer` is the writing job (None: not one of ours); its own claims
        and those of its ancestors let it write."""
        key = claim_key(path, self.project)
        found = [c for c in self.all() if c.covers(key)]
        if not found:
            return None
        mine = set(self.lineage(writer)) if writer else set()
        alive: dict[str, bool] = {}
        return next((c for c in found if c.job not in mine and self._alive(c.job, alive)), None)

    def lineage(self, job_id: str) -> list[str]:
        """`job_id` and the jobs above it (a thread's parent job, a workflow child's
        workflow), nearest first."""
        chain = [job_id]
        while len(chain) <= MAX_ANCESTORS:
            try:
                record = self.jobs.read_record(chain[-1])
            except (StoreError, UserError, OSError, ValueError):
                break
            parent = record.thread.get("parent") if record.thread else None
            owner = parent[4:] if isinstance(parent, str) and parent.startswith("job-") else None
            above = owner or record.parent_id
            if not above or above in chain:
                break
            chain.append(above)
        return chain

    def _alive(self, job_id: str, cache: dict[str, bool]) -> bool:
        if job_id not in cache:
            cache[job_id] = job_is_live(self.jobs, job_id)
        return cache[job_id]

    # --- changing -----------------------------------------------------------------------------

    def claim(
        self,
        job_id: str,
        keys: Iterable[tuple[str, bool]],
        *,
        specialist: str = "",
        note: str = "",
        now_ms: int,
    ) -> list[Claim]:
        """Claim each (key, is_dir) for `job_id`, all or none: UserError naming the holder
        when another live job (not an ancestor) holds any of them. Returns the new claims."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            raise UserError("no paths to claim")
        if len(wanted) > MAX_PATHS_PER_CALL:
            raise UserError(f"at most {MAX_PATHS_PER_CALL} paths in one claim")
        note = note[:MAX_NOTE_CHARS]
        with self.record.locked():
            current = self._kept()
            mine = set(self.lineage(job_id))
            alive: dict[str, bool] = {}
            for key, is_dir in wanted:
                for c in current:
                    if c.job not in mine and c.covers(key, is_dir) and self._alive(c.job, alive):
                        raise UserError(
                            f"{key}{'/' if is_dir else ''} is claimed by {c.holder()}"
                            + (f": {c.note}" if c.note else ""),
                            hint="work on other files, or wait for that job to end "
                            "(its claims end with it); nothing was claimed",
                        )
            held = {(c.path, c.dir) for c in current if c.job == job_id}
            new = [
                Claim(key, is_dir, job_id, specialist, now_ms, note)
                for key, is_dir in wanted
                if (key, is_dir) not in held
            ]
            if len(held) + len(new) > MAX_PER_JOB:
                raise UserError(f"a job may hold at most {MAX_PER_JOB} claims")
            self._write([*current, *new])
        return new

    def release(self, job_id: str, keys: Iterable[tuple[str, bool]] | None = None) -> list[Claim]:
        """Release `job_id`'s claims on `keys` (all of them when None); returns what went."""
        wanted = None if keys is None else set(keys)
        if not os.path.lexists(self.record.path):
            return []
        with self.record.locked():
            current = self._kept()
            gone = [
                c
                for c in current
                if c.job == job_id and (wanted is None or (c.path, c.dir) in wanted)
            ]
            if gone:
                self._write([c for c in current if c not in gone])
        return gone

    def _kept(self) -> list[Claim]:
        """The claims worth keeping (held by live jobs), under the lock."""
        return self.live()

    def _write(self, claims: list[Claim]) -> None:
        data = {"schema": SCHEMA, "claims": [c.to_dict() for c in claims]}
        try:
            self.record.replace(DOC, data)
        except DocTooLong:  # written, it would read as damaged: every claim would be lost
            raise UserError(
                f"too many claims: the project's claims would pass {self.record.max_doc:,} bytes",
                hint="release claims no longer needed, or claim a directory instead of its "
                "files; nothing was claimed",
            ) from None
        except OSError as exc:  # a full disk, a directory where claims.json should be
            where = self.record.path / f"{DOC}.json"
            raise unwritten(f"{where} could not be written", exc) from None


def job_is_live(jobs: JobStore, job_id: str) -> bool:
    """Active, and its supervisor is the process recorded (a crash ends a claim at once)."""
    try:
        status = jobs.read_status(job_id)
    except (StoreError, UserError, OSError, ValueError):
        return False
    if status is None or not status.active:
        return False
    return is_alive(status.supervisor_pid, status.supervisor_start_time)


def key_of_arg(raw: str, cwd: Path, project: Path) -> tuple[str, bool]:
    """A path an agent or a person named (relative to `cwd`; a trailing "/" or an existing
    directory claims everything below) as (key, is_dir); UserError for one that cannot be
    claimed."""
    if not isinstance(raw, str) or not raw.strip():
        raise UserError("a path to claim must be a non-empty string")
    if len(raw) > MAX_PATH_CHARS or "\0" in raw:
        raise UserError(f"cannot claim {raw[:60]!r}: too long or contains a NUL byte")
    try:
        path = Path(raw).expanduser()  # RuntimeError: ~name of no such user
        path = path if path.is_absolute() else cwd / path
        is_dir = raw.endswith("/") or path.is_dir()  # OSError: a name too long
        key = claim_key(path, project)
    except (OSError, RuntimeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UserError(f"cannot claim {raw[:60]!r}: {why}") from None
    if not key or key == ".":
        raise UserError(
            f"cannot claim {raw!r}: it is a whole working copy", hint="claim files or directories"
        )
    return key, is_dir
