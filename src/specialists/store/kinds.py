"""Every on-disk format of specialists, declared once: what lives where and what holds what.

A *kind* is a sort of Record (record.py): a directory (its place `where`, a path under
`.specialists/`, or under the user's state directory when it starts with `~/`) holding
documents (`<name>.json`, replaced whole), logs (`<name>.jsonl`, appended), claims (documents
made at most once) and locks. Stores open their records through their kind, so the bounds
declared here are the ones enforced. `<x>` in a name stands for one path component.

Some files are not records: bytes the job pen, the agents or git write (a result text, a
session, a worktree). They are declared as `blobs` so that the inventory is whole; `legacy`
names what older releases wrote and is still read on first touch, never written again.

tests/unit/test_kinds.py runs the stores over a temporary root and finds nothing written
that is not declared here (and the 0.1.0 store fixture holds nothing undeclared either).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from specialists.store.record import MAX_DOC, MAX_LINE, MAX_LOG, FileRecord

KIB, MIB = 1 << 10, 1 << 20


@dataclass(frozen=True)
class File:
    """One file of a kind: its name on disk, what it holds, its schema version and bound."""

    name: str
    what: str
    schema: int | None = None
    bound: str = ""


@dataclass(frozen=True)
class Kind:
    name: str
    where: str
    what: str
    docs: tuple[File, ...] = ()
    logs: tuple[File, ...] = ()
    claims: tuple[File, ...] = ()
    locks: tuple[str, ...] = ("lock",)
    blobs: tuple[File, ...] = ()
    legacy: tuple[File, ...] = ()
    max_doc: int = MAX_DOC
    max_line: int = MAX_LINE
    max_log: int = MAX_LOG
    durable: bool = False  # every write is fsynced (a record that recovery depends on)

    def record(self, path: Path) -> FileRecord:
        """The record of this kind at `path` (or the directory holding such records)."""
        return FileRecord(
            path,
            max_doc=self.max_doc,
            max_line=self.max_line,
            max_log=self.max_log,
            durable=self.durable,
        )

    def patterns(self) -> Iterator[str]:
        """Glob patterns (relative to the state root, `~/` for the user's) of every file."""
        base = _glob(self.where)
        for name in (f.name for f in (*self.docs, *self.logs, *self.claims, *self.blobs)):
            yield f"{base}/{_glob(name)}" if base else _glob(name)
        for name in (*(f.name for f in self.legacy), *self.locks):
            yield f"{base}/{_glob(name)}" if base else _glob(name)


def _glob(text: str) -> str:
    return re.sub(r"<[^>]+>", "*", text)


def doc(name: str, what: str, schema: int | None = None, bound: str = "") -> File:
    return File(name, what, schema, bound)


# --- events ---------------------------------------------------------------------------------

OWNER = Kind(
    "owner",
    "owners/<owner>",
    "what one owner (a job, a Claude Code or pi session, a person) must hear of",
    docs=(doc("cursor.json", "how far the inbox was taken: byte offset, recent ids", None),),
    logs=(
        doc(
            "events.jsonl", "the inbox: one event per line (events/model.py)", None, "64 KiB a line"
        ),
        doc(
            "timers.jsonl", "set / fire / cancel of the owner's timers, folded", None, "32 pending"
        ),
    ),
    blobs=(doc("spill/<label>.txt", "an event body too long for a line (events/spill.py)"),),
    max_log=8 * MIB,
)

# --- the job store ---------------------------------------------------------------------------

JOB = Kind(
    "job",
    "jobs/<id>",
    "one job: written by its supervisor alone, through the pen (store/writer.py)",
    docs=(
        doc(
            "job.json", "the launch record, written once (store/records.py JobRecord)", 1, "32 MiB"
        ),
        doc("status.json", "the current state, replaced on every change (JobStatus)", 1, "1 MiB"),
        doc("proc.json", "a background command's exit summary (features/procs/exit.py)"),
        doc("executor.json", "where the agent runs when not here (executors/job.py)"),
        doc("reattach.json", "the checkpoint a reattaching supervisor resumes from"),
        doc("processes.json", "the job's process tree ledger (store/proctree.py)"),
        doc("workflow-receipt.json", "what a finished workflow leaves (workflows/receipt.py)", 1),
        doc("workflow-result.json", "a workflow's result too big for a line (workflows/engine.py)"),
        doc("control/<request>.json", "a steer, follow-up, abort or stop for the supervisor"),
        doc("evidence/<label>.json", "a gate's evidence (features/gates/evidence.py)", 1),
    ),
    logs=(
        doc(
            "events.jsonl", "the job's events, one per line (store/joblog.py)", None, "2 KB a field"
        ),
    ),
    locks=(),  # the job's lock is a flock on its directory (store/locks.py JobLock)
    blobs=(
        doc("result.txt", "the final answer, written once", None, "64 MiB"),
        doc(".reserve", "disk kept free for the job's last words (store/writer.py)"),
        doc("stderr.log", "the agent's stderr, size-capped"),
        doc("supervisor.log", "the supervisor's own log"),
        doc("output.log", "a background command's merged output (features/procs)"),
        doc("stdout.log", "the command runner's output"),
        doc("session.jsonl", "the agent's own session (pi, native)"),
        doc("system_prompt.md", "pi's system prompt"),
        doc("claude-system-prompt.md", "Claude Code's appended system prompt"),
        doc("codex-output-schema.json", "Codex's output schema"),
        doc("git-hooks/<hook>", "git hooks that keep a job's commits traced (process/jobenv.py)"),
        doc("spill/<label>.txt", "a tool result or body too long to keep inline"),
        doc("answers/<n>.txt", "a job's answers to follow-ups"),
        doc("subscribers/<owner>", "an owner that subscribed to the job's end (empty)"),
        doc("resume.lease", "the lease of a workflow resume (supervise/lease.py)"),
        doc("resume.lock", "the lock of that lease"),
    ),
    max_doc=32 * MIB,
)

JOB_INDEX = Kind(
    "finished-index",
    "jobs",
    "a cache of finished jobs' summaries for `status` (store/index.py); rebuilt when bad",
    locks=(),
    blobs=(doc(".finished.json", "rows of id, status, specialist, times, error, key, title", 2),),
)

ASK = Kind(
    "ask",
    "jobs/<id>/asks/<n>",
    "a question a child asked its supervisor, and how it was settled (features/asks)",
    docs=(doc("ask.json", "the question, written once"),),
    claims=(doc("outcome.json", "the reply or the timeout, whichever came first"),),
    locks=(),
    max_doc=2 * 64 * KIB + 8 * KIB,  # a message JSON-escaped, plus the fields (asks/model.py)
)

WORKFLOW_JOURNAL = Kind(
    "workflow-journal",
    "jobs/<id>",
    "a workflow's journal: fsynced before each child starts (features/workflows/journal.py)",
    logs=(doc("workflow-journal.jsonl", "launch / end / phase / log entries"),),
    max_line=4 * MIB,
    max_log=256 * MIB,
    durable=True,
)

# --- features --------------------------------------------------------------------------------

SCHEDULE = Kind(
    "schedule",
    "schedules/<id>",
    "a recurring launch (features/schedules): what, when, and how firing went",
    docs=(
        doc("definition.json", "what to run and when (rewritten by pause and resume)", 1),
        doc("state.json", "the last slot handled, the next one due, counts", 1),
        doc("runs/<slot>.json", "a receipt per firing: outcome and job", None, "200 kept"),
    ),
    logs=(
        doc("history.jsonl", "one line per slot outcome", None, "500 lines"),
        doc("events.jsonl", "what people did to it (created, paused, ...)", None, "500 lines"),
    ),
    blobs=(doc("fire-<slot>", "the lease of one firing (supervise/start.py's to replace)"),),
    max_log=4 * MIB,
)

MISSION = Kind(
    "mission",
    "missions/<id>",
    "a mission (features/missions): its runs, decisions, artifacts and shared state",
    docs=(
        doc("mission.json", "the mission (codec.py)", 1, "8 MiB"),
        doc("state.json", "the JSON state its workflows share (state.py)", None, "256 KiB"),
    ),
    max_doc=8 * MIB,
)

MISSION_LINKS = Kind(
    "mission-links",
    "missions/.by-job",
    "which mission a job is linked to, so a job's news finds it in one read",
    docs=(doc("<job>.json", '{"mission": id}'),),
    locks=(),
    legacy=(doc("<job>", "0.1.0: the mission id as text"),),
)

MISSION_INDEX = Kind(
    "mission-index",
    "~/missions",
    "pointers to every project's missions for `mission list --global` (missions/index.py)",
    docs=(doc("<project>-<mission>.json", "id, title, status, updated_ms, roots"),),
    locks=(),
    max_doc=64 * KIB,
)

THREAD = Kind(
    "thread",
    "threads/<thread>",
    "a child thread: who spawned it, its reports, and its close (features/threads)",
    docs=(doc("thread.json", "the launch record, written once by the spawner"),),
    logs=(doc("reports.jsonl", "the child's reports, numbered"),),
    claims=(
        doc("closing.json", "the close began: by whom, with which report"),
        doc("closed.json", "the close finished: outcome, branch, diff stat"),
    ),
    blobs=(doc("claude-fork.jsonl", "a copy of the parent's Claude Code session to fork"),),
    legacy=(doc("reports.lock", "0.1.0: the reports' own lock"),),
    max_doc=256 * KIB,
    max_log=64 * MIB,
)

THREADS = Kind(
    "threads",
    "threads",
    "per owner: the lock of a spawn and the journal of failed launches (threads/limits.py)",
    logs=(doc("spawn-<owner>-failures.jsonl", "one line per failed launch (R-H11)"),),
    locks=("lock", "spawn-<owner>.lock"),
    legacy=(doc("spawn-<owner>.launch-failures", "0.1.0: the same lines"),),
)

SANDBOXES = Kind(
    "sandboxes",
    "sandboxes",
    "one document per sandbox: branch, base, origin, squashes (features/sandbox/meta.py)",
    docs=(doc("<id>.json", "the sandbox's record", 1, "256 KiB"),),
    blobs=(doc("<id>/<path>", "the sandbox's git worktree (git's own files)"),),
    legacy=(doc(".lock", "0.1.0: the lock"),),
    max_doc=256 * KIB,
)

HANDOFFS = Kind(
    "handoffs",
    "handoffs",
    "a handoff's manifest: the children's sandboxes and how far each got (sandbox/handoff*)",
    docs=(doc("<id>.json", "the manifest, fsynced: recovery reads it", 1, "4 MiB"),),
    locks=("<id>.lock",),
    blobs=(doc("<id>/<patch>", "a child's captured patch"),),
    max_doc=4 * MIB,
    durable=True,
)

GATE_MEMO = Kind(
    "gate-memo",
    "gates/memo",
    "passing gate results by the hash of what they checked (features/gates/memo.py)",
    docs=(doc("<key>.json", "command, exit code, duration, tail", 1, "64 KiB; 4096 kept"),),
    locks=(),
    max_doc=64 * KIB,
)

REFINEMENT = Kind(
    "refinement",
    "refinements/<agent>",
    "project-local guidance for one agent, with revisions (features/manage/refine.py)",
    logs=(doc("history.jsonl", "saved / rolled back, when, from what"),),
    blobs=(
        doc("current.md", "the guidance in force"),
        doc("revisions/<n>.md", "every revision saved"),
    ),
)

PERSON_FILES = Kind(
    "person-files",
    "",
    "what a person keeps in .specialists/ (read, never written by specialists)",
    locks=(),
    blobs=(
        doc("config.toml", "the project's local config (its old place; see store/paths.py)"),
        doc("workflows/<name>", "a workflow of this checkout (.py, .yaml, .yml, .json)"),
    ),
)

HOOK_CACHES = Kind(
    "hook-caches",
    "hooks",
    "the hooks' own small caches and counters (fronts/hooks)",
    locks=(),
    blobs=(
        doc("<owner>.timers", "when the owner's next timer is due, by its file's stamp"),
        doc("stop-<owner>.json", "how often Stop blocked in this run"),
    ),
)

USER_FILES = Kind(
    "user-state",
    "~",
    "this user's files across projects",
    locks=(),
    blobs=(
        doc("hooks.log", "the hooks' log, rotated (store/logfile.py)"),
        doc("errors.log", "tracebacks of bugs, rotated"),
        doc("health.json", "the doctor's cache"),
    ),
)

BREAKERS = Kind(
    "breakers",
    "~/breakers",
    "a circuit breaker per provider and model, shared by every run (native/breaker.py)",
    docs=(doc("<key>.json", "closed / open / half_open, failures, the last error", 1),),
    locks=("<key>.lock",),
)

KINDS: tuple[Kind, ...] = (
    OWNER,
    JOB,
    JOB_INDEX,
    ASK,
    WORKFLOW_JOURNAL,
    SCHEDULE,
    MISSION,
    MISSION_LINKS,
    MISSION_INDEX,
    THREAD,
    THREADS,
    SANDBOXES,
    HANDOFFS,
    GATE_MEMO,
    REFINEMENT,
    PERSON_FILES,
    HOOK_CACHES,
    USER_FILES,
    BREAKERS,
)


def undeclared(root: Path, *, user: bool = False) -> list[str]:
    """The files under `root` (the state root, or with `user` the user's state directory)
    that no kind declares, relative to it."""
    names = [
        p.relative_to(root).as_posix()
        for p in sorted(root.rglob("*"))
        if p.is_symlink() or not p.is_dir()
    ]
    return undeclared_names(names, user=user)


def undeclared_names(names: list[str], *, user: bool = False) -> list[str]:
    patterns = [p for k in KINDS for p in k.patterns() if p.startswith("~/") == user]
    patterns = [p[2:] if user else p for p in patterns]
    return [n for n in names if not any(fnmatch.fnmatchcase(n, p) for p in patterns)]
