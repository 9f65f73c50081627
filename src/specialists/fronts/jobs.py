"""The job ops (base/ops.py): start a specialist, check jobs, read an answer or a job's
events, the catalog. The MCP tools of those names are generated from these; `specialists
status` and `result` call them for what they read and render it (cli/cmd_*.py).

A person's answer is the view itself (the command line renders it); a model's is the compact
data of views.py, an orchestrator paying for every byte it reads. A model's refusals say
what to do next with its tools, a person's with the command line.

Nothing here imports `typing` when it runs: a person waits on `status`. The types the
signatures name live in jobshapes.py, read by the schema reader only (`__types__`,
base/opschema.py).
"""

from __future__ import annotations

from types import SimpleNamespace as Seen  # what a person's `status` is shown, and a person

from specialists.base.errors import Bug, Failed, StoreError, UserError
from specialists.base.ops import Noun, Op

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any  # noqa: I001 (the names below, one paragraph)

    from specialists.fronts.jobshapes import (
        AllWaitS, Answer, Attention, Bead, Brief, CatalogShown, ContinueFrom, Dispatched,
        FromSeq, Health, JobRef, JobRefs, Jobs, Limit, Line, MaxCost, MaxTokens, MissionId,
        Model, Name, Page, Prompt, Scope, SessionStart, Tasks, Threads, Timeout, Wait, WaitFor,
        WaitMode, WaitS, WaitUpTo,
    )  # fmt: skip
    from specialists.native.agent_tools import Caller
    from specialists.project import Project
    from specialists.store.jobs import JobStore
    from specialists.store.records import JobStatus

STOP_WAIT_S = 8.0  # a timed-out synchronous job: how long to wait for it to stop
HOW_TO = (
    "Dispatch work with run (returns a job id at once) and keep working; read it with "
    "result when its completion is announced. Use status for a single check, feed for "
    "events, steer/follow_up/stop to control a job. Do not poll in a loop."
)


__types__ = "specialists.fronts.jobshapes"  # what the signatures name (base/opschema.py)


def person(project: Project) -> Any:
    """A person at a terminal as the read verbs' caller: a `Caller` would cost `typing` and
    the settings file, which reading a job never needs."""
    return Seen(person=True, warnings=[], root=project.root, jobs=lambda: project.store)


# --- dispatch -----------------------------------------------------------------------------


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
    from specialists.features.missions.launch import (
        Launched,
        check_before_launch,
        choose,
        link_after_launch,
    )
    from specialists.features.threads.sandboxing import launch_in_sandbox  # as `run --sandbox`

    project = _front(caller).project
    mission_choice = choose(
        mission_id=mission_id,
        disabled=mission is False,
        options=True if mission is True else None,
        default="follow" if continue_from else "none",
    )
    check_before_launch(project.store.root, mission_choice)  # nothing starts for a bad id
    record = _plan(caller, project, locals())
    if max_cost is not None or max_tokens is not None:
        from specialists.features.spend.ceiling import own_ceiling

        record = record.replace(ceiling=own_ceiling(max_tokens, max_cost))
    job_id, made = launch_in_sandbox(
        project.root,
        record,
        lambda r: project.start(r, warnings=caller.warnings).id,
        wanted=sandbox,
    )
    launched = Launched.of(record.replace(id=job_id))
    linked = link_after_launch(project.store.root, mission_choice, launched, caller.warnings)
    out: Dispatched = {"job_id": job_id, "specialist": record.specialist, "mission_id": linked}
    if made:
        out["sandbox"] = made  # type: ignore[typeddict-item]
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
    return _answer(store, st)


# --- reading jobs -------------------------------------------------------------------------


