"""The merge queue's operations, as the CLI (`specialists merge`), the MCP server and the
agent tool (`merge_queue`) call them: check, start, advance, land, cancel (queue.py has the
record and the state machine)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from specialists.base.errors import SpecialistsError, StoreError, UserError
from specialists.features.sandbox import queue_git as qgit
from specialists.features.sandbox.backend import SandboxError, SquashOutcome
from specialists.features.sandbox.queue import (
    MAX_MEMBERS,
    QUEUE_END,
    Candidate,
    Member,
    Queue,
    Queues,
    new_queue_id,
    ordered,
    overlaps,
    queue_of_sandbox,
    target_of,
)
from specialists.features.sandbox.queue_driver import Driver


def _backend(state_root: Path) -> Any:
    from specialists.features.sandbox.git import GitSandbox

    gs = GitSandbox(state_root.parent)
    if gs.detect(gs.project) is None:
        raise UserError(f"{gs.project} is not in a git repository; it has no sandboxes")
    return gs


# --- members ---------------------------------------------------------------------------------


def candidates(state_root: Path, refs: Sequence[str], parent: str | None) -> list[Candidate]:
    """The sandboxes named (thread, job or sandbox ids) or, with `parent` (a job or an owner
    key), every sandbox child of that parent not squashed yet; each with its R-S5 state."""
    from specialists.features.threads.owning import child_state_for, sandbox_for

    gs = _backend(state_root)
    if bool(refs) == bool(parent):
        raise UserError("name the sandboxes to merge, or their parent (not both)")
    named: list[tuple[str, str]] = []  # (ref, sandbox id)
    if parent:
        named = _children(state_root, parent, gs)
        if not named:
            raise UserError(f"{parent} has no sandbox children waiting to be merged")
    for ref in refs:
        sandbox_id = _job_sandbox(state_root, ref) or sandbox_for(gs, state_root, ref).id
        named.append((ref, sandbox_id))
    if len({s for _, s in named}) != len(named):
        raise UserError("a sandbox is named twice")
    if len(named) > MAX_MEMBERS:
        raise UserError(f"at most {MAX_MEMBERS} sandboxes in one queue")
    from specialists.features.sandbox.resolver import jobs_in

    workers = jobs_in(state_root, {s for _, s in named})
    found = []
    for ref, sandbox_id in named:
        sandbox = gs.get(sandbox_id)
        if sandbox is None:
            raise UserError(f"unknown sandbox {sandbox_id}", hint="`specialists sandboxes`")
        state, auto_commit = child_state_for(state_root, sandbox_id)
        found.append(Candidate(ref, sandbox, workers.get(sandbox_id), state, auto_commit))
    return found


def _children(state_root: Path, parent: str, gs: Any) -> list[tuple[str, str]]:
    """(ref, sandbox id) of each sandbox child of `parent` not squashed at its tip: a
    workflow's worktree children (`parent` its id, or its job's), a job's or an owner key's
    threads."""
    from specialists.base.owner import is_key
    from specialists.features.sandbox import handoff_manifest as hm
    from specialists.features.threads.records import ThreadStore
    from specialists.store.jobs import JobStore

    found: list[tuple[str, str]] = []
    manifests = []
    for path in hm.list_manifests(gs.project):
        try:
            manifests.append(hm.read_manifest(path))
        except hm.HandoffError:
            continue  # a damaged manifest is `worktree show`'s to report
    if any(m.id == parent for m in manifests):
        key, job = None, None
    else:
        job = None if is_key(parent) else JobStore(state_root, news=None).resolve(parent)
        key = parent if job is None else f"job-{job}"
    for manifest in manifests:
        if parent in (manifest.id, manifest.owner) or (job and manifest.owner == job):
            found += [
                (c.sandbox, c.sandbox)
                for c in manifest.children
                if c.state in ("ready", "captured", "preserved")
            ]
    if key is not None:
        found += [
            (r.id, r.sandbox)
            for r in ThreadStore(state_root).all()[0]
            if r.parent == key and r.sandbox is not None
        ]
    out = []
    for ref, sandbox_id in found:
        sandbox = gs.get(sandbox_id)
        tip = gs.tip(f"sandbox-{sandbox_id}") if sandbox else None
        if sandbox is None or tip is None or any(m.tip == tip for m in sandbox.squashes):
            continue  # gone, or squashed already at this tip
        out.append((ref, sandbox_id))
    return out


def _job_sandbox(state_root: Path, ref: str) -> str | None:
    """A job id (or prefix) names the sandbox its job worked in."""
    from specialists.store.jobs import JobStore

    if ref.startswith(("t-", "s-", "hw-", "q-")):
        return None
    jobs = JobStore(state_root, news=None)
    try:
        return jobs.read_record(jobs.resolve(ref)).sandbox
    except (SpecialistsError, OSError, ValueError):
        return None


def _member(gs: Any, c: Candidate) -> Member:
    tip = gs.tip(c.sandbox.branch)
    if tip is None:
        raise UserError(f"the branch {c.sandbox.branch} is gone")
    return Member(
        sandbox=c.sandbox.id,
        ref=c.ref,
        job=c.job,
        files=qgit.changed_files(gs, c.sandbox, tip),
        size=qgit.lines_changed(gs, c.sandbox, tip),
        tip=tip,
        created_at_ms=c.sandbox.created_at_ms,
    )


def check(state_root: Path, refs: Sequence[str], parent: str | None) -> dict[str, Any]:
    """What a queue of these would meet: each member's state and files (uncommitted ones
    included, as they would be committed), the overlapping pairs, the default order."""
    gs = _backend(state_root)
    members = []
    rows = []
    for c in candidates(state_root, refs, parent):
        m = _member(gs, c)
        dirty = [e.path for e in gs.changes(c.sandbox.path)] if c.sandbox.path.is_dir() else []
        m.files = sorted(set(m.files) | set(dirty))
        members.append(m)
        rows.append(
            {
                "sandbox": m.sandbox,
                "ref": m.ref,
                "job": m.job,
                "state": c.state,
                "files": m.files,
                "lines": m.size,
                "uncommitted": dirty,
            }
        )
    return {
        "members": rows,
        "overlaps": overlaps(members),
        "order": [m.sandbox for m in ordered(members, "auto")],
    }


# --- the queue -------------------------------------------------------------------------------


def start(
    state_root: Path,
    refs: Sequence[str] = (),
    parent: str | None = None,
    *,
    order: str | None = None,
    resolver: str | None = "resolver",
    owner: str = "",
    land: bool = False,
) -> Queue:
    """Check, journal and run a new queue as far as it goes without waiting (a resolver at
    work, or merged). Refused before anything changes if a member still runs (R-S5), holds
    uncommitted work its definition may not commit, or is in another queue."""
    order = order or ("given" if refs else "auto")
    gs = _backend(state_root)
    if resolver is not None:  # an unknown name is refused now, not at the first conflict
        from specialists.catalog.discovery import load_catalog

        load_catalog(gs.project).get(resolver)
    found = candidates(state_root, refs, parent)
    busy = [f"{c.ref} ({c.state})" for c in found if c.state != "finished"]
    if busy:
        raise UserError(
            "not finished: " + ", ".join(busy),
            hint="wait for their ends (child_closed), then start the queue",
        )
    queues = Queues(state_root)
    with queues.locked():  # two starts never queue one sandbox twice
        queue = _create(state_root, gs, queues, found, order, resolver, owner, land)
    return advance(state_root, queue.id)


def _create(
    state_root: Path,
    gs: Any,
    queues: Queues,
    found: list[Candidate],
    order: str,
    resolver: str | None,
    owner: str,
    land: bool,
) -> Queue:
    _not_queued(state_root, {c.sandbox.id for c in found})
    target, parent_sb = target_of(gs, found)
    for c in found:  # R-S3: their work committed first, as a squash would
        if c.sandbox.path.is_dir() and gs.has_pending_work(c.sandbox.path):
            if not c.auto_commit:
                raise UserError(
                    f"sandbox {c.sandbox.id} has uncommitted changes and auto-commit is off",
                    hint=f"commit them in {c.sandbox.path} first",
                )
            gs.commit_all(c.sandbox)
    members = ordered([_member(gs, c) for c in found], order)
    head = gs.rev(target, "HEAD^{commit}")
    if head is None:
        raise UserError(f"{target} has no commit to merge onto")
    qid = new_queue_id()
    queue = Queue(
        id=qid,
        created_at_ms=gs.clock(),
        owner=owner,
        target=str(target),
        into_sandbox=parent_sb is not None,
        parent=parent_sb.id if parent_sb is not None else None,
        integration=qid,
        base=head,
        order=order,
        resolver=resolver,
        land=land,
        members=members,
        overlaps=overlaps(members),
    )
    if not queues.record(qid).create():
        raise StoreError(f"merge queue {qid} exists already")
    queues.save(queue)  # journaled before its sandbox exists
    queues.log(queue, "created", members=[m.sandbox for m in members], overlaps=queue.overlaps)
    return queue


def _not_queued(state_root: Path, sandboxes: set[str]) -> None:
    queues, _ = Queues(state_root).all()
    for q in queues:
        if q.state in QUEUE_END:
            continue
        taken = [m.sandbox for m in q.members if m.sandbox in sandboxes]
        # landed in a queue not landed itself: its change waits there; queued again, it
        # would land twice
        taken = [s for s in taken if q.member(s).state not in ("conflict", "failed")]
        if taken:
            raise UserError(
                f"{', '.join(taken)} already in merge queue {q.id} ({q.state})",
                hint=f"`specialists merge cancel {q.id}` first",
            )


def advance(
    state_root: Path,
    queue_id: str,
    *,
    ended: Mapping[str, str] | None = None,
    retry: bool = False,
    tell: bool = False,
) -> Queue:
    """One pass of the queue (safe to repeat, and after a crash at any step): take what the
    resolvers did, land what can land, start resolvers for new conflicts. `ended`: jobs known
    to have ended (a resolver's own end hook, before its final status is written). `retry`:
    members in conflict or failed go back in line. `tell`: the owner hears when it ends."""
    queues = Queues(state_root)
    gs = _backend(state_root)
    known = dict(ended or {})
    with queues.record(queue_id).locked():
        q = queues.load(queue_id)
        before = q.state
        if q.state == "cancelled":
            return q
        if retry:
            for m in q.members:
                if m.state in ("conflict", "failed"):
                    m.state, m.problem, m.rounds = "queued", None, 0
            if q.state in ("merged", "failed"):
                q.state, q.problem = "running", None
        if gs.get(q.integration) is None:  # journaled, then killed before it was made
            _make_integration(gs, q)
        driver = Driver(
            queues,
            gs,
            q,
            job_final=lambda job: known.get(job) or _final(state_root, job),
        )
        driver.run()
        if q.state == "merged" and q.land and q.into_sandbox:
            _land(queues, gs, q, confirmed=False)
        if tell and q.owner and q.state != before and q.state in ("merged", "failed", "landed"):
            _tell(state_root, q)
    return q


def _make_integration(gs: Any, q: Queue) -> None:
    """The queue's own sandbox: from the parent sandbox's branch, or the target's HEAD."""
    base = gs.get(q.parent) if q.parent else None
    if q.parent and base is None:
        raise SandboxError(f"the parent sandbox {q.parent} has no record")
    made = gs.create(q.integration, base=base, origin=None if base else Path(q.target))
    q.base = made.base_sha


def _final(state_root: Path, job_id: str) -> str | None:
    """The job's final state once it ended (a dead supervisor recorded on the way)."""
    from specialists.store.jobs import JobStore
    from specialists.store.news import NEWS
    from specialists.store.view import current_status

    try:
        status = current_status(JobStore(state_root, news=NEWS), job_id)
    except (SpecialistsError, OSError):
        return "error"
    return None if status.active else status.status


def land(state_root: Path, queue_id: str, *, confirmed: bool) -> tuple[Queue, SquashOutcome]:
    """The queue's result into its target: committed into a sandbox; staged into the user's
    working copy, only when `confirmed` (R-S5: refused as needs_confirmation otherwise)."""
    queues = Queues(state_root)
    gs = _backend(state_root)
    with queues.record(queue_id).locked():
        q = queues.load(queue_id)
        if q.state != "merged":
            raise UserError(
                f"merge queue {q.id} is {q.state}; only a merged queue lands",
                hint="`specialists merge show` says what is left",
            )
        return q, _land(queues, gs, q, confirmed=confirmed)


def _land(queues: Queues, gs: Any, q: Queue, *, confirmed: bool) -> SquashOutcome:
    integration = gs.get(q.integration)
    if integration is None:
        raise SandboxError(f"the queue's sandbox {q.integration} has no record")
    outcome: SquashOutcome = gs.squash_into(
        Path(q.target),
        integration,
        child="finished",
        commit=q.into_sandbox,
        auto_commit=False,
        confirmed=confirmed,
    )
    if outcome.kind == "squashed":
        q.state, q.problem = "landed", None
        q.landing = {"mode": outcome.mode, "commit": outcome.commit, "files": len(outcome.files)}
        queues.log(q, "landed_in_target", mode=outcome.mode, commit=outcome.commit)
    else:  # still merged: a person (or its owner) lands it once the target allows
        q.problem = f"not landed: {outcome.describe()}"
    queues.save(q)
    return outcome


def cancel(state_root: Path, queue_id: str) -> Queue:
    """Stop the queue: its resolver jobs are asked to stop; every branch and worktree stays
    (the queue's sandbox holds what landed so far)."""
    from specialists.store.control import post_request
    from specialists.store.jobs import JobStore

    queues = Queues(state_root)
    jobs = JobStore(state_root, news=None)
    with queues.record(queue_id).locked():
        q = queues.load(queue_id)
        if q.state in QUEUE_END:
            return q
        for m in q.members:
            job = (m.resolver or {}).get("job")
            if m.state == "resolving" and job:
                post_request(jobs.job_dir(str(job)), "stop", "merge queue cancelled")
        q.state = "cancelled"
        queues.save(q)
        queues.log(q, "cancelled")
    return q


def _tell(state_root: Path, q: Queue) -> None:
    """The owner's inbox hears that a queue it left waiting on a resolver went on to its end."""
    from specialists.events.inbox import Inbox
    from specialists.events.model import EventSource

    try:
        Inbox(state_root, q.owner).append(
            "notice",
            EventSource("merge_queue", "", {"queue": q.id}),
            q.describe(),
            source_id=q.id,
            seq=len(Queues(state_root).history(q.id)),
            details={"queue": q.id, "state": q.state, "members": q.tally()},
        )
    except (SpecialistsError, OSError, ValueError) as exc:
        Queues(state_root).log(q, "notice_failed", error=str(exc))


def view(q: Queue) -> dict[str, Any]:
    """A queue as the fronts show it (JSON)."""
    out = q.to_dict()
    out.pop("schema", None)
    out["tally"] = q.tally()
    out["summary"] = q.describe()
    return out


def resolver_ended(state_root: Path, job_id: str, sandbox_id: str, final: str) -> None:
    """A resolver job ended (its supervisor's end hook, or recovery): journal it, then let
    the queue take its result and go on."""
    queue_id = queue_of_sandbox(sandbox_id)
    if queue_id is None:
        return
    advance(state_root, queue_id, ended={job_id: final}, tell=True)
