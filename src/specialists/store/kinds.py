"""Every on-disk format of specialists, declared once: what lives where and what holds what.

A *kind* is a sort of Record (record.py): a directory (its place, under `.specialists/`, or
under the user's state directory when it starts with `~/`) holding files of these forms:

    doc     <name>.json, replaced whole (`/1`: its schema version)
    log     <name>.jsonl, appended, with the torn-line rule
    claim   <name>.json, made at most once
    lock    the record's lock, or a named one (<name>.lock)
    blob    bytes that are not a record: a result text, an agent's session, a worktree
    legacy  what an older release wrote: still read on first touch, never written again

Stores open their records through their kind, so the bounds declared here are the ones
enforced. `<x>` in a name stands for any name. tests/unit/test_kinds.py runs the stores over a
temporary root and finds nothing written that is not declared here, and nothing undeclared in
a store written by 0.1.0.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from specialists.base.tuples import NamedTuple
from specialists.store.file_record import FileRecord
from specialists.store.record import MAX_DOC, MAX_LINE, MAX_LOG

KIB, MIB = 1 << 10, 1 << 20
FORMS = ("doc", "log", "claim", "lock", "blob", "legacy")


class File(NamedTuple):
    name: str
    form: str
    what: str
    schema: int | None = None


class Kind(NamedTuple):
    name: str
    where: str
    what: str
    files: tuple[File, ...]
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

    def patterns(self) -> list[str]:
        """Glob patterns of its files, relative to the state root (`~/`: the user's)."""
        base = _glob(self.where)
        return [f"{base}/{_glob(f.name)}" if base else _glob(f.name) for f in self.files]


def kind(table: str, **bounds: int | bool) -> Kind:
    """A kind from its table: `name  where  what it is`, then one file a line, `name
    form[/schema]  what it holds` (`.` is the state root itself)."""
    head, *lines = table.strip().splitlines()
    name, where, what = head.split(maxsplit=2)
    files = []
    for line in lines:
        file, form, text = line.split(maxsplit=2)
        form, _, schema = form.partition("/")
        assert form in FORMS, f"bug: {name}: unknown form {form!r}"
        files.append(File(file, form, text, int(schema) if schema else None))
    where = "" if where == "." else where
    return Kind(name, where, what, tuple(files), **bounds)  # type: ignore[arg-type]


def _glob(text: str) -> str:
    return re.sub(r"<[^>]+>", "*", text)


OWNER = kind(
    """
    owner owners/<owner> what one owner (a job, a session, a person) must hear of (events/)
    events.jsonl          log     the inbox: one event per line (events/model.py)
    cursor.json           doc     how far the inbox was taken: byte offset, recent ids
    control.json          doc     how far a job's supervisor took its control requests
    timers.jsonl          log     set / fire / cancel of the owner's timers, folded, compacted
    lock                  lock    appends, the cursor and timers
    spill/<label>.txt     blob    an event body too long for a line (events/spill.py)
    """,
    max_line=MIB + 8 * KIB,  # a control request (store/control.py) of up to 1 MiB
    max_log=8 * MIB,
)

JOB = kind(
    """
    job jobs/<id> one job: its supervisor alone writes it, through the pen (store/writer.py)
    job.json              doc/1   the launch record, written once (store/records.py), 32 MiB
    status.json           doc/1   the current state, replaced on every change
    events.jsonl          log     the job's events, appended by the pen (store/joblog.py)
    control/<req>.json    legacy  0.1.0: a control request (now an event: store/control.py)
    proc.json             doc     a background command's exit summary (features/procs)
    executor.json         doc     where the agent runs when not here (executors/job.py)
    reattach.json         doc     the checkpoint a reattaching supervisor resumes from
    processes.json        doc     the job's process tree ledger (store/proctree.py)
    workflow-receipt.json doc/1   what a finished workflow leaves (workflows/receipt.py)
    evidence/<label>.json doc/1   a gate's evidence (features/gates/evidence.py)
    workflow-result.json  blob    a workflow's result: any JSON value (workflows/engine.py)
    result.txt            blob    the final answer, written once, 64 MiB
    .reserve              blob    disk kept free for the job's last words (store/writer.py)
    stderr.log            blob    the agent's stderr, size-capped
    supervisor.log        blob    the supervisor's own log
    output.log            blob    a background command's merged output (features/procs)
    stdout.log            blob    the command runner's output
    session.jsonl         blob    the agent's own session (pi, native)
    system_prompt.md      blob    pi's system prompt
    claude-system-prompt.md blob  Claude Code's appended system prompt
    codex-output-schema.json blob Codex's output schema
    git-hooks/<hook>      blob    hooks that keep a job's commits traced (process/jobenv.py)
    spill/<label>.txt     blob    a tool result or body too long to keep inline
    answers/<n>.txt       blob    a job's answers to follow-ups
    subscribers/<owner>   blob    an owner that subscribed to the job's end (empty)
    resume.lease          legacy  a workflow resume's lease before 0.2 (now a start key)
    resume.lock           legacy  the lock of that lease
    """,
    max_doc=32 * MIB,
)

START_KEYS = kind(
    """
    start-keys keys       which job each keyed start made, claimed once (store/keys.py)
    <hash>.json           claim   the key, its job and when (replaced only once that job is free)
    lock                  lock    taking over a free claim
    """,
    max_doc=4 * KIB,
)

FINISHED_INDEX = kind(
    """
    finished-index jobs a cache of finished jobs for `status` (store/index.py); rebuilt when damaged
    .finished.json        blob    rows of id, status, specialist, times, error, key, title
    """
)

ASK = kind(
    """
    ask jobs/<id>/asks/<n> a child's question to its supervisor and how it ended (features/asks)
    ask.json              doc     the question, written once
    outcome.json          claim   the reply, the timeout or the cancel: whichever came first
    """,
    max_doc=2 * 64 * KIB + 8 * KIB,
)

WORKFLOW_JOURNAL = kind(
    """
    workflow-journal jobs/<id> a workflow's journal, fsynced before each child starts
    workflow-journal.jsonl log    launch / end / phase / log entries, one per line
    lock                  lock    appends
    """,
    max_line=4 * MIB,
    max_log=256 * MIB,
    durable=True,
)

SCHEDULE = kind(
    """
    schedule schedules/<id> a recurring launch and how its firing went (features/schedules)
    definition.json       doc/1   what to run and when (rewritten by pause and resume)
    state.json            doc/1   the last slot handled, the next one due, counts
    history.jsonl         log     one line per slot outcome, the last 500 kept
    events.jsonl          log     what people did to it (created, paused, ...), 500 kept
    runs/<slot>.json      doc     a receipt per firing: outcome and job, 200 kept
    fire-<slot>           legacy  a firing's lease before 0.2: read as claimed, then pruned
    lock                  lock    every change
    """,
    max_log=4 * MIB,
)

MISSION = kind(
    """
    mission missions/<id> a mission: runs, decisions, artifacts, shared state (features/missions)
    mission.json          doc/1   the mission (model.py), 8 MiB
    state.json            doc     the JSON state its workflows share (state.py), 256 KiB
    lock                  lock    every change of either
    """,
    max_doc=8 * MIB,
)

MISSION_LINKS = kind(
    """
    mission-links missions/.by-job a job's mission, so that the job's news finds it in one read
    <job>.json            doc     {"mission": id}
    <job>                 legacy  0.1.0: the mission id as text
    """
)

MISSION_INDEX = kind(
    """
    mission-index ~/missions every project's missions, for `mission list --global`
    <project>-<id>.json   doc     id, title, status, updated_ms, its roots
    """,
    max_doc=64 * KIB,
)

THREAD = kind(
    """
    thread threads/<thread> a child thread: who spawned it, its reports, its close
    thread.json           doc     the launch record, written once by the spawner
    reports.jsonl         log     the child's reports, numbered
    closing.json          claim   the close began: by whom, with which report
    closed.json           claim   the close finished: outcome, branch, diff stat
    lock                  lock    numbering the reports
    claude-fork.jsonl     blob    a copy of the parent's Claude Code session to fork
    reports.lock          legacy  0.1.0: the reports' own lock
    """,
    max_doc=256 * KIB,
)

THREADS = kind(
    """
    threads threads each parent's spawn lock and failed launches (threads/limits.py, R-H11)
    spawn-<owner>-failures.jsonl log  one line per failed launch
    spawn-<owner>.lock    lock    one spawn of the parent at a time (R-RLM4)
    lock                  lock    appends
    spawn-<owner>.launch-failures legacy 0.1.0: the same lines
    """
)

SANDBOXES = kind(
    """
    sandboxes sandboxes one record per sandbox: branch, base, origin, squashes (sandbox/meta.py)
    <id>.json             doc/1   the sandbox, 256 KiB
    lock                  lock    a create or a squash at a time
    <id>/<path>           blob    its git worktree
    .lock                 legacy  0.1.0: the lock
    """,
    max_doc=256 * KIB,
)

HANDOFFS = kind(
    """
    handoffs handoffs a handoff's children and how far each got, fsynced: recovery reads it
    <id>.json             doc/1   the manifest, 4 MiB
    <id>.lock             lock    every change of it
    <id>/<patch>          blob    a child's captured patch (git diff --binary)
    """,
    max_doc=4 * MIB,
    durable=True,
)

GATE_MEMO = kind(
    """
    gate-memo gates/memo passing gate results by the hash of what they checked (gates/memo.py)
    <key>.json            doc/1   command, exit code, duration, tail; 4096 kept
    """,
    max_doc=64 * KIB,
)

REFINEMENT = kind(
    """
    refinement refinements/<agent> an agent's project-local guidance, with revisions
    history.jsonl         log     saved / rolled back, when, from what
    lock                  lock    every change
    current.md            blob    the guidance in force
    revisions/<n>.md      blob    every revision saved
    """
)

PERSON_FILES = kind(
    """
    person-files . what a person keeps in .specialists/: read, never written by specialists
    config.toml           blob    the project's local config, at its old place (store/paths.py)
    workflows/<name>      blob    a workflow of this checkout (.py, .yaml, .yml, .json)
    """
)

DEFINITIONS = kind(
    """
    definitions cache     what the YAML definitions parsed to (catalog/files.py); rebuilt when gone
    definitions.json      doc/1   each file's path, its exact text and what that text parsed to
    nodes.json            doc/1   each Node binary's path, size, mtime and version (process/node.py)
    """,
    max_doc=4 * MIB,
)

HOOK_CACHES = kind(
    """
    hook-caches hooks the hooks' own caches and counters (fronts/hooks), written without the store
    <owner>.timers        blob    when the owner's next timer is due, by its file's stamp
    stop-<owner>.json     blob    how often Stop blocked in this run
    """
)

BREAKERS = kind(
    """
    breakers ~/breakers a circuit breaker per provider and model, shared by every run
    <key>.json            doc/1   closed / open / half_open, failures, the last error
    <key>.lock            lock    every change
    """
)

PROVIDER_HOLDS = kind(
    """
    provider-holds holds  launches held until a provider's usage limit resets (usage_limits)
    <provider>.json       doc/1   until when, the job that hit the limit, the line it said
    <provider>.lock       lock    every change
    """,
    max_doc=4 * KIB,
)

FORK_SERVER = kind(
    """
    fork-server run       the project's shared fork server (supervise/shared_forks.py)
    f<key>                blob    its Unix socket while it serves (key: its interpreter, code)
    .                     lock    the directory itself: held by the one server, from its start
    forks.log             blob    the servers' stderr, emptied past 1 MiB
    """
)

USER_FILES = kind(
    """
    user-state ~ this user's files across projects
    hooks.log             blob    the hooks' log, rotated (store/logfile.py)
    errors.log            blob    tracebacks of bugs, rotated
    health.json           blob    the doctor's cache (fronts/cli/health.py)
    """
)

KINDS: tuple[Kind, ...] = (
    START_KEYS,
    OWNER,
    JOB,
    FINISHED_INDEX,
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
    BREAKERS,
    PROVIDER_HOLDS,
    FORK_SERVER,
    USER_FILES,
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
    patterns = [p.removeprefix("~/") for p in patterns]
    return [n for n in names if not any(fnmatch.fnmatchcase(n, p) for p in patterns)]