def status(caller: Caller, job_id: JobRef | None = None, /, *, threads: Threads = False) -> Jobs:
    """Check jobs once. With job_id: that job (status, elapsed_s, what it is doing, error).
    Without: active jobs, counts of finished ones and the few most recent. Statuses:
    starting, running, waiting (idle, takes follow_up), done, error, cancelled. With
    threads: true, also your child threads (spawn_thread): phase, runner, and its transport
    with what it supports (tools, fork, messages). Do not call this in a loop to wait:
    dispatch, keep working, and call result when the job's end is announced.

    Args:
        job_id: job id (8 hex characters) or a unique prefix
        threads: also list your child threads, each with its transport
    """
    from specialists.store.view import all_statuses, current_status

    store = caller.jobs()
    if caller.person:  # the view itself (a person's is read from the index: fast at 1,000)
        if job_id is not None:
            return Seen(job=current_status(store, store.resolve(job_id)))  # type: ignore[return-value]
        from operator import attrgetter

        from specialists.store.view import overview

        active, finished, problems = overview(store)
        active.sort(key=attrgetter("started_at_ms"), reverse=True)
        finished.sort(key=attrgetter("started_at_ms"), reverse=True)
        return Seen(job=None, active=active, finished=finished, problems=problems)  # type: ignore[return-value]
    from specialists.fronts.mcp.views import clip, job_detail, job_list

    out: Any = {}
    if job_id:
        out["job"] = job_detail(current_status(store, store.resolve(job_id)))
    else:
        statuses, problems = all_statuses(store)
        out = job_list(statuses)
        if problems:
            out["problems"] = [clip(p, 300) for p in problems[:5]]
    if threads:  # the caller's, with their transports
        from specialists.features.threads.listing import threads_of

        out.update(threads_of(store.root, set(caller.owners)))
    return out


def result(
    caller: Caller,
    job_id: JobRef,
    /,
    *,
    wait: Wait = False,
    timeout: WaitFor = None,
) -> Answer:
    """The final answer of a finished job (or the latest answer of a job waiting for
    follow-ups). Call it once, after the job's end is announced or status shows done. If the
    job is still running you get an error saying so: keep working instead of retrying. Do
    not poll in a loop. Very long answers are clipped, with the path of the full text.

    A person's answer is whole (its `truncated` never set), and a person's refusal carries
    what a `--json` shows of the job (its status and error).

    Args:
        job_id: job id (8 hex characters) or a unique prefix
        wait: wait for the job to end
        timeout: at most this many seconds (default: forever)
    """
    from specialists.store.view import current_status

    store = caller.jobs()
    job = store.resolve(job_id)
    st = current_status(store, job)
    if wait:
        st = _waited(store, st, timeout)
    if st.status in ("done", "waiting"):
        answer = _answer(store, st, whole=caller.person)
        if answer["result"] is not None:
            return answer
    data = {"job_id": job, "status": st.status, "error": st.error}
    if st.active:
        if caller.person:
            hint = f"wait for it: specialists result {job} --wait"
            raise Failed(f"job {job} is {st.status}; no result yet", hint=hint, data=data)
        from specialists.fronts.mcp.views import job_brief

        brief = job_brief(st)
        doing = f", {brief['doing']}" if "doing" in brief else ""
        raise Failed(
            f"job {job} is {st.status} ({brief['elapsed_s']:g}s{doing}); no result yet",
            hint="keep working; its completion will be announced, then call result once",
            data={"job_id": job, "status": st.status},
        )
    from specialists.base.display import display_line, one_line

    shown = display_line if caller.person else one_line
    why = f": {shown(st.error, 300)}" if st.error else ""
    see = f"see: specialists feed --job {job}" if caller.person else None
    data = data if caller.person else {"job_id": job, "status": st.status}
    raise Failed(f"job {job} ended {st.status}{why}; it has no result", hint=see, data=data)


WAIT_POLL_S = 0.05
HEALTH_CHECK_S = 1.0  # how often a wait re-checks that the supervisor is alive


