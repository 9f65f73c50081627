"""The supervisor's pen: status.json (atomic), events.jsonl (whole lines), result.txt (once),
answers, and the job's last words, which a full disk cannot stop.

A full disk, while the job runs, is not fatal: status.json keeps its last whole version, an
event that does not fit is counted and dropped (seq stays gapless), and once space returns a
notice says how many were lost.

The last words (result.txt, the final event, the final status) must land, once. The
launcher reserves room for them when it creates the job (`.reserve`, real blocks); the first
of them that finds no space releases it and tries again, and after that the writer waits for
space (`patience_s`). The final event is written before the final status, so a
reader that finds a terminal event under a status still marked active completes the status
from it (recovery.py) instead of appending a second end.

Everything is opened relative to the job directory, which is opened once without following
links; what stands in the way of a file we write (a symlink, a FIFO, a directory, a result
we did not write) is moved aside and reported, never followed.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import time
from collections.abc import Callable, Mapping
from typing import Any

from specialists.base.errors import Bug, StoreError
from specialists.base.lazy import logger
from specialists.store.atomic import write_all, write_atomic
from specialists.store.files import (
    create_private,
    displace,
    ensure_dir,
    is_out_of_space,
    open_dir,
)
from specialists.store.joblog import MAX_LINE, append_whole, last_event_seq
from specialists.store.jobs import (
    ANSWERS_DIR,
    EVENTS_FILE,
    MAX_EVENT_FIELD,
    RESERVE_FILE,
    RESULT_FILE,
    STATUS_FILE,
    JobStore,
    now_ms,
)
from specialists.store.records import JobStatus

log = logger("specialists.store")

RESERVE_SIZE = 64 * 1024  # room for the last words: a status, an event, a modest answer
FINAL_PATIENCE_S = 600.0  # how long the last words wait for space once the reserve is spent
_SOFT_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO})


def make_reserve(dir_fd: int) -> None:
    """Create the job's reserve: RESERVE_SIZE bytes written (not a sparse hole)."""
    fd = create_private(RESERVE_FILE, os.O_WRONLY | os.O_TRUNC, dir_fd=dir_fd)
    try:
        write_all(fd, bytes(RESERVE_SIZE))  # a short write (the disk filled): the next says why
    finally:
        os.close(fd)


