"""The job-control ops (base/ops.py): `specialists interrupt` and `specialists children`, and
the MCP tools of the same names, generated from these. A person at a terminal names any job
or parent; a model's parent is itself (its owner key).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from specialists.base.errors import Failed
from specialists.base.ops import Noun, Op
from specialists.base.opschema import Cli, Range, Text
from specialists.supervise.retained import DEFAULT_LAST, MAX_LAST

if TYPE_CHECKING:
    from specialists.native.agent_tools import Caller
    from specialists.supervise.retained import ChildRow

JobRef = Annotated[str, Text(64, 1), Cli(metavar="JOB")]


def interrupt(caller: Caller, job_id: JobRef, /) -> dict[str, Any]:
    """Soft interrupt: cancel a job's current turn; the job pauses (status waiting) and is
    resumable with follow_up (or `specialists resume`). Not a failure and not a success:
    decide the next step (follow_up with clearer instructions, or stop, which is final).
    Refused for command jobs, which cannot pause. Returns state paused, interrupting,
    already_paused or pending.

    Args:
        job_id: job id (8 hex characters) or a unique prefix
    """
    from specialists.supervise.steering import interrupt_job

    store = caller.jobs()
    job = store.resolve(job_id)
    outcome = interrupt_job(store, job)
    if not outcome.ok:
        raise Failed(
            outcome.describe(), hint=f"see: specialists feed --job {job}",
            data={"job_id": job, "state": outcome.state},
        )  # fmt: skip
    return {"job_id": job, "state": outcome.state, "text": outcome.describe()}


@dataclass(frozen=True)
class EndedChildren:
    parent: str
    rows: list[ChildRow]
    problems: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"children": [r.to_dict() for r in self.rows], "problems": self.problems[:5]}


def children(
    caller: Caller,
    parent: Annotated[str | None, Text(128), Cli(only=True)] = None,
    /,
    *,
    last: Annotated[int, Range(1, MAX_LAST)] = DEFAULT_LAST,
) -> EndedChildren:
    """Your last ended child jobs (at most `last`, default 10), each resumable or not
    resumable with the reason (stopped, no session, session gone, being resumed by another
    job). Resume only rows reported resumable (run with continue_from); otherwise start a
    fresh job.

    Args:
        parent: job id or owner key (default: this session)
        last: how many
    """
    from specialists.events.owners import check_owner
    from specialists.store.ids import is_job_id
    from specialists.supervise.retained import retained_children

    store = caller.jobs()
    if parent is None:
        whose = caller.owners[0]
    elif "-" in parent and not is_job_id(parent):
        whose = check_owner(parent.strip())  # an owner key
    else:
        whose = f"job-{store.resolve(parent)}"
    rows, problems = retained_children(store, whose, last)
    caller.warnings.extend(problems)
    return EndedChildren(whose, rows, problems)


INTERRUPT = Noun(
    "interrupt",
    "cancel a job's current turn; the job pauses (resumable)",
    (Op(interrupt, tool="interrupt"),),
)
CHILDREN = Noun(
    "children",
    "a parent's last ended jobs, resumable or not, and why",
    (Op(children, tool="children", reads=True),),
)