def _waited(store: JobStore, st: JobStatus, timeout: float | None) -> JobStatus:
    """The job's status once it ended (or is waiting), or when `timeout` seconds passed."""
    import time

    from specialists.store.view import current_status

    deadline = None if timeout is None else time.monotonic() + timeout
    checked = time.monotonic()
    while st.status in ("starting", "running"):
        if deadline is not None and time.monotonic() >= deadline:
            break
        time.sleep(WAIT_POLL_S)
        if time.monotonic() - checked > HEALTH_CHECK_S:
            st, checked = current_status(store, st.id), time.monotonic()
        else:
            st = store.read_status(st.id) or st
    return st


def _answer(store: JobStore, st: JobStatus, *, whole: bool = False) -> Answer:
    """The job's answer (view.read_answer: which one, and its notice cleared), bounded for
    a model."""
    from specialists.store.view import answer_path, read_answer

    try:
        text = read_answer(store, st)
    except StoreError as exc:
        if whole:  # a person sees the store's own error
            raise
        raise Failed(exc.message, data={"job_id": st.id, "status": st.status}) from None
    out: Answer = {"job_id": st.id, "status": st.status, "result": text}  # type: ignore[typeddict-item]
    if whole:  # a person's `--json` says the job's error too
        out["error"] = st.error
    elif text is not None:
        from specialists.fronts.mcp.views import bounded_result

        out["result"], truncated = bounded_result(text, answer_path(store, st))
        if truncated:
            out["truncated"] = True
    return out


def feed(caller: Caller, job_id: JobRef, /, *, from_seq: FromSeq = 1, limit: Limit = 50) -> Page:
    """A job's events from sequence number from_seq (default 1), at most limit (default 50,
    max 200): tool calls, turns, steering acks, errors. Returns events and next_seq to
    continue from. For diagnosing a stuck or failing job, not for waiting on one. Do not
    poll in a loop.

    Args:
        job_id: job id (8 hex characters) or a unique prefix
        from_seq: first event sequence number to return
        limit: most events to return
    """
    from specialists.fronts.mcp.views import compact_event
    from specialists.store.view import current_status

    store = caller.jobs()
    job = store.resolve(job_id)
    events = store.read_events(job, from_seq)
    shown = events[:limit]
    next_seq = int(shown[-1].get("seq", from_seq)) + 1 if shown else from_seq
    return {
        "job_id": job,
        "status": current_status(store, job).status,  # type: ignore[typeddict-item]
        "events": [compact_event(e) for e in shown],  # type: ignore[misc]
        "next_seq": next_seq,
        "more": len(events) > len(shown),
    }


def poll_specialist(caller: Caller, job_id: JobRef, /) -> Brief:
    """DEPRECATED: use status for one check and result for the answer. Returns a job's
    status, plus its result when done. Do not poll in a loop. Dispatch, keep working, and
    read the result once when the job's end is announced.

    Args:
        job_id: job id (8 hex characters) or a unique prefix
    """
    from specialists.fronts.mcp.views import job_detail
    from specialists.store.view import current_status

    store = caller.jobs()
    st = current_status(store, store.resolve(job_id))
    out = job_detail(st)
    if st.status in ("done", "waiting"):
        out["result"] = _answer(store, st)["result"]  # none when there is none, never an error
    return out  # type: ignore[return-value]


def wait(
    caller: Caller,
    /,
    *,
    job_ids: JobRefs = None,
    mode: WaitMode = "all",
    timeout_s: WaitUpTo = 60.0,
    subscribe: bool = False,
) -> Any:
    """Wait for jobs to end: mode next (the first of them) or all (default), bounded by
    timeout_s (default 60, at most 300); job_ids defaults to your active jobs. Returns the
    ended jobs with their status and the ones still running. Use it when you have nothing
    else to do; otherwise pass subscribe=true: it returns at once and each job's completion
    event arrives in your inbox as a [specialists event] message. Do not poll in a loop.
    """
    from specialists.supervise.waiting import owned_active, wait_for_jobs
    from specialists.supervise.waiting import subscribe as subscribe_to

    store = caller.jobs()
    ids = [store.resolve(r) for r in job_ids] if job_ids else owned_active(store, caller.owners)
    if not ids:
        return {"ended": [], "running": [], "timed_out": False, "note": "no active jobs"}
    if subscribe:
        posted = [j for j in ids if subscribe_to(store, j, caller.owners[0])]
        return {"subscribed": ids, "already_ended": posted}
    outcome = wait_for_jobs(store, ids, mode, timeout_s, cancelled=caller.cancelled)
    return {
        "ended": [{"job_id": s.id, "status": s.status, "error": s.error} for s in outcome.ended],
        "running": list(outcome.running),
        "timed_out": outcome.timed_out,
        "waited_s": outcome.waited_s,
    }


