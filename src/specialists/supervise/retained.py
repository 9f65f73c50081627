"""Retained children: a parent's last completed children, and whether each can be resumed.

A parent is an owner key (`job-<id>` for a parent job, `claude-<session>`, `cli-<user>`, ...):
its children are the jobs whose owner names it. A child is resumable when `specialists
resume` would accept it now: it ended without being stopped, it has an agent session that is
still there, and no other job is continuing its session now (start.py). Every row says why.
"""

from __future__ import annotations

from pathlib import Path

from specialists.base.errors import SpecialistsError
from specialists.base.vocab import PROC_RUNNER
from specialists.store.fields import Declared
from specialists.store.jobs import JobStore
from specialists.store.records import TERMINAL_STATES

DEFAULT_LAST = 10
MAX_LAST = 200
NO_SESSION_RUNNERS = frozenset({"command", PROC_RUNNER})


class ChildRow(Declared):
    job_id: str
    specialist: str
    runner: str
    status: str
    ended_at_ms: int
    resumable: bool
    reason: str

    def line(self) -> str:
        verdict = "resumable" if self.resumable else "not resumable"
        return (
            f"{self.job_id}  {self.status:<9} {self.specialist:<14.14} {self.runner:<7} "
            f"{verdict}: {self.reason}"
        )


def resumability(store: JobStore, job_id: str) -> tuple[bool, str]:
    """(resumable, why) for a job that has ended."""
    record = store.read_record(job_id)
    st = store.read_status(job_id)
    if st is None or st.status not in TERMINAL_STATES:
        return False, f"it has not ended ({st.status if st else 'being created'})"
    if st.status == "cancelled":
        return False, "it was stopped (stop is final)"
    if record.runner in NO_SESSION_RUNNERS:
        return False, f"a {record.runner} job has no agent session"
    session = st.session_file
    if not session:
        return False, "no agent session was recorded"
    if Path(session).is_absolute() and not Path(session).is_file():
        return False, f"its session file {session} is gone"
    from specialists.supervise.start import session_holder  # the start path: not at import

    holder = session_holder(store, job_id)
    if holder is not None:
        return False, f"being resumed by job {holder.id} (pid {holder.supervisor_pid})"
    return True, f"specialists resume {job_id} --prompt ..."


def retained_children(
    store: JobStore, parent: str, last: int = DEFAULT_LAST
) -> tuple[list[ChildRow], list[str]]:
    """The `last` most recently ended children of `parent`, newest first, and problems."""
    rows: list[ChildRow] = []
    problems: list[str] = []
    for job_id in store.list_ids():
        try:
            record = store.read_record(job_id)
            if parent not in record.owner:
                continue
            st = store.read_status(job_id)
            if st is None or st.status not in TERMINAL_STATES:
                continue
            ok, why = resumability(store, job_id)
        except (OSError, SpecialistsError) as exc:
            problems.append(f"job {job_id}: {exc}")
            continue
        ended = st.finished_at_ms or st.started_at_ms
        rows.append(ChildRow(job_id, record.specialist, record.runner, st.status, ended, ok, why))
    rows.sort(key=lambda r: (r.ended_at_ms, r.job_id), reverse=True)
    return rows[: max(1, min(last, MAX_LAST))], problems
