"""The job ops that read (base/ops.py): check jobs, read an answer or a job's events, wait,
the catalog. The MCP tools of those names are generated from these (dispatch.py names them
all); `specialists status` and `result` call them and render what they read (cli/cmd_*.py).

A person's answer is the view itself (the command line renders it); a model's is the compact
data below, an orchestrator paying for every byte it reads. A model's refusals say
what to do next with its tools, a person's with the command line.

Nothing here imports `typing` when it runs: a person waits on `status`. The types the
signatures name live in jobshapes.py, read by the schema reader only (`__types__`,
base/opschema.py).
"""

from __future__ import annotations

from operator import attrgetter
from types import SimpleNamespace as Seen  # what a person's `status` is shown, and a person

from specialists.base.display import one_line
from specialists.base.errors import Failed, StoreError
from specialists.store import view

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any  # noqa: I001 (the names below, one paragraph)

    from specialists.fronts.jobshapes import (
        Answer, Brief, CatalogShown, FromSeq, Health, JobRef, JobRefs, Jobs, Limit, Page, Scope,
        SessionStart, Threads, Wait, WaitFor, WaitMode, WaitUpTo,
    )  # fmt: skip
    from specialists.native.agent_tools import Caller
    from specialists.project import Project
    from specialists.store.jobs import JobStore
    from specialists.store.records import JobStatus

HOW_TO = (
    "Dispatch work with run (returns a job id at once) and keep working; read it with "
    "result when its completion is announced. Use status for a single check, feed for "
    "events, steer/follow_up/stop to control a job. Do not poll in a loop."
)


__types__ = "specialists.fronts.jobshapes"  # what the signatures name (base/opschema.py)


# --- what a model reads of a job: only what a decision needs (no ms timestamps, no pids, no
# nulls), long text clipped with its size noted

RECENT_FINISHED = 3
EVENT_FIELD_CHARS = 200
ERROR_CHARS = 300
DOING_CHARS = 80
RESULT_CHARS = 60_000
_DROPPED_EVENT_FIELDS = frozenset({"ts", "id", "specialist", "session_file"})


def clip(text: str, limit: int) -> str:
    """Short fields become one line; long ones (answers) keep their lines, cut at `limit`."""
    if limit <= ERROR_CHARS:
        return one_line(text, limit)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def job_brief(st: JobStatus) -> dict[str, Any]:
    """One job in a few dozen bytes: id, specialist, status, elapsed, and what matters now."""
    out: dict[str, Any] = {
        "id": st.id,
        "specialist": st.specialist,
        "status": st.status,
        "elapsed_s": view.elapsed_s(st),
    }
    now_doing = view.doing(st) if st.status in ("starting", "running") or st.paused_until_ms else ""
    if now_doing:
        out["doing"] = clip(now_doing, DOING_CHARS)
    if view.is_paused(st):
        out["paused"] = True
    if st.stalled:
        out["stalled"] = True
    if st.needs_attention:
        out["needs_attention"] = clip(st.needs_attention, ERROR_CHARS)
    if st.error and st.status != "done":
        out["error"] = clip(st.error, ERROR_CHARS)
    return out


def job_detail(st: JobStatus) -> dict[str, Any]:
    """`job_brief` plus the counters someone looking at one job wants."""
    out = job_brief(st)
    out["events"] = st.events
    if st.tool_calls:
        out["tool_calls"] = st.tool_calls
    if st.model:
        out["model"] = st.model
    if st.cost_usd:
        out["cost_usd"] = round(st.cost_usd, 4)
    if st.parent_id:
        out["continues"] = st.parent_id
    if st.ceilings:  # each spend ceiling it counts against, as last counted
        out["ceilings"] = st.ceilings
    return out


def job_list(statuses: list[JobStatus]) -> dict[str, Any]:
    """Active jobs in full, finished ones as counts plus the few most recent."""
    ordered = sorted(statuses, key=lambda s: s.started_at_ms, reverse=True)
    active = [job_brief(s) for s in ordered if s.active]
    finished = [s for s in ordered if not s.active]
    return {
        "active": active,
        "finished": view.outcome_counts(finished),
        "recent": [job_brief(s) for s in finished[:RECENT_FINISHED]],
    }


