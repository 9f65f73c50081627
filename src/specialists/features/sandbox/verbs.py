"""The sandbox ops (base/ops.py): file claims (the agent tools claim_files, release_files and
list_claims; `specialists claims`), sandbox branches (`specialists sandboxes`) and worktree
handoffs (`specialists worktree`). What needs a person's consent (deleting branches, staging
work in their tree, discarding worktrees) is done only when `confirmed` names it: the
command line asks first, then runs the op again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from specialists.base.display import one_line
from specialists.base.errors import UserError
from specialists.base.ops import Noun, Op
from specialists.base.opschema import Cli, Many, Text
from specialists.store.claims import MAX_PATHS_PER_CALL, Claims, key_of_arg

if TYPE_CHECKING:
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
class Claimed:
    asked: int
    claimed: list[dict[str, Any]]
    held: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"claimed": self.claimed, "held": self.held}


def claim_files(
    caller: Caller, *, paths: Paths, note: Annotated[str, Text(2000, line=False)] = ""
) -> Claimed:
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
    return Claimed(len(keys), [c.to_dict() for c in new], held)


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


def _claimed_said(r: Claimed) -> str:
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
