"""The workflow journal: what was launched for which key, and how it ended.

    <workflow job dir>/workflow-journal.jsonl      one JSON object per line, 0600

The engine is its one writer. Each line is appended and fsynced before the child it names is
started, and again when that child ends, so a workflow killed at any instant leaves a journal
that says which keys finished (with their input hash and output) and which child job each
unfinished key was running. A line a crash cut short (no newline) is ignored on reading.

Kinds: `launch` {key, hash, job, attempt}, `end` {key, hash, job, status, output?, error?},
`phase` {name}, `log` {message}. `KeyState` folds them into one entry per key.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specialists.base.errors import StoreError

JOURNAL_FILE = "workflow-journal.jsonl"
MAX_JOURNAL_BYTES = 256 * 1024 * 1024
MAX_INLINE_OUTPUT = 16 * 1024  # longer outputs stay in the child's result.txt (referenced)


@dataclass
class KeyState:
    """One key, as the journal last saw it."""

    key: str
    hash: str
    jobs: list[str] = field(default_factory=list)  # every child job of the key, in order
    status: str | None = None  # None: launched, not ended (the engine died, or it runs)
    output: str | None = None
    output_ref: str | None = None
    error: str | None = None
    agent: str | None = None
    context: str = "fresh"
    resolved_context: str | None = None
    resumed_from: str | None = None  # a job of another workflow this key continued
    output_file: str | None = None  # where its answer was written (the `output` option)

    @property
    def job(self) -> str | None:
        return self.jobs[-1] if self.jobs else None

    @property
    def done(self) -> bool:
        return self.status == "done"


class Journal:
    def __init__(self, job_dir: Path) -> None:
        self.path = job_dir / JOURNAL_FILE
        self._fd: int | None = None

    def append(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"
        if self._fd is None:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            self._fd = os.open(self.path, flags, 0o600)
        data = line.encode("utf-8")
        written = os.write(self._fd, data)
        if written != len(data):  # a full disk mid-line: the reader drops the torn line
            raise StoreError(f"the workflow journal {self.path} is full (short write)")
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def read_entries(path: Path) -> list[dict[str, Any]]:
    """Every whole line of a journal (none when there is no journal yet)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StoreError(f"cannot read the workflow journal {path}: {exc.strerror}") from None
    try:
        if not _is_regular(fd):
            raise StoreError(f"the workflow journal {path} is not a regular file")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_JOURNAL_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_JOURNAL_BYTES:
        raise StoreError(f"the workflow journal {path} is over 256 MiB")
    entries = []
    for line in data.split(b"\n")[:-1]:  # the part after the last newline is torn or empty
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # a damaged line: its key is treated as unfinished and re-run
        if isinstance(obj, dict):
            entries.append(obj)
    return entries


def _is_regular(fd: int) -> bool:
    import stat

    return stat.S_ISREG(os.fstat(fd).st_mode)


def fold(entries: list[dict[str, Any]]) -> dict[str, KeyState]:
    """key -> its state after every entry, in journal order."""
    keys: dict[str, KeyState] = {}
    for e in entries:
        key, kind = e.get("key"), e.get("e")
        if not isinstance(key, str) or kind not in ("launch", "end"):
            continue
        h = str(e.get("hash", ""))
        state = keys.get(key)
        if state is None or (kind == "launch" and state.hash != h):
            state = keys[key] = KeyState(key, h)
        job = e.get("job")
        if kind == "launch":
            if isinstance(job, str) and job not in state.jobs:
                state.jobs.append(job)
            state.status = None
            state.agent = e.get("agent") or state.agent
            state.context = str(e.get("context") or state.context)
            state.resolved_context = e.get("resolved_context") or state.resolved_context
            if e.get("keyed") and isinstance(e.get("continues"), str):
                state.resumed_from = e["continues"]
        else:
            if isinstance(job, str) and job not in state.jobs:
                state.jobs.append(job)
            if state.agent is None:  # no launch entry here: a child a resume adopted
                state.agent = e.get("agent")
                state.context = str(e.get("context") or state.context)
            state.status = str(e.get("status"))
            state.output = e.get("output")
            state.output_ref = e.get("output_ref")
            state.error = e.get("error")
            state.output_file = e.get("output_file")
    return keys


def output_fields(output: str, ref: str) -> dict[str, Any]:
    """The output inline when short, else only its reference (the child's result.txt)."""
    if len(output.encode("utf-8", "replace")) <= MAX_INLINE_OUTPUT:
        return {"output": output, "output_ref": ref}
    return {"output_ref": ref}
