"""Record: the one durable primitive every store is a kind of.

A record is a directory holding three sorts of file, all plain JSON a person can read:

    <name>.json    a document: read whole, replaced whole (temp file + rename), versioned
    <name>.jsonl   a log: JSON lines, appended, folded by readers, trimmed by rewriting
    lock           one flock for read-modify-write of any of them (re-entrant per process)

and `claim(name)`: a document created at most once (link(2) of a finished temp file, which
fails when the name exists), the only "exactly once" in the project. Whoever claims first
wins; everyone else reads what the winner wrote, never half of it.

The torn-line rule of every log: a writer that dies mid-append leaves a last line without its
newline. Readers never take such a line (it may still be being written); the next append
closes it with a newline first, so the damage stays on a line of its own that readers report
once and skip. A line that is not a JSON object, or longer than the kind's bound, is reported
and skipped; the lines after it are still read.

Files are untrusted: never a symlink followed or a FIFO opened, reads bounded, files 0600 and
directories 0700 whatever the umask. `MemoryRecord` (memory.py) has the same behaviour for unit
tests that should not touch a disk.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from specialists.errors import StoreError
from specialists.jobs.atomic import write_atomic
from specialists.jobs.files import (
    DIR_MODE,
    FILE_MODE,
    create_private,
    ensure_dir,
    open_regular,
    parse_object,
    read_bytes,
)
from specialists.jobs.locks import lock as flock

MAX_DOC = 1 << 20  # a document past this is damage, not data (a kind may allow more)
MAX_LINE = 64 * 1024  # one log line
READ_CHUNK = 64 * 1024
LOCK_FILE = "lock"


@dataclass(frozen=True)
class Lines:
    """What a read of a log found: its entries, where the next read starts, what was bad."""

    entries: tuple[dict[str, Any], ...]
    end: int  # byte offset after the last whole line read
    problems: tuple[str, ...] = ()


class Record(Protocol):
    """One record. File and memory backends behave the same (tests/unit/test_record.py)."""

    def exists(self) -> bool: ...

    def read(self, doc: str, *, schema: int | None = None) -> dict[str, Any] | None:
        """The document, or None when there is none. With `schema`, a document whose
        `schema` field is newer is refused (StoreError) rather than misread."""
        ...

    def replace(self, doc: str, data: Mapping[str, Any]) -> None:
        """Write the whole document atomically: readers see the old one or the new one."""
        ...

    def claim(self, doc: str, data: Mapping[str, Any]) -> bool:
        """Create the document if it does not exist yet; False (nothing written) if it does."""
        ...

    def append(self, log: str, entry: Mapping[str, Any]) -> None:
        """Append one entry as one line (the torn-line rule above)."""
        ...

    def lines(self, log: str, *, start: int = 0, limit: int | None = None) -> Lines:
        """Whole lines from byte `start` on (at most `limit` entries)."""
        ...

    def trim(self, log: str, keep: int) -> None:
        """Keep the last `keep` entries (rewritten whole, once, under the lock)."""
        ...

    def locked(self) -> contextlib.AbstractContextManager[None]: ...

    def remove(self, doc: str) -> None:
        """Remove a document or a log (absent is fine)."""
        ...


def check_name(name: str) -> str:
    """A document or log name: plain, so it can never leave its record's directory."""
    if not name or name.startswith(".") or "/" in name or "\0" in name or name == LOCK_FILE:
        raise StoreError(f"bug: invalid record file name {name[:40]!r}")
    return name


