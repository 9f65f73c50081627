"""spawn_thread: a child job with a parent and a stack, started at once (seed 001 section 5.5).

The checks come before anything is created, in an order a caller can act on: `child_of`
against the caller's real stack (R-H1), the depth cap (R-H9), `depends_on` (R-H6b), the
context (a fork only where the runner can do it honestly), the sandbox's repository (R-S1),
a model outside the scoped model list (R-H13, config.toml `enabled_models`), then the child's
specialist, runner and model (planned, not yet created). Only then are the
id, the sandbox and the job made, in that order; if any step fails, what was made is removed
again: a failed launch leaves no running record and no sandbox (R-H7a).

The child is planned as `specialists run` plans a job and started through the one start
(supervise/start.py), whose supervisor launch the unit tests fake.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from specialists.base.errors import SpecialistsError, UserError
from specialists.base.vocab import FORK_SESSION_OPTION, TIER_POWERS, narrower_tier
from specialists.catalog.config import load_config
from specialists.events.owners import check_owner
from specialists.features.sandbox.backend import Sandbox, SandboxBackend
from specialists.features.threads.closing import settled_view
from specialists.features.threads.forks import (
    fork_pi_session,
    snapshot_claude_session,
)
from specialists.features.threads.limits import check_limits, record_failed_launch
from specialists.features.threads.records import MAX_DEPTH, ThreadRecord, ThreadStore
from specialists.features.threads.state import (
    Position,
    direct_child,
    job_store,
    position_of,
    stack_text,
)
from specialists.features.threads.transports import front_options, transport
from specialists.native.tool_settings import ThreadsSettings
from specialists.store.jobs import JobStore
from specialists.store.records import JobRecord
from specialists.supervise.plan import JobRequest, plan_job
from specialists.supervise.start import start

UNTIERED_RUNNERS = frozenset({"command"})  # runners/command.py: the tier is not applied

DEFAULT_SPECIALIST = "executor"  # a root's child, unless it names one
FRESH_HINT = (
    "pass fresh_context: true with self-contained instructions (the files, the goal, the "
    "constraints: everything the child needs, since it will not see your conversation)"
)


@dataclass(frozen=True)
class SpawnRequest:
    instructions: str
    child_of: tuple[str, ...]
    fresh_context: bool = False
    model: str | None = None
    runner: str | None = None
    specialist: str | None = None
    sandbox: bool = False
    depends_on: tuple[str, ...] = ()
    call_id: str = ""


@dataclass(frozen=True)
class Spawned:
    thread: ThreadRecord
    sandbox: Sandbox | None

    def describe(self) -> str:
        t = self.thread
        lines = [
            f"Thread {t.id} started (job {t.job_id}, {t.runner}, "
            f"{'fresh' if t.fresh_context else 'forked'} context, stack {stack_text(t.stack)})."
        ]
        if self.sandbox is not None:
            lines.append(f"It works in sandbox {self.sandbox.path} on {self.sandbox.branch}.")
        lines.append(
            "Its reports arrive as [specialists event] child_report messages and its end as "
            "one child_closed. End your turn or do independent work; do not poll."
        )
        return " ".join(lines)


# Runners whose session is the agent's own id (its files live in the agent's own home).
AGENT_SESSION_IDS = frozenset({"claude", "codex"})


def session_of(jobs: JobStore, job: JobRecord) -> str | None:
    """The job's agent session to fork: a file (native, pi) that exists, or the agent's own
    session id (claude, codex); None when there is none."""
    status = jobs.read_status(job.id)
    ref = status.session_file if status else None
    if job.runner in AGENT_SESSION_IDS:
        return ref or None
    path = Path(ref) if ref else jobs.job_dir(job.id) / "session.jsonl"
    return str(path) if path.is_file() else None


def check_child_of(position: Position, child_of: tuple[str, ...]) -> None:
    """R-H1, the Infinity guard with our name: a spawn plan inherited from the parent."""
    if tuple(child_of) != position.stack:
        raise UserError(
            f"You are thread {position.thread_id} with stack {stack_text(position.stack)}. "
            f"The spawn plan you inherited belongs to {stack_text(list(child_of))}. Focus on "
            "your own task and do not spawn the parent's threads."
        )


def scoped_override(scope: tuple[str, ...], model: str) -> str:
    """Seed 001 R-H13: under a scoped model list (config.toml `enabled_models`) an explicit
    model must be in it: an exact `provider/model`, or an exact model id that names exactly
    one entry (resolved to that entry). Anything else is refused, naming the allowed ones."""
    if model in scope:
        return model
    same_id = [m for m in scope if m.partition("/")[2] == model]
    if "/" not in model and len(same_id) == 1:
        return same_id[0]
    why = f"matches {len(same_id)} of them" if len(same_id) > 1 else "is not one of them"
    raise UserError(
        f"model {model[:120]!r} {why}; spawn_thread may use only the scoped models "
        f"(enabled_models): {', '.join(scope)}",
        hint="name one of them exactly (provider/model), or leave model out",
    )


def scoped_default(scope: tuple[str, ...], *candidates: str | None) -> str:
    """Without an override: the first candidate that is scoped (the model the child would
    get anyway, then the parent's), else the first scoped model (R-H13)."""
    return next((m for m in candidates if m in scope), scope[0])


def spawn_thread(
    state_root: Path,
    owner: str,
    job_id: str | None,
    cwd: Path,
    request: SpawnRequest,
    *,
    sandboxes: SandboxBackend,
    now_ms: int,
    limits: ThreadsSettings | None = None,
    approve: Callable[[JobRecord, list[str], str], None] | None = None,
) -> Spawned:
    """`approve(parent, its children's specialists, the new one's)` may wait for the owner's
    approval of a costly burst, or refuse it (spend/approval.py); it runs before the spawn
    lock is taken, so a wait holds up no sibling's spawn."""
    position = position_of(state_root, owner, job_id)
    check_child_of(position, request.child_of)
    if len(position.stack) - 1 >= MAX_DEPTH:
        raise UserError(
            f"thread depth limit reached: you are thread {position.thread_id} at depth "
            f"{len(position.stack) - 1}, and threads go at most {MAX_DEPTH} levels below root",
            hint="do this part yourself, or report back to your parent and let it split the work",
        )
    threads, jobs = ThreadStore(state_root), job_store(state_root)
    _check_prerequisites(threads, jobs, owner, request.depends_on)
    parent_job = position.job
    if request.sandbox:
        check_may_sandbox(parent_job)
    runner = request.runner
    session = None if request.fresh_context else _fork_source(position, jobs)
    base, origin = _sandbox_base(sandboxes, position, cwd) if request.sandbox else (None, None)

    specialist = request.specialist or (parent_job.specialist if parent_job else DEFAULT_SPECIALIST)
    scope = load_config(state_root.parent).enabled_models  # R-H13; () when there is none
    override = scoped_override(scope, request.model) if scope and request.model else None
    model = (
        override
        or request.model
        or (
            parent_job.model
            if parent_job
            and (runner or parent_job.runner) == parent_job.runner
            and specialist == parent_job.specialist
            else None
        )
    )
    if approve is not None and parent_job is not None:
        earlier = [_specialist(jobs, t.job_id) for t in threads.children_of(owner)]
        approve(parent_job, earlier, specialist)
    with threads.spawning(check_owner(owner)):  # the limits and the new record: one step
        check_limits(threads, jobs, owner, limits)
        thread_id = threads.reserve()
        sandbox: Sandbox | None = None
        started = False
        try:
            stack = (*position.stack, thread_id)

            def plan() -> JobRecord:
                where = _inside(sandbox, sandboxes, position, cwd)
                fresh = request.fresh_context
                header = task_header(thread_id, stack, position.thread_id, fresh, sandbox)
                text = f"{header}\n\n{request.instructions}"
                # Planned as `specialists run` plans a job; a thread reports to its parent,
                # not to a bead. Its agent CLI is not looked up (that lookup belongs to the
                # interfaces, above the tool table): a missing one ends the child at once,
                # and its parent hears that as a failed child_closed.
                child = JobRequest(specialist, text, where, runner, model, track_bead=False)
                return plan_job(jobs, child)

            if request.sandbox:
                sandbox = sandboxes.create(thread_id, base=base, origin=origin)
            record = within_parent_tier(plan(), parent_job)
            if scope and override is None and record.model not in scope:
                model = scoped_default(scope, parent_job.model if parent_job else None)
                record = within_parent_tier(plan(), parent_job)
            if record.requires_worktree and sandbox is None:  # its definition asks for one
                check_may_sandbox(parent_job)
                base, origin = _sandbox_base(sandboxes, position, cwd)
                sandbox = sandboxes.create(thread_id, base=base, origin=origin)
                record = within_parent_tier(plan(), parent_job)
            where = _inside(sandbox, sandboxes, position, cwd)
            options = front_options(record.runner, dict(record.runner_options))
            if session is not None:
                assert parent_job is not None  # _fork_source refuses a root session
                check_same_runner(parent_job.runner, record.runner)
                if record.runner == "claude":  # a fork of the parent's session as it is now
                    options = {**options, FORK_SESSION_OPTION: True}
                    target = threads.dir(thread_id) / "claude-fork.jsonl"
                    session = str(snapshot_claude_session(session, target, os.environ))
            record = record.replace(
                cwd=str(where),
                owner=[owner],
                parent_id=parent_job.id if parent_job else None,
                resume_session=str(session) if session else None,
                sandbox=sandbox.id if sandbox else None,
                thread={"id": thread_id, "parent": owner, "stack": list(stack)},
                runner_options=options,
            )

            made: list[ThreadRecord] = []

            def created(child: JobRecord) -> None:
                if session is not None and child.runner == "pi":
                    fork_pi_session(Path(child.resume_session or ""), Path(child.cwd), session)
                thread = ThreadRecord(
                    id=thread_id,
                    parent=owner,
                    stack=stack,
                    job_id=child.id,
                    instructions=request.instructions,
                    fresh_context=request.fresh_context,
                    runner=child.runner,
                    created_at_ms=now_ms,
                    sandbox=sandbox.id if sandbox else None,
                    depends_on=request.depends_on,
                    call_id=request.call_id,
                )
                threads.write(thread)  # before its supervisor: it may report at once (R-H4)
                made.append(thread)

            start(jobs, record, created=created, check=False)
            started = True
        except UserError:
            raise  # a refusal (a bad specialist, a fork across runners) is no failed launch
        except BaseException:
            if limits is not None and limits.adaptive_concurrency.enabled:  # R-H11
                record_failed_launch(threads, check_owner(owner), now_ms)
            raise
        finally:
            if not started:
                _undo(threads, thread_id, sandboxes, sandbox)
        return Spawned(made[0], sandbox)


def _specialist(jobs: JobStore, job_id: str | None) -> str:
    try:
        return jobs.read_record(job_id).specialist if job_id else "?"
    except (OSError, SpecialistsError):
        return "?"  # gone (gc) or damaged: estimated as any specialist


def within_parent_tier(record: JobRecord, parent: JobRecord | None) -> JobRecord:
    """A child never gets more than its parent (toolset/tiers.py): its tier is the narrower
    of its own and its parent's, and a runner that applies no tier at all (command) needs a
    parent that may run commands itself. A root session's child (no parent job) keeps its
    own tier: the person chose the specialist."""
    if parent is None:
        return record
    if record.runner in UNTIERED_RUNNERS and "command" not in TIER_POWERS.get(
        parent.permission, frozenset()
    ):
        raise UserError(
            f"a {parent.permission} job cannot spawn a child on the {record.runner} runner, "
            "which runs a command with no permission tier",
            hint="spawn it on an agent runner (pi, claude, codex, native)",
        )
    tier = narrower_tier(record.permission, parent.permission)
    return record if tier == record.permission else record.replace(permission=tier)


def check_may_sandbox(parent: JobRecord | None) -> None:
    """A sandbox is a branch and a worktree made in the user's repository: a job whose tier
    grants neither commands nor writes (READ_ONLY) does not make one."""
    if parent is not None and not TIER_POWERS.get(parent.permission):
        raise UserError(
            f"a {parent.permission} job cannot spawn a sandboxed child: a sandbox is a new "
            "branch and worktree in the repository",
            hint="spawn it without sandbox (and a specialist that needs no worktree)",
        )


def _undo(
    threads: ThreadStore, thread_id: str, sandboxes: SandboxBackend, sandbox: Sandbox | None
) -> None:
    """R-H7a: no thread record, no sandbox (a fresh branch is deleted with it); the start
    removed the job, or ended it with the reason its supervisor could not start."""
    threads.discard(thread_id)
    if sandbox is not None:
        sandboxes.remove(sandbox, keep_branch=False)


def _check_prerequisites(
    threads: ThreadStore, jobs: JobStore, owner: str, depends_on: tuple[str, ...]
) -> None:
    """R-H6b: distinct direct children that finished and did not fail. A guard, not a queue."""
    if len(set(depends_on)) != len(depends_on):
        raise UserError("depends_on lists a thread twice", hint="give each prerequisite once")
    for thread_id in depends_on:
        child = settled_view(threads, jobs, direct_child(threads, jobs, owner, thread_id).record)
        if child.phase != "closed":
            raise UserError(
                f"prerequisite {thread_id} has not finished ({child.phase})",
                hint="wait for its child_closed event, then spawn again",
            )
        if child.failed:
            why = (
                child.closed.error
                if child.closed and child.closed.error
                else child.closed.final
                if child.closed
                else "failed"
            )
            raise UserError(
                f"prerequisite {thread_id} failed ({why})",
                hint="read its child_closed report; fix or redo that part first",
            )


def _fork_source(position: Position, jobs: JobStore) -> str | None:
    """The session a forked child starts from, or a refusal saying to pass fresh_context."""
    job = position.job
    if job is None:
        raise UserError(
            "spawn_thread cannot fork your conversation: this session is not a job of ours, "
            "so there is no copy of it to give the child",
            hint=FRESH_HINT,
        )
    if not transport(job.runner).fork:
        raise UserError(
            f"spawn_thread cannot fork a {job.runner} conversation honestly "
            f"({transport(job.runner).no_fork})",
            hint=FRESH_HINT,
        )
    session = session_of(jobs, job)
    if session is None:
        raise UserError("spawn_thread cannot fork: your session is not recorded", hint=FRESH_HINT)
    return session


def check_same_runner(parent: str, child: str) -> None:
    """A fork gives the child its parent's session: only an agent of the same runner reads
    that session format."""
    if child != parent:
        raise UserError(
            f"spawn_thread cannot fork your {parent} conversation into a {child} child: a "
            f"fork needs the child on your own runner ({parent}), which reads your session",
            hint=f"{FRESH_HINT}; or fork onto runner {parent!r}",
        )


def _sandbox_base(
    sandboxes: SandboxBackend, position: Position, cwd: Path
) -> tuple[Sandbox | None, Path | None]:
    """R-S1: the parent's sandbox branch if it has one, else HEAD of the caller's working copy;
    outside a repository, refused before anything exists."""
    if position.sandbox:
        base = sandboxes.get(position.sandbox)
        if base is None:
            raise UserError(f"your sandbox {position.sandbox} has no record; cannot branch from it")
        return base, None
    repo = sandboxes.detect(cwd)
    if repo is None:
        raise UserError(
            f"sandbox: true needs a git repository, and {cwd} is not in one",
            hint="run from inside a repository, or spawn without a sandbox",
        )
    return None, repo.toplevel


def _inside(
    sandbox: Sandbox | None, sandboxes: SandboxBackend, position: Position, cwd: Path
) -> Path:
    """The child's cwd: the caller's own directory, inside the sandbox when it has one (the
    same place relative to the working copy), else the sandbox's top when that directory
    is not in the branch (an untracked one)."""
    if sandbox is None:
        return cwd
    parent = sandboxes.get(position.sandbox) if position.sandbox else None
    top = parent.path if parent is not None else sandbox.origin
    rel = os.path.relpath(os.path.realpath(cwd), os.path.realpath(top))
    inside = sandbox.path / rel
    if rel.startswith("..") or not inside.is_dir():
        return sandbox.path
    return inside


def task_header(
    thread_id: str,
    stack: tuple[str, ...],
    parent: str,
    fresh: bool,
    sandbox: Sandbox | None,
) -> str:
    """R-H3: who the child is and exactly how it closes."""
    lines = [
        "[specialists thread]",
        f"You are thread {thread_id}, stack {stack_text(stack)}; your parent is {parent}.",
    ]
    if fresh:
        lines.append(
            "Your context is fresh: you have not seen the parent's conversation, and the "
            "instructions below are self-contained."
        )
    else:
        lines.append(
            "Your context is forked: you have a copy of the parent's conversation so far. Only "
            "the instructions below are your task; the parent's plans are not yours to carry out."
        )
    if sandbox is not None:
        lines.append(
            f"You work in a sandbox ({sandbox.path}, branch {sandbox.branch}): your changes "
            "are committed when you close, and reach the parent only if it squashes them."
        )
    lines += [
        "To send progress or partial results, call report_to_parent (report: text, or "
        "structured: {summary, files, tests, blockers, evidence, coverage}).",
        "When you are done, call close_thread once with your final report, then stop. If you "
        "have no tools, end with your report as your final message: it becomes your close.",
        f"To split your own work, call spawn_thread with child_of {stack_text(stack)}.",
        "---",
    ]
    return "\n".join(lines)
