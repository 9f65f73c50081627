"""`specialists run --attach`: a foreground run that can be detached.

A plain foreground run supervises its job in this very process (it streams the answer as it
is written), so it cannot leave the job behind: Ctrl-C there stops the job. With --attach the
job gets its own detached supervisor, as with --background, and this process only follows it:
its events on stderr, then its answer on stdout and the exit code of a foreground run. Ctrl-C
(SIGINT), SIGTERM or SIGHUP (the terminal closed) *detach*: the job keeps running, and the
lines printed say how to follow it and read its answer.
"""

from __future__ import annotations

import signal
import sys
import time
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specialists.jobs.records import JobStatus
    from specialists.project import Project

POLL_S = 0.05
DETACH_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Detach(Exception):
    pass


def _raise(signum: int, frame: FrameType | None) -> None:
    raise _Detach(signum)


def follow(project: Project, job_id: str, *, as_json: bool) -> JobStatus | None:
    """Follow the job to its end (its final status) or until detached (None)."""
    from specialists.jobs.lines import feed_line
    from specialists.jobs.store import read_event_lines
    from specialists.jobs.view import current_status, name_of, read_answer

    store = project.store
    before = {s: signal.signal(s, _raise) for s in DETACH_SIGNALS}
    print(f"job {job_id} started; Ctrl-C detaches (the job keeps running)", file=sys.stderr)
    offset = 0
    try:
        while True:
            events, offset = read_event_lines(store.events_path(job_id), offset)
            st = current_status(store, job_id)
            for ev in events:
                print(feed_line(job_id, name_of(st), st.started_at_ms, ev), file=sys.stderr)
            if not st.active or (st.status == "waiting" and st.keep_alive):
                break
            time.sleep(POLL_S)
    except _Detach:
        print(
            f"detached: job {job_id} keeps running. Follow it: specialists feed --job "
            f"{job_id} --follow; its answer: specialists result {job_id} --wait",
            file=sys.stderr,
        )
        return None
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    answer = read_answer(store, st)
    if as_json:
        import json

        print(json.dumps({"id": st.id, "status": st.status, "error": st.error, "result": answer}))
    elif answer:
        print(answer)
    if st.status == "error":
        print(f"error: job {job_id} failed: {st.error}", file=sys.stderr)
    elif st.status == "waiting":
        print(
            f"job {job_id} waits for a follow-up: specialists follow-up {job_id} ...",
            file=sys.stderr,
        )
    return st
