"""The sandbox ops (base/ops.py): file claims (the agent tools claim_files, release_files and
list_claims; `specialists claims`), sandbox branches (`specialists sandboxes`) and worktree
handoffs (`specialists worktree`). What needs a person's consent (deleting branches, staging
work in their tree, discarding worktrees) is done only when `confirmed` names it: the
command line asks first, then runs the op again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from specialists.base.display import one_line
from specialists.base.errors import UserError
from specialists.base.ops import Noun, Op
from specialists.base.opschema import Cli, Many, Text
from specialists.store.claims import MAX_PATHS_PER_CALL, Claims, key_of_arg

if TYPE_CHECKING:
    from specialists.features.sandbox.backend import SandboxBackend
    from specialists.native.agent_tools import Caller

Paths = Annotated[list[str], Many(MAX_PATHS_PER_CALL)]


# --- file claims (store/claims.py) ----------------------------------------------------------


def _keys(caller: Caller, paths: list[str]) -> list[tuple[str, bool]]:
    return [key_of_arg(p, caller.cwd, caller.root) for p in paths]


def _job(caller: Caller) -> str:
    if caller.job_id is None:
        raise UserError(
            "only a job can claim files", hint="claims end with the job that holds them"
        )
    return caller.job_id


@dataclass(frozen=True)
class FilesClaimed:
    asked: int
    claimed: list[dict[str, Any]]
    held: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"claimed": self.claimed, "held": self.held}


def claim_files(
    caller: Caller, *, paths: Paths, note: Annotated[str, Text(2000, line=False)] = ""
) -> FilesClaimed:
    """Claim files for the caller's job."""
    job = _job(caller)
    keys = _keys(caller, paths)
    claims = Claims(caller.state_root)
    specialist = ""
    try:
        specialist = claims.jobs.read_record(job).specialist
    except (UserError, OSError, ValueError):
        pass  # a claim without its specialist's name still holds
    now = int(caller.clock() * 1000)
    new = claims.claim(job, keys, specialist=specialist, note=one_line(note, 300), now_ms=now)
    held = [c.to_dict() for c in claims.live() if c.job == job]
    return FilesClaimed(len(keys), [c.to_dict() for c in new], held)


def release_files(
    caller: Caller,
    paths: Annotated[Paths | None, Cli(metavar="PATH")] = None,
    /,
    *,
    job: Annotated[str | None, Cli(person=True)] = None,
) -> dict[str, Any]:
    """Release a job's claims (all, or PATHs).

    Args:
        paths: as claimed; default all
        job: the job holding them
    """
    if caller.person:
        if job is None:
            raise UserError("claims release needs --job JOB", hint="the job holding them")
        job = caller.jobs().resolve(job)
    else:
        job = _job(caller)
    gone = Claims(caller.state_root).release(job, _keys(caller, paths) if paths else None)
    return {"released": [c.to_dict() for c in gone], "job": job}


def list_claims(caller: Caller) -> dict[str, Any]:
    """Files live jobs have claimed."""
    return {"claims": [c.to_dict() for c in Claims(caller.state_root).live()]}


def _claims_said(data: dict[str, Any]) -> str:
    from specialists.store.claims import Claim

    lines = [
        f"{c.shown()}: {c.holder()}" + (f" ({c.note})" if c.note else "")
        for c in (Claim(**row) for row in data["claims"])
    ]
    return "\n".join(lines) or "no files are claimed"


def _claimed_said(r: FilesClaimed) -> str:
    shown = ", ".join(row["path"] + ("/" if row["dir"] else "") for row in r.held[:20])
    return f"claimed {r.asked} path(s); you hold {len(r.held)}: {shown}"


