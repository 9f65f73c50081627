"""The MCP tools as plain functions: (context, checked arguments) -> a JSON-able dict.

No MCP types here: the table (table.py) names and describes these, the server adapter
(server.py) carries them over the wire. A handler that cannot do what was asked raises a
`SpecialistsError` (usually `ToolFailed`), which becomes a tool error result of one line.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specialists.base.errors import Failed, StoreError, UserError
from specialists.base.owner import NO_OWNER, OWNER_ENV
from specialists.fronts.mcp.inprocess import InProcessJobs
from specialists.fronts.mcp.views import (
    bounded_result,
    breakers,
    clip,
    compact_event,
    job_brief,
    job_detail,
    job_list,
)
from specialists.project import Project
from specialists.store.jobs import JobStore
from specialists.store.records import JobStatus

STOP_WAIT_S = 8.0  # a timed-out synchronous job: how long to wait for it to stop
HOW_TO = (
    "Dispatch work with run (returns a job id at once) and keep working; read it with "
    "result when its completion is announced. Use status for a single check, feed for "
    "events, steer/follow_up/stop to control a job. Do not poll in a loop."
)


ToolFailed = Failed  # a tool could not do what was asked (base/errors.py)


@dataclass
class ServerContext:
    """What handlers share: the project (opened once, at server start) and the server's own
    (synchronous) jobs."""

    project: Project = field(default_factory=Project)
    jobs: InProcessJobs = field(default_factory=InProcessJobs)
    # Warnings the last call produced (a bead that could not be made): shown in its result.
    warnings: list[str] = field(default_factory=list)
    # Whose jobs, timers and events these are (owner.py); found on first use: client_keys().
    owner_keys: tuple[str, ...] = ()
    # `specialists mcp --job <id>`: the server of one job's agent (a thread child of a
    # Claude Code or Codex runner). It acts as that job only and serves only its agent tools.
    job_scope: str | None = None
    # Which of the table's tool sets this server offers: all, core or more (table.TOOLSETS).
    toolset: str = "all"

    def root(self) -> Path:
        return self.project.root

    def keys(self) -> tuple[str, ...]:
        """The client's owner keys: the launcher's (a Claude Code session's id, which it
        exports to its MCP servers, and the agent process above us), else a key for the
        client process that started this server (`mcp-<pid>.<start>`): stable for that
        client's life, shared by a server it restarts, distinct for every other client."""
        if not self.owner_keys and self.job_scope is not None:
            self.owner_keys = (f"job-{self.job_scope}",)
        if not self.owner_keys:
            from specialists.base.owner import process_key

            keys = self.project.owner.keys
            fallback = process_key("mcp", os.getppid())
            self.owner_keys = keys or ((fallback,) if fallback else ("mcp-unknown",))
        return self.owner_keys

    def store(self) -> JobStore:
        return self.project.store


Args = dict[str, Any]


# --- catalog and health ---------------------------------------------------------------------


def specialist_init(ctx: ServerContext, args: Args) -> dict[str, Any]:
    from specialists.catalog import load_catalog
    from specialists.store.view import all_statuses

    root = ctx.root()
    catalog = load_catalog(root)
    statuses, _ = all_statuses(ctx.store())
    return {
        "project_root": str(root),
        "specialists": catalog.names(),
        "load_problems": len(catalog.problems),
        "active_jobs": sum(1 for s in statuses if s.active),
        "beads": shutil.which("bd") is not None and (root / ".beads").is_dir(),
        "how_to": HOW_TO,
    }


def list_specialists(ctx: ServerContext, args: Args) -> dict[str, Any]:
    from specialists.catalog import load_catalog

    catalog = load_catalog(ctx.root())
    scope = args.get("scope")
    entries = []
    for spec in catalog.all():
        if scope and spec.scope != scope:
            continue
        entry: dict[str, Any] = {
            "name": spec.name,
            "description": clip(spec.description, 200),
            "scope": spec.scope,
            "permission": spec.permission,
        }
        if spec.runner:
            entry["runner"] = spec.runner
        if spec.model:
            entry["model"] = spec.model
        entries.append(entry)
    return {
        "specialists": entries,
        "problems": [clip(p.one_line(), 300) for p in catalog.problems[:10]],
    }


