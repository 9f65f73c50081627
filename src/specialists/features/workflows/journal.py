"""The workflow journal: what was launched for which key, and how it ended.

    <workflow job dir>/workflow-journal.jsonl      one JSON object per line, 0600

The engine is its one writer. Each line is appended and fsynced before the child it names is
started, and again when that child ends, so a workflow killed at any instant leaves a journal
that says which keys finished (with their input hash and output) and which child job each
unfinished key was running. It is the log of a Record of kind `workflow-journal`
(store/kinds.py, durable): a line a crash cut short is not read, and closed by the next.

Kinds: `launch` {key, hash, job, attempt}, `end` {key, hash, job, status, output?, error?},
`phase` {name}, `log` {message}. `KeyState` folds them into one entry per key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specialists.features.workflows.results import Launch
from specialists.store.jobs import now_ms
from specialists.store.kinds import WORKFLOW_JOURNAL

JOURNAL = "workflow-journal"
JOURNAL_FILE = "workflow-journal.jsonl"
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
        self.record = WORKFLOW_JOURNAL.record(job_dir)

    def append(self, entry: dict[str, Any]) -> None:
        """One line, fsynced; a full disk is an OSError and leaves no partial line."""
        self.record.append(JOURNAL, entry)


def read_entries(path: Path) -> list[dict[str, Any]]:
    """Every whole line of a journal (none when there is no journal yet). A damaged line is
    skipped: its key is treated as unfinished and re-run."""
    return list(WORKFLOW_JOURNAL.record(path.parent).lines(JOURNAL).entries)


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
        if isinstance(job, str) and job not in state.jobs:
            state.jobs.append(job)
        if kind == "launch":
            state.status = None
            state.agent = e.get("agent") or state.agent
            state.context = str(e.get("context") or state.context)
            state.resolved_context = e.get("resolved_context") or state.resolved_context
            if e.get("keyed") and isinstance(e.get("continues"), str):
                state.resumed_from = e["continues"]
        else:
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


def launch_entry(launch: Launch, h: str, job: str, attempt: int, resolved: str) -> dict[str, Any]:
    """The line a child's launch leaves, written before the child can start."""
    opts = launch.options
    return {
        "e": "launch",
        "key": opts.key,
        "hash": h,
        "job": job,
        "attempt": attempt,
        "agent": opts.agent,
        "context": opts.context,
        "resolved_context": resolved,
        "continues": launch.continue_from,
        "keyed": opts.resume is not None and attempt == 1,
        "node": launch.node,
        "ts": now_ms(),
    }