CLAIMS = Noun(
    "claims",
    "files live jobs have claimed; release a job's claims",
    (
        Op(claim_files, cli=False, tool="claim_files", power="write", scope="job",
           text=_claimed_said,
           guidance="When other agents work in parallel, claim_files before you change files.",
           about=(
            "Claim the files you are about to change, so agents working in parallel are refused "
            "when they write them (and you on theirs). paths: files, or directories ending in "
            "'/', relative to your working directory. All or none: if another live job holds "
            "one, nothing is claimed and the error names that job. Your claims end with your "
            "job; release_files gives them back earlier. note: what you are doing, shown to "
            "others."
        )),
        Op(release_files, "release", tool="release_files", power="", scope="job",
           text=lambda r: f"released {len(r['released'])} claim(s)", about=(
            "Give back your claims on paths (as you claimed them), or all of them when paths is "
            "omitted. Claims also end by themselves when your job ends."
        )),
        Op(list_claims, tool="list_claims", power="", reads=True, text=_claims_said, about=(
            "Which files are claimed now, by which live job, and why: read it before planning "
            "parallel work. A claim of a job that ended or crashed is not listed."
        )),
    ),
)  # fmt: skip


# --- sandbox branches (R-S7, R-S8) ----------------------------------------------------------


def _backend(caller: Caller) -> SandboxBackend:
    from specialists.features.threads.sandboxing import backend_for

    backend = backend_for(caller.root)
    if backend.detect(caller.root) is None:
        raise UserError(f"{caller.root} is not in a git repository; it has no sandboxes")
    return backend


def sandboxes(caller: Caller) -> dict[str, Any]:
    """Every `sandbox-<id>` branch, merged or not, and its worktree."""
    listing = _backend(caller).list()
    caller.warnings.extend(f"{p.where}: {p.what}" for p in listing.problems)
    rows = [
        {"id": s.id, "branch": s.branch, "tip": s.tip, "merged": s.merged, "note": s.note,
         "worktree": str(s.worktree) if s.worktree else None}
        for s in listing.sandboxes
    ]  # fmt: skip
    return {"sandboxes": rows}


def prune(
    caller: Caller,
    *,
    confirmed: Annotated[list[Mapping[str, Any]] | None, Cli(hidden=True)] = None,
) -> dict[str, Any]:
    """Delete merged sandbox branches (asks first): without `confirmed`, what would go; with
    it, those candidates, each only if nothing about it changed since it was shown."""
    from specialists.features.sandbox.backend import PruneCandidate, PrunePlan

    backend = _backend(caller)
    if confirmed is not None:
        plan = PrunePlan(tuple(PruneCandidate(**c) for c in confirmed), ())
        outcome = backend.prune_merged(plan)
        return {"kept": [k._asdict() for k in outcome.kept], "deleted": list(outcome.deleted)}
    plan = backend.prune_plan()
    if plan.blocked:
        raise UserError(plan.describe(), hint="commit or discard those changes, then prune again")
    return {
        "candidates": [c._asdict() for c in plan.candidates],
        "kept": [k._asdict() for k in plan.kept],
    }


def squash(
    caller: Caller,
    id: Annotated[str, Text(200)],
    /,
    *,
    confirmed: Annotated[bool, Cli(hidden=True)] = False,
) -> dict[str, Any]:
    """Stage a finished sandbox's work in your tree (never committed, R-S8), once `confirmed`.

    Args:
        id: thread id (t-...) or sandbox id
    """
    from specialists.features.threads.owning import child_state_for, sandbox_for

    backend = _backend(caller)
    sandbox = sandbox_for(backend, caller.state_root, id)
    state, auto_commit = child_state_for(caller.state_root, sandbox.id)
    target = sandbox.origin
    outcome = backend.squash_into(
        target, sandbox, child=state, commit=False, auto_commit=auto_commit, confirmed=confirmed
    )
    if outcome.kind == "squashed":
        return {"squashed": True, "said": outcome.describe()}
    if outcome.kind == "refused" and outcome.reason == "needs_confirmation" and not confirmed:
        question = f"stage the work of {sandbox.branch} in {target} (nothing is committed)?"
        return {"squashed": False, "question": question}
    raise UserError(outcome.describe())


SANDBOXES = Noun(
    "sandboxes",
    "list sandbox branches; prune merged ones; squash one",
    (
        Op(sandboxes, reads=True, tool=None),
        Op(prune, "prune", tool=None, help="delete merged sandbox branches (asks first)"),
        Op(squash, "squash", tool=None, help="stage a finished sandbox's work in your tree"),
    ),
)