def specialist_status(ctx: ServerContext, args: Args) -> dict[str, Any]:
    from specialists.store.view import all_statuses

    statuses, problems = all_statuses(ctx.store())
    out: dict[str, Any] = {"breakers": breakers(), "jobs": job_list(statuses)}
    if problems:
        out["problems"] = [clip(p, 300) for p in problems[:5]]
    return out


# --- dispatch -----------------------------------------------------------------------------------


def _plan(ctx: ServerContext, store: JobStore, args: Args, *, foreground: bool = False) -> Any:
    from specialists.supervise.plan import JobRequest

    for name in ("model", "cwd", "continue_from", "bead"):
        if "\x00" in (args.get(name) or ""):
            raise UserError(f"argument '{name}' contains a NUL byte")
    root = store.root.parent
    cwd = root
    if args.get("cwd"):
        try:
            cwd = Path(args["cwd"]).expanduser()
        except RuntimeError as exc:  # ~user that does not exist
            raise UserError(f"invalid cwd {args['cwd'][:200]!r}: {exc}") from None
        cwd = cwd if cwd.is_absolute() else root / cwd
    timeout_s = args.get("timeout_s")
    request = JobRequest(
        specialist=args["specialist"],
        prompt=args["prompt"],
        cwd=cwd,
        model=args.get("model"),
        timeout_ms=int(timeout_s * 1000) if timeout_s else None,
        continue_from=args.get("continue_from") or None,  # agents send "" for "none"
        bead=args.get("bead"),
        attention_after=args.get("attention_after"),
        watchdog=args.get("watchdog"),
    )
    record = ctx.project.plan(request, foreground=foreground, warnings=ctx.warnings)
    if args.get("max_cost") is not None or args.get("max_tokens") is not None:
        from specialists.features.spend.ceiling import own_ceiling

        record = record.replace(ceiling=own_ceiling(args.get("max_tokens"), args.get("max_cost")))
    if not record.owner and os.environ.get(OWNER_ENV) != NO_OWNER:
        record = record.replace(owner=list(ctx.keys()))  # a client known by its process
    return record


def run(ctx: ServerContext, args: Args) -> dict[str, Any]:
    from specialists.features.missions.launch import (
        Launched,
        check_before_launch,
        choose,
        link_after_launch,
    )
    from specialists.features.threads.sandboxing import launch_in_sandbox  # as `run --sandbox`

    store = ctx.store()
    wanted = args.get("mission")
    mission = choose(
        mission_id=args.get("mission_id"),
        disabled=wanted is False,
        options=True if wanted is True else None,
        default="follow" if args.get("continue_from") else "none",
    )
    check_before_launch(store.root, mission)  # strict: nothing starts for a bad mission_id
    record = _plan(ctx, store, args)
    start = ctx.project.start
    job_id, sandbox = launch_in_sandbox(
        ctx.root(),
        record,
        lambda r: start(r, warnings=ctx.warnings).id,
        wanted=bool(args.get("sandbox")),
    )
    launched = Launched.of(record.replace(id=job_id))
    mission_id = link_after_launch(store.root, mission, launched, ctx.warnings)
    out = {"job_id": job_id, "specialist": record.specialist, "mission_id": mission_id}
    return {**out, "sandbox": sandbox} if sandbox else out


def use_specialist(ctx: ServerContext, args: Args) -> dict[str, Any]:
    store = ctx.store()
    sync_args = {k: v for k, v in args.items() if k != "timeout_s"}
    job_id = ctx.jobs.start(ctx.project, _plan(ctx, store, sync_args, foreground=True))
    timeout = float(args["timeout_s"])
    if not ctx.jobs.wait(job_id, timeout):
        st = _stop_own(ctx, store, job_id)
        raise ToolFailed(
            f"use_specialist timed out after {timeout:g}s; job {job_id} was stopped ({st.status})",
            hint="for longer work use run, which returns at once",
            data={"job_id": job_id, "status": st.status},
        )
    return _final(store, job_id)


def run_parallel(ctx: ServerContext, args: Args) -> dict[str, Any]:
    store = ctx.store()
    records = [_plan(ctx, store, task, foreground=True) for task in args["tasks"]]
    ids = [ctx.jobs.start(ctx.project, record, ctx.warnings) for record in records]
    deadline = time.monotonic() + float(args["timeout_s"])
    out = []
    for job_id in ids:
        if not ctx.jobs.wait(job_id, deadline - time.monotonic()):
            _stop_own(ctx, store, job_id)
        try:
            out.append(_final(store, job_id))
        except ToolFailed as exc:
            out.append({"job_id": job_id, **exc.data, "error": exc.message})
    return {"results": out}