def encode_line(entry: Mapping[str, Any]) -> bytes:
    return json.dumps(entry, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def check_schema(data: dict[str, Any], schema: int | None, where: object) -> dict[str, Any]:
    if schema is None:
        return data
    version = data.get("schema", 1)
    if type(version) is not int or version > schema:
        shown = version if type(version) is int else "of an unknown kind"
        raise StoreError(
            f"{where} has schema {shown}, newer than this specialists understands",
            hint="upgrade specialists",
        )
    return data


def parse_lines(
    data: bytes, base: int, where: object, max_line: int, limit: int | None
) -> tuple[list[dict[str, Any]], int, list[str]]:
    """Entries of the whole lines in `data` (which starts at file offset `base`): the
    shared reading of both backends. A last line without its newline is not taken."""
    entries: list[dict[str, Any]] = []
    problems: list[str] = []
    pos = 0
    while limit is None or len(entries) < limit:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        line = data[pos:nl]
        at = base + pos
        pos = nl + 1
        if not line.strip():
            continue
        if len(line) > max_line:
            problems.append(f"{where}: the line at byte {at} is longer than {max_line} bytes")
            continue
        try:
            entries.append(parse_object(line, f"{where}: the line at byte {at}"))
        except StoreError as exc:
            problems.append(exc.message)
    return entries, base + pos, problems


_guard = threading.Lock()
_mutexes: dict[str, Any] = {}  # lock path -> the in-process side of its flock
_depth: dict[str, int] = {}  # lock path -> nesting, touched only by the thread holding it


class FileRecord:
    """A record in a directory on disk."""

    def __init__(self, path: Path, *, max_doc: int = MAX_DOC, max_line: int = MAX_LINE) -> None:
        self.path = path
        self.max_doc = max_doc
        self.max_line = max_line

    def __repr__(self) -> str:
        return f"FileRecord({str(self.path)!r})"

    def exists(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            return False
        os.close(fd)
        return True

    def create(self) -> bool:
        """Make the record's directory; False when it exists (an exclusive mkdir: the
        record's identity is claimed by whoever creates it)."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        try:
            self.path.mkdir(mode=DIR_MODE)
        except FileExistsError:
            return False
        os.chmod(self.path, DIR_MODE)
        return True

    def ensure(self) -> None:
        """The directory, made if missing (0700); a symlink or a file there is refused."""
        if not os.path.lexists(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        ensure_dir(self.path)

    # --- documents --------------------------------------------------------------------------

    def _doc(self, doc: str) -> Path:
        return self.path / f"{check_name(doc)}.json"

    def read(self, doc: str, *, schema: int | None = None) -> dict[str, Any] | None:
        path = self._doc(doc)
        try:
            raw = read_bytes(path, self.max_doc)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return check_schema(parse_object(raw, path), schema, path)

    def replace(self, doc: str, data: Mapping[str, Any]) -> None:
        self.ensure()
        write_atomic(self._doc(doc), _encode_doc(data))

    def claim(self, doc: str, data: Mapping[str, Any]) -> bool:
        self.ensure()
        target = self._doc(doc)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.claim")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        fd = create_private(tmp, os.O_WRONLY)
        try:
            _write_all(fd, _encode_doc(data))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, target)  # fails when the name exists, whatever it is
        except FileExistsError:
            return False
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        return True

    def remove(self, doc: str) -> None:
        for name in (f"{check_name(doc)}.json", f"{doc}.jsonl"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path / name)

    # --- logs -------------------------------------------------------------------------------

    def _log(self, log: str) -> Path:
        return self.path / f"{check_name(log)}.jsonl"

    def append(self, log: str, entry: Mapping[str, Any]) -> None:
        line = encode_line(entry)
        if len(line) > self.max_line:
            raise StoreError(f"{self._log(log)}: an entry of {len(line)} bytes is too long")
        self.ensure()
        with self.locked():
            fd = open_regular(self._log(log), os.O_RDWR | os.O_APPEND | os.O_CREAT)
            try:
                os.fchmod(fd, FILE_MODE)
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    line = b"\n" + line  # close a torn line first: it stays on its own
                _append_whole(fd, line)
            finally:
                os.close(fd)

    def lines(self, log: str, *, start: int = 0, limit: int | None = None) -> Lines:
        path = self._log(log)
        try:
            fd = open_regular(path)
        except (FileNotFoundError, NotADirectoryError):
            return Lines((), start)
        entries: list[dict[str, Any]] = []
        problems: list[str] = []
        try:
            size = os.fstat(fd).st_size
            pos = start if 0 <= start <= size else 0  # past the end: trimmed meanwhile
            carry = b""
            while pos + len(carry) < size and (limit is None or len(entries) < limit):
                chunk = os.pread(fd, min(READ_CHUNK, size - pos - len(carry)), pos + len(carry))
                if not chunk:
                    break
                data = carry + chunk
                left = None if limit is None else limit - len(entries)
                got, end, bad = parse_lines(data, pos, path, self.max_line, left)
                entries.extend(got)
                problems.extend(bad)
                if end == pos and len(data) > self.max_line:  # no newline in a line's worth
                    problems.append(f"{path}: the line at byte {pos} is too long; skipped")
                    skip = data.find(b"\n")
                    pos, carry = (pos + len(data), b"") if skip < 0 else (pos + skip + 1, b"")
                    continue
                carry = data[end - pos :]
                pos = end
        finally:
            os.close(fd)
        return Lines(tuple(entries), pos, tuple(problems))

    def trim(self, log: str, keep: int) -> None:
        with self.locked():
            found = self.lines(log)
            if len(found.entries) <= keep:
                return
            kept = found.entries[-keep:] if keep > 0 else ()
            write_atomic(self._log(log), b"".join(encode_line(e) for e in kept))

    # --- the lock ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        self.ensure()
        key = str(self.path / LOCK_FILE)
        with _guard:
            mutex = _mutexes.setdefault(key, threading.RLock())
        with mutex:  # re-entrant in this thread; other threads of the process wait here
            depth = _depth.get(key, 0)
            _depth[key] = depth + 1
            try:
                if depth:
                    yield
                    return
                fd = open_regular(key, os.O_RDWR | os.O_CREAT)
                try:
                    flock(fd)  # other processes wait here
                    yield
                finally:
                    os.close(fd)  # closing releases the flock
            finally:
                _depth[key] -= 1


def _encode_doc(data: Mapping[str, Any]) -> bytes:
    return json.dumps(data, indent=1, ensure_ascii=False).encode() + b"\n"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _append_whole(fd: int, line: bytes) -> None:
    """One write on an O_APPEND descriptor, all of it or none: a short write (a full disk)
    is cut back off and raised as ENOSPC, so no torn line is left by us."""
    written = os.write(fd, line)
    if written != len(line):
        os.ftruncate(fd, os.fstat(fd).st_size - written)
        raise OSError(errno.ENOSPC, "No space left on device (a partial line was removed)")
