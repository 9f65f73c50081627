"""What was spent under each ceiling, and what a specialist usually spends: read from the
statuses the supervisors write, through the finished-jobs index (store/index.py), so a count
over 1,000 jobs parses one index file and the unfinished jobs' status files, nothing more.

Each job counts its own spend (status.json `tokens` and `cost_usd`, never a rollup), so a
workflow and its children are not counted twice: the children name the workflow's ceiling
themselves.
"""

from __future__ import annotations

from collections.abc import Iterable

from specialists.base.tuples import NamedTuple
from specialists.store.index import Finished
from specialists.store.jobs import JobStore
from specialists.store.records import JobStatus
from specialists.store.view import overview

HISTORY = 20  # the latest finished jobs of a specialist an estimate looks at


class Outlay(NamedTuple):
    tokens: int = 0  # input + output
    usd: float = 0.0

    def plus(self, tokens: int, usd: float) -> Outlay:
        return Outlay(self.tokens + tokens, self.usd + usd)


def own(st: JobStatus) -> Outlay:
    """A job's own spend as its status records it (input + output tokens, dollars)."""
    t = st.tokens
    tokens = sum(n for k in ("input", "output") if type(n := t.get(k)) is int and n > 0)
    return Outlay(tokens, float(st.cost_usd) if st.cost_usd > 0 else 0.0)


def spent_under(
    store: JobStore, keys: Iterable[str], *, skip: str | None = None
) -> dict[str, Outlay]:
    """For each ceiling key, what every job that counts against it spent (`skip`: a job
    whose live figures the caller adds itself)."""
    out = {key: Outlay() for key in keys}
    active, finished, _ = overview(store)
    for row in finished:
        if row.id != skip:
            for key in row.under:
                if key in out:
                    out[key] = out[key].plus(row.tokens, row.cost_usd)
    for st in active:
        if st.id == skip:
            continue
        mine = own(st)
        for entry in st.ceilings:
            of = entry.get("of") if isinstance(entry, dict) else None
            if isinstance(of, str) and of in out:
                out[of] = out[of].plus(*mine)
    return out


def reached(store: JobStore, job_id: str) -> str | None:
    """The error of a ceiling job `job_id` counts against that its tree has reached now
    (counted afresh), else None: a launcher's check before it starts another child."""
    from specialists.features.spend.ceiling import entries

    st = store.read_status(job_id)
    found = entries(st.ceilings if st else ())
    if not found:
        return None
    counted = spent_under(store, [e.of for e in found])
    for e in found:
        now = e.counted(*counted[e.of])
        if now.over():
            return now.reached()
    return None


class Usual(NamedTuple):
    """What one child of a specialist usually spends: the median of its latest finished jobs
    that ended done (`jobs`: how many were looked at; 0: no history)."""

    tokens: int
    usd: float
    jobs: int
    basis: str = ""  # whose history: "the median of 12 finished jobs"


def usual(store: JobStore, specialists: Iterable[str]) -> dict[str, Usual]:
    """The median spend of each specialist in this project's history; one with no finished
    job of its own gets the median of every specialist's (0 jobs if there is none at all)."""
    _, finished, _ = overview(store)
    done = sorted((r for r in finished if r.status == "done"), key=lambda r: -r.started_at_ms)
    out: dict[str, Usual] = {}
    every = _median(done[: HISTORY * 5], "of every specialist")
    for name in specialists:
        if name not in out:
            mine = [r for r in done if r.specialist == name][:HISTORY]
            out[name] = _median(mine, "of its own") if mine else every
    return out


def _median(rows: list[Finished], whose: str) -> Usual:
    if not rows:
        return Usual(0, 0.0, 0)
    import statistics  # (and fractions, decimal): only for an estimate, never per job

    tokens = int(statistics.median(r.tokens for r in rows))
    usd = round(statistics.median(r.cost_usd for r in rows), 6)
    return Usual(tokens, usd, len(rows), f"the median of {len(rows)} finished jobs {whose}")
