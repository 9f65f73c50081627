"""The news a project's job store hands a job's owner (jobs/store.py `OwnerNews`).

One object for every store that may record a job's end, so that no reader that happens to
run crash recovery forgets part of it: the completion notice (notices.py) and, for a proc
job whose end recovery wrote, its one job_exit (procs/news.py); and, for a job linked to a
goal mission, that goal's step (missions/news.py). `news=None` stays for stores that only read.
"""

from __future__ import annotations

from specialists import notices
from specialists.missions.news import MissionNews
from specialists.procs.news import ProcNews

NEWS = MissionNews(ProcNews(notices))
