"""The job store: one directory per job under .specialists/jobs/.

Readers (`JobStore`) never write, except crash recovery under the job's lock (recovery.py).
The supervisor writes through `JobWriter` (writer.py), the only writer of status.json and
events.jsonl. Every record read here is checked field by field (fields.py) and read with the
care of files.py: no symlink followed, no FIFO opened, no more than a cap read.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from functools import cached_property

from specialists.base.errors import Bug, NotFound, StoreError, UserError
from specialists.store.files import ensure_dir, read_bytes, read_object
from specialists.store.ids import check_job_ref, is_job_id, new_job_id
from specialists.store.joblog import last_event_seq, read_event_lines
from specialists.store.locks import JobLock
from specialists.store.records import JobRecord, JobStatus

TYPE_CHECKING = False  # no `typing` at run time: `status` reads the store
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Protocol

    class OwnerNews(Protocol):
        """What reading and recovering a job tell above this room (store/news.py `NEWS`): a
        read answer clears its notices; recovery tells a dead job's end through its
        `recovered_end`, and asks its `revive` to take a job over, when it has them.
        Required, so that no caller forgets it: `news=None` says "nobody is told", on
        purpose."""

        def clear(self, state_dir: str | Path, job_id: str) -> None: ...


__all__ = [
    "JobLock",
    "JobStore",
    "iter_statuses",
    "last_event_seq",
    "now_ms",
    "read_event_lines",
]

JOB_FILE = "job.json"
STATUS_FILE = "status.json"
EVENTS_FILE = "events.jsonl"
RESULT_FILE = "result.txt"
RESERVE_FILE = ".reserve"
CONTROL_DIR = "control"
SPILL_DIR = "spill"
ANSWERS_DIR = "answers"
STDERR_LOG = "stderr.log"
SUPERVISOR_LOG = "supervisor.log"
CHECKPOINT_FILE = "reattach.json"  # what a successor supervisor needs (supervise/checkpoint.py)

# Caps on what is read (a bigger file is damage, not data). job.json holds the prompt, the
# rendered task and the system prompt; the launcher refuses a record past its cap.
MAX_RECORD = 32 * 1024 * 1024
MAX_STATUS = 1024 * 1024
MAX_RESULT = 64 * 1024 * 1024

# One event line is capped; longer string fields are cut (the agent's session keeps detail).
MAX_EVENT_FIELD = 2000


def now_ms() -> int:
    return int(time.time() * 1000)


class JobStore:
    """Read access to `.specialists/` plus job creation. The directories are kept as text
    too (`root_str`, `jobs_str`): `status` lists and reads jobs without importing `pathlib`,
    a third of its CPU over a bare interpreter's; `root` and `jobs_dir` are made on first use."""

    def __init__(self, root: str | os.PathLike[str], *, news: OwnerNews | None) -> None:
        self.root_str = os.fspath(root)
        self.jobs_str = os.path.join(self.root_str, "jobs")
        self.news = news

    @cached_property
    def root(self) -> Path:
        from pathlib import Path

        return Path(self.root_str)

    @cached_property
    def jobs_dir(self) -> Path:
        from pathlib import Path

        return Path(self.jobs_str)

    # --- naming --------------------------------------------------------------------------

    def job_dir(self, job_id: str) -> Path:
        return self.jobs_dir / self._checked(job_id)

    def job_file(self, job_id: str, name: str) -> str:
        """A file of the job, as text (the read path's: no `pathlib`)."""
        return os.path.join(self.jobs_str, self._checked(job_id), name)

    @staticmethod
    def _checked(job_id: str) -> str:
        if not is_job_id(job_id):
            raise UserError(f"invalid job id {job_id[:40]!r}")
        return job_id

    def list_ids(self) -> list[str]:
        """Ids of the job directories; a symlink named like a job is not one."""
        try:
            with os.scandir(self.jobs_str) as entries:
                return [
                    e.name for e in entries if is_job_id(e.name) and e.is_dir(follow_symlinks=False)
                ]
        except FileNotFoundError:
            return []

    def resolve(self, ref: str) -> str:
        """A full id or unique prefix -> the full id. One clear error otherwise."""
        ref = check_job_ref(ref)
        if len(ref) == 8 and _is_real_dir(os.path.join(self.jobs_str, ref)):
            return ref
        matches = sorted(i for i in self.list_ids() if i.startswith(ref))
        if not matches:
            raise NotFound(f"no job {ref!r}", hint="see `specialists status`")
        if len(matches) > 1:
            shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
            raise UserError(
                f"job prefix {ref!r} is ambiguous: {shown}", hint="give more characters"
            )
        return matches[0]

    # --- creating ----------------------------------------------------------------------

    def ensure_dirs(self) -> None:
        """.specialists/ and jobs/ as private directories (0700)."""
        if not os.path.lexists(self.root):
            self.root.parent.mkdir(parents=True, exist_ok=True)
        ensure_dir(self.root)
        ensure_dir(self.jobs_dir)

    def create_job_dir(self) -> tuple[str, Path]:
        """Reserve a fresh id with an exclusive mkdir (no two launchers get the same id)."""
        self.ensure_dirs()
        for _ in range(100):
            job_id = new_job_id()
            path = self.jobs_dir / job_id
            try:
                path.mkdir(mode=0o700)
            except FileExistsError:
                continue
            os.chmod(path, 0o700)  # exactly, whatever the umask
            return job_id, path
        raise Bug("could not find a free job id after 100 tries")

    # --- reading ---------------------------------------------------------------------------

    def read_record(self, job_id: str) -> JobRecord:
        path = self.job_file(job_id, JOB_FILE)
        try:
            record = JobRecord.from_dict(read_object(path, MAX_RECORD), source=path)
        except FileNotFoundError:
            raise StoreError(f"{path} is missing", hint="the job was never fully created") from None
        return _same_id(record, job_id, path)

    def read_status(self, job_id: str) -> JobStatus | None:
        """The job's status, or None while the job is still being created."""
        path = self.job_file(job_id, STATUS_FILE)
        try:
            data = read_object(path, MAX_STATUS)
        except FileNotFoundError:
            return None
        return _same_id(JobStatus.from_dict(data, source=path), job_id, path)

    def read_result(self, job_id: str) -> str | None:
        """result.txt: the final answer of a done job (None until there is one)."""
        return _read_text(self.job_file(job_id, RESULT_FILE))

    def latest_answer(self, job_id: str) -> str | None:
        """A keep-alive job's most recent answer (answers/NNN.txt), or None."""
        answers_dir = self.job_dir(job_id) / ANSWERS_DIR
        if not _is_real_dir(answers_dir):
            return None
        answers = sorted(answers_dir.glob("[0-9]*.txt"))
        return _read_text(answers[-1]) if answers else None

    def events_path(self, job_id: str) -> Path:
        return self.job_dir(job_id) / EVENTS_FILE

    def read_events(
        self, job_id: str, from_seq: int = 0, *, problems: list[str] | None = None
    ) -> list[dict[str, Any]]:
        events, _ = read_event_lines(self.job_file(job_id, EVENTS_FILE), 0, problems=problems)
        return [e for e in events if e["seq"] >= from_seq]


