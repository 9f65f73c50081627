"""What a job's news means outside the job, registered by those it concerns.

A job's end is recorded by its own supervisor or, after a crash, by whichever reader finds it
dead (recovery.py). Both tell it through the one teller (supervise/news.py `tell`), which sits
above this room; the composition root (`specialists.project.boot`) hands it in here:

    teller      a job ends without its supervisor (a crash, or it never started): its end
                (the status about to be written) told as its supervisor tells it, with the
                writing of its final status in the middle (`record`): renderings for job
                owners before it, the completion notice and the subscribers after it
    clearers    its result was read: notices not delivered yet are dropped
    revivers    before recovery ends a job: one may take it over instead (a remote agent
                that still runs)

A hook never raises into the writer: what fails is logged where it happened. Telling or
recovering a job before the hooks are registered is a bug (a process that forgot to boot
would drop every owner's notice silently), unless the composition root left `boot` to do it
on first use (`status`, `result` and `feed` boot the features only when a job's news needs
them). The clearers need no boot: the composition root names them when it is imported.
"""

from __future__ import annotations

from collections.abc import Callable

from specialists.base.errors import Bug

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from specialists.store.records import JobStatus

Clearer = Callable[["str | Path", str], object]  # (state dir, job id)
# (state dir, the ended status not yet written, the writing of it, told=): record() is called
# once; `told`: its supervisor told the end and wrote its end event, then died
Teller = Callable[..., object]
Reviver = Callable[["Path", str, int], "int | str | None"]  # (state dir, job id, lock fd)


class News:
    def __init__(self) -> None:
        self.teller: Teller | None = None
        self.clearers: list[Clearer] = []
        self.revivers: list[Reviver] = []
        self.booted = False
        self.boot: Callable[[], object] | None = None

    def check(self) -> None:
        if not self.booted and self.boot is not None:
            self.boot()
        if not self.booted:
            raise Bug("job news before the features were booted (specialists.project.boot)")

    def recovered_end(
        self, state_dir: Path, status: JobStatus, record: Callable[[], None], *, told: bool
    ) -> None:
        """Tell the end of a job recovery ends; `record` writes its final status, once;
        `told`: only what follows the status is left to tell."""
        self.check()
        if self.teller is None:
            record()
        else:
            self.teller(state_dir, status, record, told=told)

    def clear(self, state_dir: str | Path, job_id: str) -> None:
        if not self.clearers:  # named when the composition root is imported, before any boot
            self.check()
        for clearer in self.clearers:
            clearer(state_dir, job_id)

    def revive(self, state_dir: Path, job_id: str, lock_fd: int) -> int | str | None:
        self.check()
        for reviver in self.revivers:
            answer = reviver(state_dir, job_id, lock_fd)
            if answer is not None:
                return answer
        return None


NEWS = News()
