"""`FileRecord`: the Record (record.py) in a directory on disk.

Writes are atomic (a temp file renamed, a filled hidden directory renamed, link(2) for a
claim), appends are one write each (the torn-line rule), and nothing is opened through a
symlink or as a FIFO: every file is opened relative to its record's directory descriptor.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from specialists.base.errors import Planted, StoreError
from specialists.store.atomic import write_all, write_atomic
from specialists.store.fields import check_schema
from specialists.store.files import (
    DIR_MODE,
    FILE_MODE,
    create_private,
    ensure_dir,
    open_dir,
    open_regular,
    parse_object,
    read_bytes,
    remove_tree,
)
from specialists.store.joblog import append_whole, read_lines
from specialists.store.locks import lock as flock
from specialists.store.record import (
    LOCK_FILE,
    MAX_DOC,
    MAX_LINE,
    MAX_LOG,
    Lines,
    Record,
    check_name,
    check_sub,
    encode_doc,
    encode_line,
    is_child,
)

STALE_S = 3600  # a hidden `.new-` or `.deleted-` directory this old was left by a crash

_guard = threading.Lock()
_mutexes: dict[str, Any] = {}  # lock path -> the in-process side of its flock
_depth: dict[str, int] = {}  # lock path -> nesting, touched only by the thread holding it


class FileRecord:
    """A record in a directory on disk. `durable` records fsync every write (a journal that
    must survive a power cut); bounds come from the record's kind (kinds.py)."""

    def __init__(
        self,
        path: Path,
        *,
        max_doc: int = MAX_DOC,
        max_line: int = MAX_LINE,
        max_log: int = MAX_LOG,
        durable: bool = False,
        parent: FileRecord | None = None,
    ) -> None:
        self.path = path
        self.max_doc = max_doc
        self.max_line = max_line
        self.max_log = max_log
        self.durable = durable
        self.parent = parent  # a record inside another is opened from it, never via a link

    def __repr__(self) -> str:
        return f"FileRecord({str(self.path)!r})"

    def _like(self, path: Path, parent: FileRecord | None = None) -> FileRecord:
        return FileRecord(
            path,
            max_doc=self.max_doc,
            max_line=self.max_line,
            max_log=self.max_log,
            durable=self.durable,
            parent=parent,
        )

    # --- the record itself ------------------------------------------------------------------

    def exists(self) -> bool:
        try:
            fd = self._dir_fd()
        except (OSError, StoreError):
            return False
        os.close(fd)
        return True

    def sub(self, name: str) -> FileRecord:
        return self._like(self.path / check_sub(name), parent=self)

    def children(self) -> list[str]:
        return sorted(n for n in self._names() if is_child(n))

    def docs(self) -> list[str]:
        return sorted(n[:-5] for n in self._names() if n.endswith(".json") and n[0] != ".")

    def _names(self) -> list[str]:
        try:
            fd = self._dir_fd()
        except (FileNotFoundError, NotADirectoryError):
            return []
        try:
            return os.listdir(fd)
        finally:
            os.close(fd)

    def ensure(self) -> None:
        """The directory, made if missing (0700); a symlink or a file there is refused."""
        if not os.path.lexists(self.path):
            self._ensure_parent()
        ensure_dir(self.path)

    def _ensure_parent(self) -> None:
        parent = self.path.parent
        if not os.path.lexists(parent):
            parent.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        st = os.lstat(parent)
        if not stat.S_ISDIR(st.st_mode):
            what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a directory"
            raise Planted(f"{parent} is {what}; not followed")

    def create(self, fill: Callable[[Record], None] | None = None) -> bool:
        self._ensure_parent()
        if fill is None:
            try:
                os.mkdir(self.path, DIR_MODE)  # exclusive: the record's name is claimed
            except FileExistsError:
                return False
            os.chmod(self.path, DIR_MODE)
            return True
        if os.path.lexists(self.path):
            return False
        _sweep(self.path.parent)
        staging = self.path.with_name(f".new-{self.path.name}-{os.getpid()}-{_rand()}")
        ensure_dir(staging)
        try:
            fill(self._like(staging))
            try:
                os.rename(staging, self.path)  # a directory rename never replaces a full one
            except OSError:
                if not os.path.lexists(self.path):
                    raise
                remove_tree(staging)
                return False
        except BaseException:
            remove_tree(staging)
            raise
        return True

    def destroy(self) -> bool:
        try:
            with self.locked(create=False):
                aside = self.path.with_name(f".deleted-{self.path.name}-{_rand()}")
                os.rename(self.path, aside)  # nothing can start on it after this
        except FileNotFoundError:
            return False
        remove_tree(aside)
        return True

    # --- documents --------------------------------------------------------------------------

    def _doc(self, doc: str) -> Path:
        return self.path / f"{check_name(doc)}.json"

    def read(self, doc: str, *, schema: int | None = None) -> dict[str, Any] | None:
        path = self._doc(doc)
        try:
            dir_fd = self._dir_fd()
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            raw = read_bytes(path.name, self.max_doc, dir_fd=dir_fd, label=path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        finally:
            os.close(dir_fd)
        return check_schema(parse_object(raw, path), schema, path)

    def _open(self, name: str, flags: int = 0) -> int:
        """An fd on the regular file `name` in the record, whose directory is never a
        followed link either (FileNotFoundError when either is missing)."""
        dir_fd = self._dir_fd()
        try:
            return open_regular(name, flags, dir_fd=dir_fd, label=self.path / name)
        finally:
            os.close(dir_fd)

    def _dir_fd(self) -> int:
        """An fd on the record's directory, opened from its parent record's (no link
        followed on the way down from the outermost record)."""
        if self.parent is None:
            return open_dir(self.path)
        parent_fd = self.parent._dir_fd()
        try:
            return open_dir(self.path.name, dir_fd=parent_fd)
        except Planted:
            raise Planted(
                f"{self.path} is not a directory (a symbolic link?); not followed"
            ) from None
        finally:
            os.close(parent_fd)

    def replace(self, doc: str, data: Mapping[str, Any]) -> None:
        data_bytes = encode_doc(data, self.max_doc, str(self._doc(doc)))
        self.ensure()
        write_atomic(self._doc(doc), data_bytes, durable=self.durable)

    def claim(self, doc: str, data: Mapping[str, Any]) -> bool:
        target = self._doc(doc)
        data_bytes = encode_doc(data, self.max_doc, str(target))
        self.ensure()
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.claim")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        fd = create_private(tmp, os.O_WRONLY)
        try:
            try:
                write_all(fd, data_bytes)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.link(tmp, target)  # fails when the name exists, whatever it is
        except FileExistsError:
            return False
        finally:  # written, or not (a full disk): no half-written temp is left behind
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        return True

    def remove(self, doc: str) -> None:
        for name in (f"{check_name(doc)}.json", f"{doc}.jsonl"):
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
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
                append_whole(fd, line)
                if self.durable:
                    os.fsync(fd)
            finally:
                os.close(fd)

    def size(self, log: str) -> int:
        try:
            fd = self._open(self._log(log).name)
        except (FileNotFoundError, NotADirectoryError):
            return 0
        try:
            return os.fstat(fd).st_size
        finally:
            os.close(fd)

    def lines(self, log: str, *, start: int = 0, limit: int | None = None) -> Lines:
        path = self._log(log)
        try:
            fd = self._open(path.name)
        except (FileNotFoundError, NotADirectoryError):
            return Lines((), start)
        try:
            size = os.fstat(fd).st_size
            pos = start if 0 <= start <= size else 0  # past the end: trimmed meanwhile
            stop, over = min(size, pos + self.max_log), size - pos > self.max_log
            entries, pos, problems = read_lines(
                fd, pos, stop, path, parse_object, self.max_line, limit
            )
        finally:
            os.close(fd)
        if over:
            problems.insert(0, f"{path} is over {self.max_log} bytes; read its first part only")
        return Lines(tuple(entries), pos, tuple(problems))

    def trim(self, log: str, keep: int) -> None:
        with self.locked():
            found = self.lines(log)
            if len(found.entries) <= keep:
                return
            kept = found.entries[-keep:] if keep > 0 else ()
            data = b"".join(encode_line(e) for e in kept)
            write_atomic(self._log(log), data, durable=self.durable)

    def rewrite(self, log: str, entries: Iterable[Mapping[str, Any]]) -> None:
        data = b"".join(encode_line(e) for e in entries)
        with self.locked():
            write_atomic(self._log(log), data, durable=self.durable)

    # --- the lock ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self, name: str | None = None, *, create: bool = True) -> Iterator[None]:
        if create:
            self.ensure()
        elif not self.exists():
            if os.path.islink(self.path):
                raise Planted(f"{self.path} is a symbolic link; not followed")
            raise FileNotFoundError(errno.ENOENT, "no such record", str(self.path))
        key = str(self.path / (LOCK_FILE if name is None else f"{check_name(name)}.lock"))
        with _guard:
            mutex = _mutexes.setdefault(key, threading.RLock())
        with mutex:  # re-entrant in this thread; other threads of the process wait here
            depth = _depth.get(key, 0)
            _depth[key] = depth + 1
            try:
                if depth:
                    yield
                    return
                fd = create_private(key, os.O_RDWR)  # a planted link is moved aside
                try:
                    flock(fd)  # other processes wait here
                    if not create and not self.exists():  # destroyed while we waited
                        raise FileNotFoundError(errno.ENOENT, "record removed", str(self.path))
                    yield
                finally:
                    os.close(fd)  # closing releases the flock
            finally:
                _depth[key] -= 1


def _rand() -> str:
    return os.urandom(3).hex()


def _sweep(parent: Path) -> None:
    """Remove what a create or destroy killed midway left (hidden, over an hour old)."""
    import time

    for name in os.listdir(parent):
        if not name.startswith((".new-", ".deleted-")):
            continue
        path = parent / name
        with contextlib.suppress(FileNotFoundError):
            st = os.lstat(path)
            if time.time() - st.st_mtime > STALE_S and stat.S_ISDIR(st.st_mode):
                remove_tree(path)
