"""`specialists feed [--job ID] [--follow] [--from SEQ]`: job events, formatted.

Without --job: the events of the active jobs, interleaved (seed 000, 3.4); finished jobs
are not replayed (`--job ID` shows one of them). With --follow it keeps printing, taking in
jobs that start meanwhile; on one job it ends after that job's final event.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specialists.jobs.store import JobStore
    from specialists.project import Project

FOLLOW_POLL_S = 0.04
HEALTH_CHECK_S = 1.0  # how often a follow looks for dead supervisors and new jobs
TERMINAL_EVENTS = {"done", "error", "cancelled"}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "feed",
        help="show job events (the active jobs, or one job with --job)",
        description=(
            "Events of the active jobs, interleaved, or of one job (--job, finished ones "
            "too). --follow keeps printing; on one job it ends after its final event."
        ),
    )
    p.add_argument("--job", "-j", help="one job, by id or unique prefix")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    p.add_argument(
        "--from",
        dest="from_seq",
        type=int,
        default=0,
        metavar="SEQ",
        help="start at this event sequence number",
    )
    p.add_argument("--json", action="store_true", help="raw event lines")
    p.set_defaults(run=run)


def _seq(event: dict[str, Any]) -> int:
    seq = event.get("seq")
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else 0


def _ts(event: dict[str, Any]) -> int:
    ts = event.get("ts")
    return ts if isinstance(ts, int) and not isinstance(ts, bool) else 0


class _Tail:
    """One job's events file, read incrementally by byte offset."""

    def __init__(
        self, store: JobStore, job_id: str, from_seq: int, *, strict: bool = False
    ) -> None:
        from specialists.errors import StoreError

        self.job_id = job_id
        self.path = store.events_path(job_id)
        self.offset = 0
        self.from_seq = from_seq
        self.ended = False
        self.strict = strict  # the one job asked for: its damage is the error, not a warning
        self.problems: list[str] = []  # damaged lines or files, each reported once
        try:
            st = store.read_status(job_id)
        except StoreError as exc:
            if strict:
                raise
            st = None
            self.problems.append(exc.message)
        self.specialist = st.specialist if st else "?"
        self.started_ms = st.started_at_ms if st else 0

    def read(self) -> list[dict[str, Any]]:
        from specialists.errors import StoreError
        from specialists.jobs.store import read_event_lines

        if self.ended:
            return []
        try:
            events, self.offset = read_event_lines(self.path, self.offset, problems=self.problems)
        except StoreError as exc:
            if self.strict:
                raise
            self.problems.append(exc.message)
            self.ended = True  # the other jobs' events keep coming
            return []
        fresh = [e for e in events if _seq(e) >= self.from_seq]
        if any(e.get("event") in TERMINAL_EVENTS for e in events):
            self.ended = True
        if fresh and not self.started_ms:
            self.started_ms = _ts(fresh[0])
        return fresh


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.jobs.view import all_statuses, current_status

    store = project.store
    seen_at_start = set(store.list_ids()) if args.job is None else set()
    if args.job is not None:
        tails = [_Tail(store, store.resolve(args.job), args.from_seq, strict=True)]
    else:
        statuses, _ = all_statuses(store)
        active = sorted((s for s in statuses if s.active), key=lambda s: s.started_at_ms)
        tails = [_Tail(store, s.id, args.from_seq) for s in active]
        if not tails and not args.follow:
            hint = "one job's events, finished ones too: specialists feed --job ID"
            print(f"no active jobs ({hint})", file=sys.stderr)
            return 0
    _emit(tails, args.json)
    if not args.follow:
        return 0
    # One job: stop after its final event. All jobs: keep watching, new jobs included.
    watch_new = args.job is None
    known = {t.job_id for t in tails} | seen_at_start
    last_health = time.monotonic()
    while watch_new or not all(t.ended for t in tails):
        time.sleep(FOLLOW_POLL_S)
        _emit(tails, args.json)
        if time.monotonic() - last_health > HEALTH_CHECK_S:
            last_health = time.monotonic()
            for tail in tails:
                # A dead supervisor never writes its final event: recovery writes it for us.
                if not tail.ended:
                    current_status(store, tail.job_id)
            if watch_new:
                fresh = [i for i in store.list_ids() if i not in known]
                known.update(fresh)
                tails.extend(_Tail(store, i, 0) for i in fresh)
            tails = [t for t in tails if not t.ended] if watch_new else tails
    _emit(tails, args.json)
    return 0


def _emit(tails: list[_Tail], as_json: bool) -> None:
    from specialists.jobs.lines import feed_line

    batch: list[tuple[int, _Tail, dict[str, Any]]] = []
    for tail in tails:
        batch.extend((_ts(e), tail, e) for e in tail.read())
        for problem in tail.problems:
            print(f"warning: {problem}", file=sys.stderr)
        tail.problems.clear()
    batch.sort(key=lambda item: item[0])
    for _, tail, ev in batch:
        if as_json:
            print(json.dumps({"job": tail.job_id, **ev}))
        else:
            print(feed_line(tail.job_id, tail.specialist, tail.started_ms, ev))
    if batch:
        sys.stdout.flush()
