"""The job store: one directory per job under .specialists/jobs/.

Readers (`JobStore`) never write, except crash recovery under the job's lock (recovery.py).
The supervisor writes through `JobWriter`, the only writer of status.json and events.jsonl.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from specialists.errors import NotFound, StoreError, UserError
from specialists.jobs.atomic import write_atomic
from specialists.jobs.ids import check_job_ref, is_job_id, new_job_id
from specialists.jobs.records import JobRecord, JobStatus

JOB_FILE = "job.json"
STATUS_FILE = "status.json"
EVENTS_FILE = "events.jsonl"
RESULT_FILE = "result.txt"
LOCK_FILE = "lock"
CONTROL_DIR = "control"
SPILL_DIR = "spill"
ANSWERS_DIR = "answers"
STDERR_LOG = "stderr.log"
SUPERVISOR_LOG = "supervisor.log"

# One event line is capped; longer string fields are cut (the agent's session keeps detail).
MAX_EVENT_FIELD = 2000


def now_ms() -> int:
    return int(time.time() * 1000)


class JobStore:
    """Read access to `.specialists/` plus job creation."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.jobs_dir = root / "jobs"
        self.ready_dir = root / "ready"

    # --- naming --------------------------------------------------------------------------

    def job_dir(self, job_id: str) -> Path:
        if not is_job_id(job_id):
            raise UserError(f"invalid job id {job_id[:40]!r}")
        return self.jobs_dir / job_id

    def list_ids(self) -> list[str]:
        try:
            return [e.name for e in os.scandir(self.jobs_dir) if is_job_id(e.name)]
        except FileNotFoundError:
            return []

    def resolve(self, ref: str) -> str:
        """A full id or unique prefix -> the full id. One clear error otherwise."""
        ref = check_job_ref(ref)
        if len(ref) == 8 and (self.jobs_dir / ref).is_dir():
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

    def create_job_dir(self) -> tuple[str, Path]:
        """Reserve a fresh id with an exclusive mkdir (no two launchers get the same id)."""
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        for _ in range(100):
            job_id = new_job_id()
            path = self.jobs_dir / job_id
            try:
                path.mkdir()
            except FileExistsError:
                continue
            return job_id, path
        raise StoreError("bug: could not find a free job id after 100 tries")

    # --- reading ---------------------------------------------------------------------------

    def read_record(self, job_id: str) -> JobRecord:
        return JobRecord.from_dict(self._read_json(self.job_dir(job_id) / JOB_FILE))

    def read_status(self, job_id: str) -> JobStatus | None:
        """The job's status, or None while the job is still being created."""
        path = self.job_dir(job_id) / STATUS_FILE
        try:
            return JobStatus.from_dict(self._read_json(path))
        except FileNotFoundError:
            return None

    def read_result(self, job_id: str) -> str | None:
        """result.txt: the final answer of a done job (None until there is one)."""
        return _read_text(self.job_dir(job_id) / RESULT_FILE)

    def latest_answer(self, job_id: str) -> str | None:
        """A keep-alive job's most recent answer (answers/NNN.txt), or None."""
        answers = sorted((self.job_dir(job_id) / ANSWERS_DIR).glob("*.txt"))
        return _read_text(answers[-1]) if answers else None

    def events_path(self, job_id: str) -> Path:
        return self.job_dir(job_id) / EVENTS_FILE

    def read_events(self, job_id: str, from_seq: int = 0) -> list[dict[str, Any]]:
        events, _ = read_event_lines(self.events_path(job_id), 0)
        return [e for e in events if e.get("seq", 0) >= from_seq]

    def ready_ids(self) -> list[str]:
        try:
            return [e.name for e in os.scandir(self.ready_dir) if is_job_id(e.name)]
        except FileNotFoundError:
            return []

    @staticmethod
    def _read_json(path: Path) -> dict[str, Any]:
        try:
            raw = path.read_bytes()
        except IsADirectoryError as exc:
            raise StoreError(f"{path} is a directory, not a file") from exc
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise StoreError(f"{path} is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise StoreError(f"{path} does not hold a JSON object")
        return data


def _read_text(path: Path) -> str | None:
    try:
        # Bytes, then decode: read_text would turn "\r" and "\r\n" into "\n" (result --raw).
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise StoreError(f"{path} is not valid UTF-8 (byte {exc.start}); left as it is") from exc


def read_event_lines(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """Whole event lines from byte `offset`; returns them and the offset after the last one.

    A trailing partial line (a writer mid-append) is left for the next call. A line that is
    not JSON (a damaged file) is skipped rather than stopping the reader.
    """
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset
    events = []
    for line in data[: end + 1].split(b"\n"):
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            events.append(obj)
    return events, offset + end + 1


def last_event_seq(path: Path) -> int:
    """The seq of the last whole line in events.jsonl (0 when empty)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 65536))
            tail = f.read()
    except FileNotFoundError:
        return 0
    for line in reversed(tail.split(b"\n")):
        with contextlib.suppress(ValueError, AttributeError):
            seq = json.loads(line).get("seq")
            if isinstance(seq, int):
                return seq
    return 0


def _clip(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_EVENT_FIELD:
        return value[:MAX_EVENT_FIELD] + f"… [{len(value) - MAX_EVENT_FIELD} more chars]"
    return value


class JobLock:
    """An exclusive flock on <job>/lock. The supervisor holds it for its whole life."""

    def __init__(self, job_dir: Path, fd: int | None = None) -> None:
        self.path = job_dir / LOCK_FILE
        self.fd = fd if fd is not None else os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)

    def try_acquire(self) -> bool:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                return False
            raise
        return True

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


class JobWriter:
    """The supervisor's pen: status.json (atomic), events.jsonl (append), result.txt (once)."""

    def __init__(self, store: JobStore, job_id: str) -> None:
        self.store = store
        self.job_id = job_id
        self.dir = store.job_dir(job_id)
        self.seq = last_event_seq(self.dir / EVENTS_FILE)
        self._events_fd = os.open(
            self.dir / EVENTS_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
        )
        self.status_write_failures = 0

    def write_status(self, status: JobStatus) -> bool:
        """Replace status.json. On a full disk the old file stays whole; returns False."""
        data = json.dumps(status.to_dict(), separators=(",", ":")).encode()
        try:
            write_atomic(self.dir / STATUS_FILE, data)
        except OSError as exc:
            self.status_write_failures += 1
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
                raise
            return False
        return True

    def append_event(self, event: str, **fields: Any) -> dict[str, Any]:
        """Append one whole line with the next seq. Returns the event written."""
        self.seq += 1
        record: dict[str, Any] = {"seq": self.seq, "ts": now_ms(), "event": event}
        for key, value in fields.items():
            if value is not None:
                record[key] = _clip(value)
        line = (json.dumps(record, separators=(",", ":"), default=str) + "\n").encode()
        try:
            os.write(self._events_fd, line)  # one write on O_APPEND: a whole line or none
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
                raise
            self.seq -= 1
        return record

    def write_result(self, text: str) -> None:
        path = self.dir / RESULT_FILE
        if path.exists():
            raise StoreError(f"bug: result.txt of job {self.job_id} written twice")
        write_atomic(path, text.encode("utf-8"), durable=True)

    def mark_ready(self) -> None:
        """Tell the job's owner it has news (notices.py): an answer, or its end."""
        from specialists.notices import post_for_job

        post_for_job(self.store.root, self.job_id)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._events_fd)


def iter_statuses(store: JobStore) -> Iterator[tuple[str, JobStatus | None, str | None]]:
    """(id, status or None, problem) for every job; a damaged status is reported, not raised.

    This is the hot path of `status` over many jobs: plain string paths, one read each.
    """
    jobs_dir = str(store.jobs_dir)
    for job_id in store.list_ids():
        path = os.path.join(jobs_dir, job_id, STATUS_FILE)
        try:
            with open(path, "rb") as f:
                data = json.loads(f.read())
            if not isinstance(data, dict):
                raise StoreError(f"{path} does not hold a JSON object")
            yield job_id, JobStatus.from_dict(data), None
        except FileNotFoundError:
            yield job_id, None, None
        except ValueError as exc:
            yield job_id, None, f"{path} is not valid JSON: {exc}"
        except (StoreError, OSError) as exc:
            yield job_id, None, str(exc)