# --- the catalog and health ---------------------------------------------------------------


def specialist_init(caller: Caller, /) -> SessionStart:
    """SessionStart start: the project root, the specialists available here, how many jobs are
    active, whether beads (bd) is set up, and how to use these tools. Call once per session.
    """
    import shutil

    from specialists.catalog import load_catalog
    from specialists.store.view import all_statuses

    root = caller.root
    catalog = load_catalog(root)
    statuses, _ = all_statuses(caller.jobs())
    return {
        "project_root": str(root),
        "specialists": catalog.names(),
        "load_problems": len(catalog.problems),
        "active_jobs": sum(1 for s in statuses if s.active),
        "beads": shutil.which("bd") is not None and (root / ".beads").is_dir(),
        "how_to": HOW_TO,
    }


def list_specialists(caller: Caller, /, *, scope: Scope | None = None) -> CatalogShown:
    """The specialists you can dispatch: name, description, scope (project, user, builtin),
    permission tier, and runner and model when set. Definition files that failed to load
    are listed under problems. Optional scope filter."""
    from specialists.catalog import load_catalog
    from specialists.fronts.mcp.views import clip

    catalog = load_catalog(caller.root)
    entries: list[Any] = []
    for spec in catalog.all():
        if scope and spec.scope != scope:
            continue
        entry = {
            "name": spec.name,
            "description": clip(spec.description, 200),
            "scope": spec.scope,
            "permission": spec.permission,
        }
        entry |= {"runner": spec.runner} if spec.runner else {}
        entries.append(entry | ({"model": spec.model} if spec.model else {}))
    return {
        "specialists": entries,
        "problems": [clip(p.one_line(), 300) for p in catalog.problems[:10]],
    }


def specialist_status(caller: Caller, /) -> Health:
    """Health: circuit-breaker state per provider/model (closed is healthy; open means
    recent failures, calls refused until a cooldown passes) and the jobs (active ones,
    counts and the most recent finished). One check: Do not poll in a loop."""
    from specialists.fronts.mcp.views import breakers, clip, job_list
    from specialists.store.view import all_statuses

    statuses, problems = all_statuses(caller.jobs())
    out: Any = {"breakers": breakers(), "jobs": job_list(statuses)}
    if problems:
        out["problems"] = [clip(p, 300) for p in problems[:5]]
    return out


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
        Op(status, tool="status", reads=True, core=True, cli=False),
        Op(result, tool="result", reads=True, core=True, cli=False),
        Op(feed, tool="feed", reads=True, cli=False),
        Op(specialist_init, tool="specialist_init", reads=True, cli=False),
        Op(list_specialists, tool="list_specialists", reads=True, core=True, cli=False),
        Op(specialist_status, tool="specialist_status", reads=True, cli=False),
        Op(use_specialist, tool="use_specialist", cli=False),
        Op(run, tool="start_specialist", about=START, cli=False),
        Op(poll_specialist, tool="poll_specialist", reads=True, cli=False),
        Op(run_parallel, tool="run_parallel", cli=False),
        Op(wait, tool="wait", cli=False),  # subscribe writes
    ),
)
DEPRECATED = frozenset({"start_specialist", "poll_specialist", "run_parallel"})