def release_reserve(dir_fd: int) -> bool:
    """Free the reserve's blocks; False if there was none left."""
    try:
        os.unlink(RESERVE_FILE, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    return True


NO_SPACE = "no space left on device: the job's files could not be written (free some space)"


def failure_reason(exc: BaseException | None, bug: str) -> str:
    """The error a job ends with after its supervisor met `exc`: a full disk is named as the
    cause (it is no bug); anything else is `bug`."""
    return NO_SPACE if is_out_of_space(exc) else bug


def mark_ended(status: JobStatus, final: str, error: str | None, at_ms: int) -> None:
    """Set the fields of a status that ended as `final` at `at_ms`."""
    status.status = final
    status.error = error if final == "error" else None
    status.finished_at_ms = at_ms
    if status.started_at_ms:
        status.elapsed_s = round(max(0, at_ms - status.started_at_ms) / 1000, 1)
    status.current_event = final
    status.current_tool = None
    status.stalled = False


def _clip(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_EVENT_FIELD:
        return value[:MAX_EVENT_FIELD] + f"… [{len(value) - MAX_EVENT_FIELD} more chars]"
    return value


def event_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """An event's fields as they are written: no None, long strings cut."""
    return {key: _clip(value) for key, value in fields.items() if value is not None}


def encode_event(record: dict[str, Any]) -> bytes:
    """One line; past MAX_LINE the largest fields are dropped (and named) until it fits."""
    line = json.dumps(record, separators=(",", ":"), default=str)
    if len(line) < MAX_LINE:
        return (line + "\n").encode()
    core = ("seq", "ts", "event")
    sizes = sorted(
        (k for k in record if k not in core),
        key=lambda k: len(json.dumps(record[k], default=str)),
    )
    kept = dict(record)
    dropped: list[str] = []
    while sizes and len(line) >= MAX_LINE - 200:
        key = sizes.pop()
        dropped.append(key)
        del kept[key]
        line = json.dumps({**kept, "dropped": dropped}, separators=(",", ":"), default=str)
    return (line + "\n").encode()


class JobWriter:
    """The only writer of a job's status.json and events.jsonl."""

    def __init__(
        self,
        store: JobStore,
        job_id: str,
        *,
        patience_s: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.store = store
        self.job_id = job_id
        self.dir = store.job_dir(job_id)
        self.patience_s = FINAL_PATIENCE_S if patience_s is None else patience_s
        self._sleep = sleep
        # Set by a caller that must not wait for space any longer (a person pressed Ctrl-C).
        self.stop_waiting: Callable[[], bool] = lambda: False
        self.dir_fd = open_dir(self.dir)
        notices: list[str] = []
        self._events_fd = self._open_events(notices)
        self.seq = last_event_seq(self.dir / EVENTS_FILE)
        self.lost_events = 0  # events dropped for lack of space since the last notice
        self.failures_in_a_row = 0
        self.last_failure: str | None = None
        self._result_written = False
        for text in notices:
            self.append_event("notice", message=text)

    def _open_events(self, notices: list[str]) -> int:
        try:
            mode = os.lstat(EVENTS_FILE, dir_fd=self.dir_fd).st_mode
        except FileNotFoundError:
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):
            aside = displace(EVENTS_FILE, dir_fd=self.dir_fd)
            notices.append(f"events.jsonl was not a regular file; moved aside to {aside}")
        fd = create_private(EVENTS_FILE, os.O_WRONLY | os.O_APPEND, dir_fd=self.dir_fd)
        size = os.fstat(fd).st_size
        # A torn last line (a crash, a planted append) must stay alone, not glued to ours:
        # the next line written starts with a newline.
        self._torn = bool(size) and self._last_byte(size) != b"\n"
        return fd

    def _last_byte(self, size: int) -> bytes:
        fd = os.open(EVENTS_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.dir_fd)
        try:
            return os.pread(fd, 1, size - 1)
        finally:
            os.close(fd)

    # --- while the job runs --------------------------------------------------------------

    def write_status(self, status: JobStatus) -> bool:
        """Replace status.json. On a full disk the old file stays whole; returns False."""
        try:
            self._put_status(status)
        except OSError as exc:
            if exc.errno not in _SOFT_ERRORS:
                raise
            self._failed(exc)
            return False
        self.failures_in_a_row = 0
        return True

    def _put_status(self, status: JobStatus) -> None:
        data = json.dumps(status.to_dict(), separators=(",", ":")).encode()
        write_atomic(STATUS_FILE, data, dir_fd=self.dir_fd, displace_dir=True)

    def append_event(self, event: str, **fields: Any) -> dict[str, Any]:
        """Append one whole line with the next seq. Returns the event (written or, on a full
        disk, counted as lost)."""
        if self.lost_events:
            lost, self.lost_events = self.lost_events, 0
            message = f"{lost} event(s) not recorded: no space left on device"
            if not self._try_append(self._next("notice", {"message": message})):
                self.lost_events = lost  # still no room: say it next time
        record = self._next(event, fields)
        if not self._try_append(record):
            self.lost_events += 1
        return record

    def _try_append(self, record: dict[str, Any]) -> bool:
        """Append `record` (its seq already taken); on a full disk give the seq back."""
        try:
            self._append(encode_event(record))
        except OSError as exc:
            if exc.errno not in _SOFT_ERRORS:
                raise
            self.seq -= 1
            self._failed(exc)
            return False
        self.failures_in_a_row = 0
        return True

    def _append(self, line: bytes) -> None:
        append_whole(self._events_fd, b"\n" + line if self._torn else line)
        self._torn = False

    def _next(self, event: str, fields: dict[str, Any]) -> dict[str, Any]:
        self.seq += 1
        return {"seq": self.seq, "ts": now_ms(), "event": event, **event_fields(fields)}

    def _failed(self, exc: OSError) -> None:
        self.failures_in_a_row += 1
        self.last_failure = exc.strerror or str(exc)

    def write_answer(self, number: int, text: str) -> None:
        """answers/NNN.txt of a keep-alive job (answers/ a real directory, never a link)."""
        path = self.dir / ANSWERS_DIR
        try:
            ensure_dir(path)
        except StoreError:
            displace(ANSWERS_DIR, dir_fd=self.dir_fd)
            ensure_dir(path)
        name = os.path.join(ANSWERS_DIR, f"{number:03d}.txt")
        # ANSWERS_DIR was just checked to be a real directory under our own dir fd.
        write_atomic(name, text.encode("utf-8", "replace"), dir_fd=self.dir_fd)

    # --- the last words ------------------------------------------------------------------

    def write_result(self, text: str) -> str | None:
        """Write result.txt, once. Returns a notice if something was in its place: a result
        this writer did not write is moved aside (kept), never a reason to lose the answer."""
        if self._result_written:
            raise Bug(f"result.txt of job {self.job_id} written twice")
        notice = None
        if _exists(RESULT_FILE, self.dir_fd):
            aside = displace(RESULT_FILE, dir_fd=self.dir_fd)
            notice = f"a result.txt this job did not write was in its directory; moved to {aside}"
        data = text.encode("utf-8", "replace")
        self._last_words(lambda: write_atomic(RESULT_FILE, data, durable=True, dir_fd=self.dir_fd))
        self._result_written = True
        return notice

    def write_final(self, status: JobStatus, event: str, **fields: Any) -> dict[str, Any]:
        """The final event, then the final status: each waits for space if it must (the
        reserve first), and each lands at most once."""
        if self.lost_events:
            fields = {**fields, "unrecorded_events": self.lost_events}
            self.lost_events = 0
        record = self._next(event, fields)
        line = encode_event(record)
        try:
            self._last_words(lambda: self._append(line))
        except OSError as exc:
            self.seq -= 1
            log.warning("job %s: its final event could not be written: %s", self.job_id, exc)
        status.events = self.seq
        self.complete(status)
        return record

    def complete(self, status: JobStatus) -> None:
        """The final status (last words, best effort), and the reserve released: a finished
        job keeps no room it does not need, and its owners' notices, told next
        (supervise/news.py), find that room."""
        try:
            self._last_words(lambda: self._put_status(status))
        except (OSError, StoreError) as exc:
            log.warning("job %s: status.json could not be written: %s", self.job_id, exc)
        release_reserve(self.dir_fd)

    def _last_words(self, action: Callable[[], None]) -> None:
        try:
            action()
            return
        except OSError as exc:
            if not is_out_of_space(exc):
                raise
        released = release_reserve(self.dir_fd)
        deadline = time.monotonic() + self.patience_s
        delay = 0.0 if released else 0.1
        warned = False
        while True:
            if delay:
                self._sleep(delay)
            try:
                action()
                return
            except OSError as exc:
                if not is_out_of_space(exc) or time.monotonic() >= deadline or self.stop_waiting():
                    raise
                if not warned:
                    warned = True
                    log.warning(
                        "job %s: no space left on device; waiting up to %.0f s to record its end",
                        self.job_id,
                        self.patience_s,
                    )
            delay = min(max(delay * 2, 0.1), 5.0)

    def close(self) -> None:
        for fd in (self._events_fd, self.dir_fd):
            try:
                os.close(fd)
            except OSError as exc:
                log.debug("closing a job file: %s", exc)


def _exists(name: str, dir_fd: int) -> bool:
    try:
        os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    return True
