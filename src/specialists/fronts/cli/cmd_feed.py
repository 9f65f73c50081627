"""`specialists feed [JOB | --job ID] [--tree] [--follow] [--from SEQ]`: job events, formatted.

Without a job: the events of the active jobs, interleaved (seed 000, 3.4); finished jobs
are not replayed (`--job ID` shows one of them). With --follow it keeps printing, taking in
jobs that start meanwhile; on one job it ends after that job's final event.

`--tree` is one job's transcript with its descendants' (a workflow's children, a thread's
children, theirs), interleaved by time; with --follow it takes in children launched
meanwhile and ends once the job and every child it knows of have ended.
"""

from __future__ import annotations

import json
import sys
import time

from specialists.fronts.cli.commands import Plain

TYPE_CHECKING = False  # no `typing`, no `argparse` at run time: a person waits on `feed`
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from specialists.project import Project
    from specialists.store.jobs import JobStore

PLAIN = Plain(
    {"--json": "json", "--tree": "tree", "--follow": "follow", "-f": "follow"},
    "job_id",
    {"job": None, "job_id": None, "tree": False, "follow": False, "from_seq": 0, "json": False},
    options={"--job": "job", "-j": "job"},
)

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
    p.add_argument("job_id", nargs="?", metavar="JOB", help="the same as --job JOB")
    p.add_argument(
        "--tree", action="store_true", help="the job's descendants too (a workflow's children)"
    )
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
        from specialists.base.errors import StoreError
        from specialists.store.jobs import EVENTS_FILE
        from specialists.store.view import name_of

        self.job_id = job_id
        self.path = store.job_file(job_id, EVENTS_FILE)
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
        self.name = name_of(st) if st else "?"  # a workflow child by its key
        self.started_ms = st.started_at_ms if st else 0

    def read(self) -> list[dict[str, Any]]:
        from specialists.base.errors import StoreError
        from specialists.store.jobs import read_event_lines

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


def _descendants(store: JobStore, root: str, known: set[str]) -> list[str]:
    """Jobs below `root` by their status's parent_id, not in `known`, oldest first."""
    from specialists.store.view import all_statuses

    statuses, _ = all_statuses(store)
    below: dict[str, list[tuple[int, str]]] = {}
    for st in statuses:
        if st.parent_id and st.parent_id != st.id:
            below.setdefault(st.parent_id, []).append((st.started_at_ms, st.id))
    found: list[tuple[int, str]] = []
    stack, seen = [root], {root}
    while stack:
        for item in below.get(stack.pop(), ()):
            if item[1] not in seen:
                seen.add(item[1])
                stack.append(item[1])
                found.append(item)
    return [job_id for _, job_id in sorted(found) if job_id not in known]


def run(args: argparse.Namespace, project: Project) -> int:
    from specialists.base.errors import UserError
    from specialists.store.view import current_status, overview

    if args.job is not None and args.job_id is not None and args.job != args.job_id:
        raise UserError("two different jobs given", hint="give one job, as JOB or --job JOB")
    job = args.job if args.job is not None else args.job_id
    if args.tree and job is None:
        raise UserError("--tree needs a job", hint="specialists feed JOB --tree")
    store = project.store
    seen_at_start = set(store.list_ids()) if job is None else set()
    root = store.resolve(job) if job is not None else None
    if root is not None:
        tails = [_Tail(store, root, args.from_seq, strict=True)]
        if args.tree:
            tails += [_Tail(store, i, 0) for i in _descendants(store, root, {root})]
    else:  # the active jobs: finished ones are known from the index, unread (store/view.py)
        active = sorted(overview(store)[0], key=lambda s: s.started_at_ms)
        tails = [_Tail(store, s.id, args.from_seq) for s in active]
        if not tails and not args.follow:
            hint = "one job's events, finished ones too: specialists feed --job ID"
            print(f"no active jobs ({hint})", file=sys.stderr)
            return 0
    _emit(tails, args.json)
    if not args.follow:
        return 0
    # One job: stop after its final event (a tree: after every known job's). All jobs: keep
    # watching, new jobs included.
    watch_new = job is None
    known = {t.job_id for t in tails} | seen_at_start
    last_health = time.monotonic()
    while (
        watch_new or not all(t.ended for t in tails) or _more_below(args, store, root, tails, known)
    ):
        time.sleep(FOLLOW_POLL_S)
        _emit(tails, args.json)
        if time.monotonic() - last_health > HEALTH_CHECK_S:
            last_health = time.monotonic()
            for tail in tails:
                # A dead supervisor never writes its final event: recovery writes it for us.
                if not tail.ended:
                    current_status(store, tail.job_id)
            if root is not None and args.tree:
                tails += [_Tail(store, i, 0) for i in _descendants(store, root, known)]
                known.update(t.job_id for t in tails)
            if watch_new:
                fresh = [i for i in store.list_ids() if i not in known]
                known.update(fresh)
                tails.extend(_Tail(store, i, 0) for i in fresh)
            tails = [t for t in tails if not t.ended] if watch_new else tails
    _emit(tails, args.json)
    return 0


def _more_below(
    args: argparse.Namespace, store: JobStore, root: str | None, tails: list[_Tail], known: set[str]
) -> bool:
    """A tree whose known jobs all ended may still have a child that started at the end
    (made known here, so the next look for descendants does not tail it twice)."""
    if root is None or not args.tree:
        return False
    fresh = _descendants(store, root, known)
    known.update(fresh)
    tails += [_Tail(store, i, 0) for i in fresh]
    return bool(fresh)


def _emit(tails: list[_Tail], as_json: bool) -> None:
    from specialists.events.lines import feed_line

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
            print(feed_line(tail.job_id, tail.name, tail.started_ms, ev))
    if batch:
        sys.stdout.flush()