# --- worktree handoffs (docs/workflows.md) ----------------------------------------------------

Ref = Annotated[str, Text(4096, 1)]


def handoffs(caller: Caller) -> dict[str, Any]:
    """The project's handoff manifests."""
    from specialists.features.sandbox.handoff_manifest import (
        HandoffError,
        list_manifests,
        read_manifest,
    )

    rows: list[dict[str, Any]] = []
    for path in list_manifests(caller.root):
        try:
            m = read_manifest(path)
        except HandoffError as exc:
            caller.warnings.append(exc.one_line())
            continue
        states = dict(Counter(c.state for c in m.children))
        rows.append({"id": m.id, "owner": m.owner, "path": str(path), "states": states})
    return {"handoffs": rows}


def handoff(caller: Caller, ref: Ref, /) -> dict[str, Any]:
    """A handoff's children, patches and recovery: as recorded, and as they are now.

    Args:
        ref: the workflow's job id (handoff id) or a manifest's path
    """
    from specialists.features.sandbox.handoff_discard import inspect

    view = inspect(caller.root, ref)
    data = view.manifest.to_dict()
    children = [
        {**row, "now": {"worktree_exists": c.worktree_exists, "ours": c.ours, "tip": c.tip,
                        "dirty": list(c.dirty), "recovery": list(c.recovery())}}
        for row, c in zip(data["children"], view.children, strict=True)
    ]  # fmt: skip
    return {**data, "path": str(view.path), "children": children}


def capture(caller: Caller, ref: Ref, /) -> dict[str, Any]:
    """Capture children that ended without it (the process that owned the handoff died).

    Args:
        ref: the workflow's job id (handoff id) or a manifest's path
    """
    from specialists.features.sandbox.handoff import child_ended
    from specialists.features.sandbox.handoff_discard import inspect

    view = inspect(caller.root, ref)
    rows = []
    for c in view.children:
        done = child_ended(caller.root, view.manifest.id, c.entry.key)
        rows.append({"key": c.entry.key, "state": done.state, "summary": done.summary})
        caller.warnings.extend(done.warnings)
    return {"captured": rows}


def discard(
    caller: Caller,
    ref: Ref,
    /,
    *,
    confirmed: Annotated[Mapping[str, Any] | None, Cli(hidden=True)] = None,
) -> dict[str, Any]:
    """Delete a handoff's worktrees and branches: without `confirmed`, what would go; with it
    (each child's branch tip as shown), those, a branch that moved since kept.

    Args:
        ref: the workflow's job id (handoff id) or a manifest's path
    """
    from dataclasses import replace

    from specialists.features.sandbox import handoff_discard as hd

    view = hd.inspect(caller.root, ref)
    live = [c for c in view.children if c.entry.state != "discarded"]
    if confirmed is None:
        rows = [
            {"key": c.entry.key, "worktree": c.entry.worktree, "branch": c.entry.branch,
             "dirty": len(c.dirty), "tip": c.tip}
            for c in live
        ]  # fmt: skip
        return {"id": view.manifest.id, "live": rows}
    shown = tuple(replace(c, tip=confirmed[c.entry.key]) for c in live if c.entry.key in confirmed)
    outcome = hd.discard(caller.root, replace(view, children=shown))
    return {
        "id": view.manifest.id, "removed": list(outcome.removed), "kept": list(outcome.kept),
        "manual": list(outcome.manual), "complete": outcome.complete,
    }  # fmt: skip


WORKTREE = Noun(
    "worktree",
    "review, capture or discard worktree handoffs",
    (
        Op(handoffs, "list", reads=True, tool=None, help="the project's handoff manifests"),
        Op(handoff, "show", reads=True, tool=None,
           help="a handoff's children, patches and recovery"),
        Op(capture, "capture", tool=None, help="capture children that ended without it"),
        Op(discard, "discard", tool=None, help="delete a handoff's worktrees and branches"),
    ),
)  # fmt: skip
