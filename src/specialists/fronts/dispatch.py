"""The job ops that start specialists for an MCP client (base/ops.py): `run`, and the
synchronous `use_specialist` and `run_parallel`, whose jobs the server runs itself and stops
when it ends. JOBS names every job tool, these and the reading ones (jobs.py).
"""

from __future__ import annotations

from specialists.base.errors import Bug, Failed, UserError
from specialists.base.ops import Noun, Op
from specialists.fronts import jobs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from specialists.fronts.jobshapes import (
        AllWaitS,
        Answer,
        Attention,
        Bead,
        ContinueFrom,
        Dispatched,
        Line,
        MaxCost,
        MaxTokens,
        MissionId,
        Model,
        Name,
        Prompt,
        Tasks,
        Timeout,
        WaitS,
    )  # fmt: skip
    from specialists.native.agent_tools import Caller
    from specialists.project import Project
    from specialists.store.jobs import JobStore
    from specialists.store.records import JobStatus

__types__ = "specialists.fronts.jobshapes"  # what the signatures name (base/opschema.py)
STOP_WAIT_S = 8.0  # a timed-out synchronous job: how long to wait for it to stop


def run(
    caller: Caller,
    /,
    *,
    specialist: Name,
    prompt: Prompt,
    model: Model = None,
    cwd: Line = None,
    timeout_s: Timeout = None,
    continue_from: ContinueFrom = None,
    bead: Bead = None,
    sandbox: bool = False,
    mission: bool | None = None,
    mission_id: MissionId = None,
    attention_after: Attention = None,
    watchdog: bool | None = None,
    max_cost: MaxCost = None,
    max_tokens: MaxTokens = None,
) -> Dispatched:
    """Start a specialist (a named coding agent: reviewer, debugger, explorer, ...) on a
    task in the background. Returns {job_id} at once; the job runs under its own supervisor
    and outlives this server. After dispatching, KEEP WORKING on something else: you are
    told when the job ends; then call result once. Do not poll in a loop. The prompt is the
    whole task (the specialist sees nothing else of this conversation): say what to do,
    where, and what the answer must contain. Optional: model overrides the specialist's
    model, cwd the working directory, timeout_s a time limit, continue_from a finished job
    whose session to continue, sandbox: true a new git worktree (merge it later: specialists
    sandboxes squash). Names: list_specialists. mission_id links the run to a mission
    (recover it after compaction with the mission tool); mission: true makes a new one for
    it.

    Args:
        specialist: specialist name (see list_specialists)
        prompt: the whole task: what to do, where, what the answer must contain
        model: override the specialist's model, e.g. anthropic/claude-sonnet-4-5
        cwd: working directory (relative paths are under the project root)
        timeout_s: time limit for the job
        continue_from: a finished job id whose agent session to continue
        bead: run this beads issue as the task (its blockers as context)
        sandbox: run in a new git worktree on a sandbox-<id> branch
        mission: true: a new mission for this run
        mission_id: attach to this existing mission (strict)
        attention_after: tell you when the job shows no activity this long: 30s, 5m, 1h;
            off for never
        watchdog: have each turn's change to the working tree reviewed (a child job)
        max_cost: US dollars, tree
        max_tokens: input+output tokens, tree
    """
    from specialists.features.missions.launch import choose
    from specialists.features.spend.ceiling import own_ceiling
    from specialists.fronts.starting import Wishes, start_run

    project = _front(caller).project
    wishes = Wishes(
        sandbox=sandbox,
        mission=choose(
            mission_id=mission_id,
            disabled=mission is False,
            options=True if mission is True else None,
            default="follow" if continue_from else "none",
        ),
        limits=own_ceiling(max_tokens, max_cost),
    )
    task = locals()
    started = start_run(
        project,
        lambda: _plan(caller, project, task),
        wishes,
        lambda record: project.start(record, warnings=caller.warnings),
        caller.warnings,
    )
    out: Dispatched = {
        "job_id": started.job.id,
        "specialist": started.record.specialist,
        "mission_id": started.mission_id,
    }
    if started.sandbox:
        out["sandbox"] = started.sandbox  # type: ignore[typeddict-item]
    return out


def use_specialist(
    caller: Caller,
    /,
    *,
    specialist: Name,
    prompt: Prompt,
    model: Model = None,
    cwd: Line = None,
    attention_after: Attention = None,
    watchdog: bool | None = None,
    timeout_s: WaitS = 120,
) -> Answer:
    """Run a specialist synchronously and wait for its answer (up to timeout_s, default
    120). Only for quick tasks (well under a minute): you are blocked while it runs. On
    timeout the job is stopped and an error is returned. For anything longer use run, which
    returns at once so you can keep working. Jobs started here end if this server is
    terminated.

    Args:
        specialist: specialist name (see list_specialists)
        prompt: the whole task: what to do, where, what the answer must contain
        model: override the specialist's model, e.g. anthropic/claude-sonnet-4-5
        cwd: working directory (relative paths are under the project root)
        attention_after: tell you when the job shows no activity this long: 30s, 5m, 1h;
            off for never
        watchdog: have each turn's change to the working tree reviewed (a child job)
        timeout_s: seconds to wait before stopping it
    """
    project, own = _front(caller).project, _front(caller).jobs
    record = _plan(caller, project, locals(), foreground=True)
    job_id = own.start(project, record)
    if not own.wait(job_id, float(timeout_s)):
        st = _stop_own(caller, job_id)
        raise Failed(
            f"use_specialist timed out after {timeout_s:g}s; job {job_id} was stopped "
            f"({st.status})",
            hint="for longer work use run, which returns at once",
            data={"job_id": job_id, "status": st.status},
        )
    return _final(project.store, job_id)