def compact_event(event: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in event.items():
        if key in _DROPPED_EVENT_FIELDS or value is None:
            continue
        out[key] = clip(value, EVENT_FIELD_CHARS) if isinstance(value, str) else value
    return out


def bounded_result(text: str, path: object, limit: int = RESULT_CHARS) -> tuple[str, bool]:
    """The result text, or its head plus where the rest is. (text, truncated)."""
    if len(text) <= limit:
        return text, False
    rest = len(text) - limit
    return text[:limit] + f"\n…[{rest} more characters; full text in {path}]", True


def breakers() -> list[dict[str, Any]]:
    """The native providers' circuit breakers, for specialist_status."""
    try:
        from specialists.native.breaker import breaker_health
    except ImportError as exc:
        return [{"key": "?", "state": "unknown", "last_error": f"breakers unavailable: {exc}"}]
    out = []
    for item in breaker_health():
        entry = {"key": str(item.get("key")), "state": str(item.get("state", "?"))}
        if item.get("failures"):
            entry["failures"] = item["failures"]
        if item.get("last_error"):
            entry["last_error"] = clip(str(item["last_error"]), 200)
        out.append(entry)
    return out


def person(project: Project) -> Any:
    """A person at a terminal as the read verbs' caller: a `Caller` would cost `typing` and
    the settings file, which reading a job never needs."""
    return Seen(person=True, warnings=[], jobs=lambda: project.store)


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
    store = caller.jobs()
    if caller.person:  # the view itself (a person's is read from the index: fast at 1,000)
        if job_id is not None:
            return Seen(job=view.current_status(store, store.resolve(job_id)))  # type: ignore[return-value]
        active, finished, problems = view.overview(store)
        active.sort(key=attrgetter("started_at_ms"), reverse=True)
        finished.sort(key=attrgetter("started_at_ms"), reverse=True)
        return Seen(job=None, active=active, finished=finished, problems=problems)  # type: ignore[return-value]

    out: Any = {}
    if job_id:
        out["job"] = job_detail(view.current_status(store, store.resolve(job_id)))
    else:
        statuses, problems = view.all_statuses(store)
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
    store = caller.jobs()
    job = store.resolve(job_id)
    st = view.current_status(store, job)
    if wait:
        st = _waited(store, st, timeout)
    if st.status in ("done", "waiting"):
        answer = answer_of(store, st, whole=caller.person)
        if answer["result"] is not None:
            return answer
    data = {"job_id": job, "status": st.status, "error": st.error}
    if st.active:
        if caller.person:
            hint = f"wait for it: specialists result {job} --wait"
            raise Failed(f"job {job} is {st.status}; no result yet", hint=hint, data=data)

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

    deadline = None if timeout is None else time.monotonic() + timeout
    checked = time.monotonic()
    while st.status in ("starting", "running"):
        if deadline is not None and time.monotonic() >= deadline:
            break
        time.sleep(WAIT_POLL_S)
        if time.monotonic() - checked > HEALTH_CHECK_S:
            st, checked = view.current_status(store, st.id), time.monotonic()
        else:
            st = store.read_status(st.id) or st
    return st


def answer_of(store: JobStore, st: JobStatus, *, whole: bool = False) -> Answer:
    """The job's answer (view.read_answer: which one, and its notice cleared), bounded for
    a model."""
    try:
        text = view.read_answer(store, st)
    except StoreError as exc:
        if whole:  # a person sees the store's own error
            raise
        raise Failed(exc.message, data={"job_id": st.id, "status": st.status}) from None
    out: Answer = {"job_id": st.id, "status": st.status, "result": text}  # type: ignore[typeddict-item]
    if whole:  # a person's `--json` says the job's error too
        out["error"] = st.error
    elif text is not None:
        out["result"], truncated = bounded_result(text, view.answer_path(store, st))
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
    store = caller.jobs()
    job = store.resolve(job_id)
    events = store.read_events(job, from_seq)
    shown = events[:limit]
    next_seq = int(shown[-1].get("seq", from_seq)) + 1 if shown else from_seq
    return {
        "job_id": job,
        "status": view.current_status(store, job).status,  # type: ignore[typeddict-item]
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
    store = caller.jobs()
    st = view.current_status(store, store.resolve(job_id))
    out = job_detail(st)
    if st.status in ("done", "waiting"):
        out["result"] = answer_of(store, st)["result"]  # none when there is none, never an error
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
    from specialists.supervise import waiting

    store = caller.jobs()
    mine = waiting.owned_active
    ids = [store.resolve(r) for r in job_ids] if job_ids else mine(store, caller.owners)
    if not ids:
        return {"ended": [], "running": [], "timed_out": False, "note": "no active jobs"}
    if subscribe:
        posted = [j for j in ids if waiting.subscribe(store, j, caller.owners[0])]
        return {"subscribed": ids, "already_ended": posted}
    outcome = waiting.wait_for_jobs(store, ids, mode, timeout_s, cancelled=caller.cancelled)
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
    from specialists.catalog import load_catalog
    from specialists.features.beads.notes import bd_path

    root = caller.root
    catalog = load_catalog(root)
    statuses, _ = view.all_statuses(caller.jobs())
    return {
        "project_root": str(root),
        "specialists": catalog.names(),
        "load_problems": len(catalog.problems),
        "active_jobs": sum(1 for s in statuses if s.active),
        "beads": bd_path() is not None and (root / ".beads").is_dir(),
        "how_to": HOW_TO,
    }


def list_specialists(caller: Caller, /, *, scope: Scope | None = None) -> CatalogShown:
    """The specialists you can dispatch: name, description, scope (project, user, builtin),
    permission tier, and runner and model when set. Definition files that failed to load
    are listed under problems. Optional scope filter."""
    from specialists.catalog import load_catalog

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
    statuses, problems = view.all_statuses(caller.jobs())
    out: Any = {"breakers": breakers(), "jobs": job_list(statuses)}
    if problems:
        out["problems"] = [clip(p, 300) for p in problems[:5]]
    return out
