"""`MemoryRecord`: a Record that lives in a dict, for unit tests that should not touch a disk.

It keeps the file backend's rules where a caller can see them: documents and lines are JSON
(what cannot be encoded is refused the same way), logs are bytes with the same torn-line rule
(`tear` leaves a torn last line, as a writer killed mid-append would), a claim wins once, a
create is whole or nothing, and the lock is re-entrant in a thread and exclusive between
threads.
"""

from __future__ import annotations

import contextlib
import errno
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from specialists.base.errors import StoreError
from specialists.store.fields import check_schema
from specialists.store.files import parse_object
from specialists.store.joblog import split_lines
from specialists.store.record import (
    MAX_DOC,
    MAX_LINE,
    Lines,
    Record,
    check_name,
    check_sub,
    encode_doc,
    encode_line,
)


class MemoryRecord:
    def __init__(self, name: str = "memory", *, max_doc: int = MAX_DOC, max_line: int = MAX_LINE):
        self.name = name
        self.max_doc = max_doc
        self.max_line = max_line
        self.docs_: dict[str, bytes] = {}
        self.logs: dict[str, bytearray] = {}
        self.subs: dict[str, MemoryRecord] = {}
        self.created = False
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"MemoryRecord({self.name!r})"

    def exists(self) -> bool:
        return self.created

    def sub(self, name: str) -> MemoryRecord:
        with self._lock:
            found = self.subs.get(check_sub(name))
            if found is None:
                found = self.subs[name] = MemoryRecord(
                    f"{self.name}/{name}", max_doc=self.max_doc, max_line=self.max_line
                )
                found._lock = self._lock  # one lock per tree: a create is seen whole
            return found

    def children(self) -> list[str]:
        return sorted(n for n, r in self.subs.items() if r.created and not n.startswith("."))

    def docs(self) -> list[str]:
        return sorted(self.docs_)

    def create(self, fill: Callable[[Record], None] | None = None) -> bool:
        with self._lock:
            if self.created:
                return False
            if fill is not None:
                staging = MemoryRecord(self.name, max_doc=self.max_doc, max_line=self.max_line)
                staging.created = True
                fill(staging)  # a failure leaves nothing
                self.docs_, self.logs, self.subs = staging.docs_, staging.logs, staging.subs
                for child in self.subs.values():
                    child._lock = self._lock
            self.created = True
            return True

    def destroy(self) -> bool:
        with self._lock:
            if not self.created:
                return False
            self.created = False
            self.docs_, self.logs, self.subs = {}, {}, {}
            return True

    def ensure(self) -> None:
        self.created = True

    def read(self, doc: str, *, schema: int | None = None) -> dict[str, Any] | None:
        raw = self.docs_.get(check_name(doc))
        if raw is None:
            return None
        where = f"{self.name}/{doc}.json"
        if len(raw) > self.max_doc:
            raise StoreError(f"{where} is larger than the {self.max_doc} bytes read")
        return check_schema(parse_object(raw, where), schema, where)

    def replace(self, doc: str, data: Mapping[str, Any]) -> None:
        encoded = encode_doc(data, self.max_doc, f"{self.name}/{doc}.json")
        with self._lock:
            self.ensure()
            self.docs_[check_name(doc)] = encoded

    def claim(self, doc: str, data: Mapping[str, Any]) -> bool:
        encoded = encode_doc(data, self.max_doc, f"{self.name}/{doc}.json")
        with self._lock:
            self.ensure()
            if check_name(doc) in self.docs_:
                return False
            self.docs_[doc] = encoded
            return True

    def remove(self, doc: str) -> None:
        with self._lock:
            self.docs_.pop(check_name(doc), None)
            self.logs.pop(doc, None)

    def append(self, log: str, entry: Mapping[str, Any]) -> None:
        line = encode_line(entry)
        if len(line) > self.max_line:
            raise StoreError(f"{self.name}/{log}.jsonl: an entry of {len(line)} bytes is too long")
        with self._lock:
            self.ensure()
            data = self.logs.setdefault(check_name(log), bytearray())
            if data and not data.endswith(b"\n"):
                data += b"\n"
            data += line

    def tear(self, log: str, partial: bytes) -> None:
        """Leave `partial` at the end of the log without its newline (a killed writer)."""
        with self._lock:
            self.logs.setdefault(check_name(log), bytearray()).extend(partial)

    def size(self, log: str) -> int:
        return len(self.logs.get(check_name(log), b""))

    def lines(self, log: str, *, start: int = 0, limit: int | None = None) -> Lines:
        data = bytes(self.logs.get(check_name(log), b""))
        base = start if 0 <= start <= len(data) else 0
        where = f"{self.name}/{log}.jsonl"
        entries, end, problems = split_lines(
            data[base:], base, where, parse_object, self.max_line, limit
        )
        return Lines(tuple(entries), end, tuple(problems))

    def trim(self, log: str, keep: int) -> None:
        with self._lock:
            entries = self.lines(log).entries
            if len(entries) > keep:
                kept = entries[-keep:] if keep > 0 else ()
                self.logs[log] = bytearray(b"".join(encode_line(e) for e in kept))

    def rewrite(self, log: str, entries: Iterable[Mapping[str, Any]]) -> None:
        data = bytearray(b"".join(encode_line(e) for e in entries))
        with self._lock:
            self.ensure()
            self.logs[check_name(log)] = data

    @contextlib.contextmanager
    def locked(self, name: str | None = None, *, create: bool = True) -> Iterator[None]:
        if name is not None:
            check_name(name)
        with self._lock:
            if create:
                self.ensure()
            elif not self.created:
                raise FileNotFoundError(errno.ENOENT, "no such record", self.name)
            yield