def run_parallel(caller: Caller, /, *, tasks: Tasks, timeout_s: AllWaitS = 300) -> Any:
    """DEPRECATED: call run once per task instead (each returns at once) and keep working.
    Starts up to 8 specialists together and waits for all of them up to timeout_s (default
    300), blocking you meanwhile; jobs still running then are stopped. Returns one entry per
    task: job_id, status, result or error.

    Args:
        timeout_s: seconds to wait for all of them
    """
    import time

    project, own = _front(caller).project, _front(caller).jobs
    records = [_plan(caller, project, task, foreground=True) for task in tasks]
    ids = [own.start(project, record, caller.warnings) for record in records]
    deadline = time.monotonic() + float(timeout_s)
    out: list[Any] = []
    for job_id in ids:
        if not own.wait(job_id, deadline - time.monotonic()):
            _stop_own(caller, job_id)
        try:
            out.append(_final(project.store, job_id))
        except Failed as exc:
            out.append({"job_id": job_id, **exc.data, "error": exc.message})
    return {"results": out}


def _front(caller: Caller) -> Any:
    """The MCP server a client calls: its project (opened once, at its start) and the jobs
    it runs itself, which end with it (fronts/mcp/inprocess.py)."""
    front = getattr(caller, "front", None)
    if front is None:
        raise Bug("the job ops start jobs for an MCP server's client only")
    return front


def _plan(caller: Caller, project: Project, task: Any, *, foreground: bool = False) -> Any:
    """The launch record of a model's task (an op's arguments, by name: supervise/plan.py),
    owned by the caller."""
    import os
    from pathlib import Path

    from specialists.base.owner import NO_OWNER, OWNER_ENV
    from specialists.supervise.plan import JobRequest

    for name in ("model", "cwd", "continue_from", "bead"):
        if "\x00" in (task.get(name) or ""):
            raise UserError(f"argument '{name}' contains a NUL byte")
    cwd = project.root
    if task.get("cwd"):
        try:
            cwd = Path(task["cwd"]).expanduser()
        except RuntimeError as exc:  # ~user that does not exist
            raise UserError(f"invalid cwd {task['cwd'][:200]!r}: {exc}") from None
        cwd = cwd if cwd.is_absolute() else project.root / cwd
    timeout_s = None if foreground else task.get("timeout_s")  # a synchronous one waits
    request = JobRequest(
        specialist=task["specialist"],
        prompt=task["prompt"],
        cwd=cwd,
        model=task.get("model"),
        timeout_ms=int(timeout_s * 1000) if timeout_s else None,
        continue_from=task.get("continue_from") or None,  # agents send "" for "none"
        bead=task.get("bead"),
        attention_after=task.get("attention_after"),
        watchdog=task.get("watchdog"),
    )
    record = project.plan(request, foreground=foreground, warnings=caller.warnings)
    if not record.owner and os.environ.get(OWNER_ENV) != NO_OWNER:
        record = record.replace(owner=list(caller.owners))  # a client known by its process
    return record


def _stop_own(caller: Caller, job_id: str) -> JobStatus:
    from specialists.supervise.actions import stop_job

    outcome = stop_job(_front(caller).project.store, job_id, stop_timeout=STOP_WAIT_S)
    _front(caller).jobs.wait(job_id, 2.0)
    return outcome.status


def _final(store: JobStore, job_id: str) -> Answer:
    """A finished synchronous job as an answer, or Failed saying how it ended."""
    from specialists.store.view import current_status

    st = current_status(store, job_id)
    if st.status != "done":
        why = f": {st.error}" if st.error else ""
        raise Failed(
            f"job {job_id} ended {st.status}{why}", data={"job_id": job_id, "status": st.status}
        )
    return jobs.answer_of(store, st)


START = (
    "DEPRECATED: use run (same arguments and result). Starts a specialist in the background "
    "and returns {job_id} at once. Keep working; call result when the job's end is announced. "
    "Do not poll in a loop."
)

# The MCP server's job tools, in the order tools/list names them; `status` and `result`
# are a person's commands too, with parsers of their own (cli/cmd_status.py, cmd_result.py).
JOBS = Noun(
    "jobs",
    "start and read jobs",
    (
        Op(run, tool="run", core=True, cli=False),
        Op(jobs.status, tool="status", reads=True, core=True, cli=False),
        Op(jobs.result, tool="result", reads=True, core=True, cli=False),
        Op(jobs.feed, tool="feed", reads=True, cli=False),
        Op(jobs.specialist_init, tool="specialist_init", reads=True, cli=False),
        Op(jobs.list_specialists, tool="list_specialists", reads=True, core=True, cli=False),
        Op(jobs.specialist_status, tool="specialist_status", reads=True, cli=False),
        Op(use_specialist, tool="use_specialist", cli=False),
        Op(run, tool="start_specialist", about=START, cli=False),
        Op(jobs.poll_specialist, tool="poll_specialist", reads=True, cli=False),
        Op(run_parallel, tool="run_parallel", cli=False),
        Op(jobs.wait, tool="wait", cli=False),  # subscribe writes
    ),
)
