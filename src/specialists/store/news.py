"""What a job's news means outside the job, registered by those it concerns.

A job has news when it answers (a keep-alive job) or ends; its end is recorded by its own
supervisor or, after a crash, by whichever reader finds it dead (recovery.py). Both go
through `NEWS`, so no path forgets part of it. The rooms above register what they do with it
when the composition root boots them (`specialists.project.boot`):

    posters     each time the job has news: the completion notice for its owner, a goal
                mission's next step (in registration order)
    recovered   a job ends without its supervisor (a crash, or it never started): its end
                (the status about to be written) told as its supervisor tells it, before
                the final status (supervise/news.py `tell`: job_exit, child_closed, notices)
    clearers    its result was read: notices not delivered yet are dropped
    revivers    before recovery ends a job: one may take it over instead (a remote agent
                that still runs)

A hook never raises into the writer: what fails is logged where it happened. Posting news
before the hooks are registered is a bug (a process that forgot to boot would drop every
owner's notice silently), unless the composition root left `boot` to do it on first use
(`status`, `result` and `feed` boot the features only when a job's news needs them).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from specialists.base.errors import Bug

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.store.records import JobStatus

Poster = Callable[[Path, str], object]  # (state dir, job id)
Teller = Callable[[Path, "JobStatus"], object]  # (state dir, the ended status, not yet written)
Reviver = Callable[[Path, str, int], "int | str | None"]  # (state dir, job id, lock fd)


class News:
    def __init__(self) -> None:
        self.posters: list[Poster] = []
        self.recovered: list[Teller] = []
        self.clearers: list[Poster] = []
        self.revivers: list[Reviver] = []
        self.booted = False
        self.boot: Callable[[], object] | None = None

    def _check(self) -> None:
        if not self.booted and self.boot is not None:
            self.boot()
        if not self.booted:
            raise Bug("job news before the features were booted (specialists.project.boot)")

    def post_for_job(self, state_dir: Path, job_id: str) -> bool:
        """Tell whoever must hear of the job's news; True when the first poster (the
        owner's notice) posted something."""
        self._check()
        told = False
        for n, poster in enumerate(self.posters):
            result = poster(state_dir, job_id)
            told = told or (n == 0 and bool(result))
        return told

    def recovered_end(self, state_dir: Path, status: JobStatus) -> None:
        self._check()
        for hook in self.recovered:
            hook(state_dir, status)

    def clear(self, state_dir: Path, job_id: str) -> None:
        self._check()
        for clearer in self.clearers:
            clearer(state_dir, job_id)

    def revive(self, state_dir: Path, job_id: str, lock_fd: int) -> int | str | None:
        self._check()
        for reviver in self.revivers:
            answer = reviver(state_dir, job_id, lock_fd)
            if answer is not None:
                return answer
        return None


NEWS = News()