def _is_real_dir(path: str | Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False


def _same_id(record: Any, job_id: str, path: object) -> Any:
    # A record filed under another job's directory must not act on that job (gc, recovery).
    if record.id != job_id:
        raise StoreError(
            f"{path}: field 'id' should be {job_id} (its directory), not {record.id[:40]!r}"
        )
    return record


def _read_text(path: str | Path) -> str | None:
    try:
        raw = read_bytes(path, MAX_RESULT)
    except FileNotFoundError:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StoreError(f"{path} is not valid UTF-8 (byte {exc.start}); left as it is") from None


def iter_statuses(store: JobStore) -> Iterator[tuple[str, JobStatus | None, str | None]]:
    """(id, status or None, problem) for every job; a damaged status is reported, not raised.

    This is the hot path of `status` over many jobs: plain string paths, one read each.
    """
    for job_id in store.list_ids():
        path = os.path.join(store.jobs_str, job_id, STATUS_FILE)
        try:
            status = JobStatus.from_dict(read_object(path, MAX_STATUS), source=path)
            yield job_id, _same_id(status, job_id, path), None
        except FileNotFoundError:
            yield job_id, None, None
        except StoreError as exc:
            yield job_id, None, exc.message
        except OSError as exc:
            yield job_id, None, f"{path}: {exc.strerror or exc}"
