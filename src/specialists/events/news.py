"""The news every recovering store is built with (`JobStore(..., news=NEWS)`).

One object for every store that may record a job's end, so that no reader that happens to
run crash recovery forgets part of it: the completion notice (notices.py) and, for a proc
job whose end recovery wrote, its one job_exit (procs/news.py); for a job linked to a goal
mission, that goal's step (missions/news.py). It is also how recovery takes over a remote
job instead of ending it (supervise/revive.py). `news=None` stays for stores that only read.
"""

from __future__ import annotations

from pathlib import Path

from specialists.events import notices
from specialists.features.missions.news import MissionNews
from specialists.features.procs.news import ProcNews


class News(MissionNews):
    def revive(self, state_dir: Path, job_id: str, lock_fd: int) -> int | str | None:
        from specialists.supervise.revive import revive

        return revive(state_dir, job_id, lock_fd)


NEWS = News(ProcNews(notices))
