"""Record: the one durable primitive every store is a kind of (all kinds: kinds.py).

A record is a directory holding three sorts of file, all plain JSON a person can read:

    <name>.json    a document: read whole, replaced whole (temp file + rename), versioned
    <name>.jsonl   a log: JSON lines, appended, folded by readers, trimmed by rewriting
    lock           one flock for read-modify-write of any of them (re-entrant per process)

and records inside it (`sub`, listed by `children`), made whole or not at all (`create`).
There are two "exactly once": `claim(name)`, a document created at most once (link(2) of a
finished temp file, which fails when the name exists), and `create()`, a record made at most
once (a rename of a filled hidden directory, which never replaces a full one). Whoever wins
first wins; everyone else reads what the winner wrote, never half of it.

The torn-line rule of every log: a writer that dies mid-append leaves a last line without its
newline. Readers never take such a line (it may still be being written); the next append
closes it with a newline first, so the damage stays on a line of its own that readers report
once and skip. A line that is not a JSON object, or longer than the kind's bound, is reported
and skipped; the lines after it are still read.

Files are untrusted: never a symlink followed or a FIFO opened, reads bounded, files 0600 and
directories 0700 whatever the umask. `MemoryRecord` (memory.py) has the same behaviour for unit
tests that should not touch a disk; `FileRecord` (file_record.py) is the one on disk. This
module holds what both share: the Protocol, names and encodings; both read a log's lines as
job logs are read (joblog.py `split_lines`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from specialists.base.errors import StoreError
from specialists.base.tuples import NamedTuple

MAX_DOC = 1 << 20  # a document past this is damage, not data (a kind may allow more)
MAX_LINE = 64 * 1024  # one log line
MAX_LOG = 64 << 20  # a log is read this far; past it is reported, not read
LOCK_FILE = "lock"
_RECORD_SUFFIXES = (".json", ".jsonl", ".lock")


class Lines(NamedTuple):
    """What a read of a log found: its entries, where the next read starts, what was bad."""

    entries: tuple[dict[str, Any], ...]
    end: int  # byte offset after the last whole line read
    problems: tuple[str, ...] = ()


class Record(Protocol):
    """One record. File and memory backends behave the same (tests/unit/test_record.py)."""

    def exists(self) -> bool: ...

    def ensure(self) -> None:
        """Make the record's directory if it is missing (a planted link is refused)."""
        ...

    def create(self, fill: Callable[[Record], None] | None = None) -> bool:
        """Make the record, filled by `fill`, whole or not at all; False (nothing made) when
        it exists. Of racing creates exactly one wins."""
        ...

    def destroy(self) -> bool:
        """Remove the whole record under its lock; False when there was none."""
        ...

    def sub(self, name: str) -> Record:
        """The record `name` inside this one (which need not exist yet)."""
        ...

    def children(self) -> list[str]:
        """The names of the records inside this one, sorted (anything there that is not a
        record file counts, so a planted link is reported by whoever opens it)."""
        ...

    def docs(self) -> list[str]:
        """The names of this record's documents, sorted."""
        ...

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

    def size(self, log: str) -> int:
        """The log's length in bytes (0 when there is none)."""
        ...

    def trim(self, log: str, keep: int) -> None:
        """Keep the last `keep` entries (rewritten whole, once, under the lock)."""
        ...

    def rewrite(self, log: str, entries: Iterable[Mapping[str, Any]]) -> None:
        """Replace the whole log by `entries` (under the lock; readers see the old log or the
        new one). A compaction: hold the lock across the read it is made from."""
        ...

    def locked(
        self, name: str | None = None, *, create: bool = True
    ) -> contextlib.AbstractContextManager[None]:
        """Hold the record's lock (or its lock `name`). With `create=False` a record that
        does not exist, or is destroyed while we wait, is FileNotFoundError."""
        ...

    def remove(self, doc: str) -> None:
        """Remove a document or a log (absent is fine)."""
        ...


def check_name(name: str) -> str:
    """A document or log name: plain, so it can never leave its record's directory."""
    if not name or name.startswith(".") or "/" in name or "\0" in name or name == LOCK_FILE:
        raise StoreError(f"bug: invalid record file name {name[:40]!r}")
    return name


def check_sub(name: str) -> str:
    """A record's name inside another: one path component (a leading dot hides it)."""
    if name in ("", ".", "..") or "/" in name or "\0" in name or name == LOCK_FILE:
        raise StoreError(f"bug: invalid record name {name[:40]!r}")
    if name.startswith((".new-", ".deleted-")) or name.endswith(_RECORD_SUFFIXES):
        raise StoreError(f"bug: invalid record name {name[:40]!r}")
    return name


def is_child(name: str) -> bool:
    return not name.startswith(".") and name != LOCK_FILE and not name.endswith(_RECORD_SUFFIXES)


def encode_line(entry: Mapping[str, Any]) -> bytes:
    return _utf8(json.dumps(entry, separators=(",", ":"), ensure_ascii=False)) + b"\n"


class DocTooLong(StoreError):
    """A document its record's reader would refuse: not written, so what is there stays
    readable (a document read back as damaged would count as holding nothing)."""


def encode_doc(data: Mapping[str, Any], max_bytes: int | None = None, where: str = "") -> bytes:
    """A document's bytes (indented a little: people read these); DocTooLong past `max_bytes`."""
    encoded = _utf8(json.dumps(data, indent=1, ensure_ascii=False)) + b"\n"
    if max_bytes is not None and len(encoded) > max_bytes:
        raise DocTooLong(f"{where}: {len(encoded):,} bytes are over the {max_bytes:,} a read takes")
    return encoded


def _utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError as exc:
        raise StoreError(
            f"bug: text that is not valid Unicode (at character {exc.start})"
        ) from None