def _stop_own(ctx: ServerContext, store: JobStore, job_id: str) -> JobStatus:
    from specialists.supervise.actions import stop_job

    outcome = stop_job(store, job_id, stop_timeout=STOP_WAIT_S)
    ctx.jobs.wait(job_id, 2.0)
    return outcome.status


def _final(store: JobStore, job_id: str) -> dict[str, Any]:
    """A finished synchronous job as a result, or ToolFailed saying how it ended."""
    from specialists.store.view import current_status

    st = current_status(store, job_id)
    if st.status != "done":
        why = f": {st.error}" if st.error else ""
        raise ToolFailed(
            f"job {job_id} ended {st.status}{why}", data={"job_id": job_id, "status": st.status}
        )
    return _with_result(store, st)


# --- reading jobs -------------------------------------------------------------------------------


def status(ctx: ServerContext, args: Args) -> dict[str, Any]:
    from specialists.store.view import all_statuses, current_status

    store = ctx.store()
    out: dict[str, Any] = {}
    if args.get("job_id"):
        out["job"] = job_detail(current_status(store, store.resolve(args["job_id"])))
    else:
        statuses, problems = all_statuses(store)
        out = job_list(statuses)
        if problems:
            out["problems"] = [clip(p, 300) for p in problems[:5]]
    if args.get("threads"):  # the caller's, with their transports
        from specialists.features.threads.listing import threads_of

        out.update(threads_of(store.root, set(ctx.keys())))
    return out


def result(ctx: ServerContext, args: Args) -> dict[str, Any]:
    from specialists.store.view import current_status

    store = ctx.store()
    job_id = store.resolve(args["job_id"])
    st = current_status(store, job_id)
    if st.status in ("done", "waiting"):
        answer = _with_result(store, st)
        if answer.get("result") is not None:
            return answer
    data = {"job_id": job_id, "status": st.status}
    if st.active:
        brief = job_brief(st)
        doing = f", {brief['doing']}" if "doing" in brief else ""
        raise ToolFailed(
            f"job {job_id} is {st.status} ({brief['elapsed_s']:g}s{doing}); no result yet",
            hint="keep working; its completion will be announced, then call result once",
            data=data,
        )
    why = f": {clip(st.error, 300)}" if st.error else ""
    raise ToolFailed(f"job {job_id} ended {st.status}{why}; it has no result", data=data)


def _with_result(store: JobStore, st: JobStatus) -> dict[str, Any]:
    """The job's answer (view.read_answer: which one, and its notice cleared), bounded."""
    from specialists.store.view import answer_path, read_answer

    try:
        text = read_answer(store, st)
    except StoreError as exc:
        raise ToolFailed(exc.message, data={"job_id": st.id, "status": st.status}) from None
    out: dict[str, Any] = {"job_id": st.id, "status": st.status, "result": None}
    if text is None:
        return out
    shown, truncated = bounded_result(text, answer_path(store, st))
    out["result"] = shown
    if truncated:
        out["truncated"] = True
    return out


def feed(ctx: ServerContext, args: Args) -> dict[str, Any]:
    from specialists.store.view import current_status

    store = ctx.store()
    job_id = store.resolve(args["job_id"])
    from_seq = int(args["from_seq"])
    limit = int(args["limit"])
    events = store.read_events(job_id, from_seq)
    shown = events[:limit]
    next_seq = int(shown[-1].get("seq", from_seq)) + 1 if shown else from_seq
    return {
        "job_id": job_id,
        "status": current_status(store, job_id).status,
        "events": [compact_event(e) for e in shown],
        "next_seq": next_seq,
        "more": len(events) > len(shown),
    }


# --- control ------------------------------------------------------------------------------------


# --- deprecated v2 tools ------------------------------------------------------------------------


def start_specialist(ctx: ServerContext, args: Args) -> dict[str, Any]:
    return run(ctx, args)


def poll_specialist(ctx: ServerContext, args: Args) -> dict[str, Any]:
    from specialists.store.view import current_status

    store = ctx.store()
    st = current_status(store, store.resolve(args["job_id"]))
    out = job_detail(st)
    if st.status in ("done", "waiting"):
        out["result"] = _with_result(store, st)["result"]
    return out
