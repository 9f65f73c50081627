"""A detached supervisor: `python -m specialists _supervise <job_dir>`, or with `--reattach`
one that takes over a running job whose supervisor died (checkpoint.py).

It forks first, before anything is imported or booted: the parent stays behind as the job's
keeper (keeper.py) at a bare interpreter's size, the child boots and supervises. A fork
server (forks.py) starts a supervisor with `supervise` at once: it is the keeper itself."""

from __future__ import annotations

import os

from specialists.supervise.argv import LOCK_FD_ENV, REATTACH_FLAG
from specialists.supervise.keeper import LOG_FORMAT, fork_keeper

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def main(argv: list[str], boot: Callable[[], object]) -> int:
    """`boot`: the composition root's (specialists/__main__.py), run after the fork."""
    fd_text = os.environ.pop(LOCK_FD_ENV, "")
    kept = fork_keeper(argv[0], int(fd_text) if fd_text else None, boot)
    if kept is not None:
        return kept  # the keeper, once the supervisor has ended
    boot()
    return supervise(argv, fd_text)


def supervise(argv: list[str], fd_text: str) -> int:
    """Supervise the job `argv[0]` (the features booted) on the lock named by `fd_text`."""
    import logging
    from pathlib import Path

    from specialists.base.errors import bound_tracebacks
    from specialists.supervise.detached import supervise as run

    bound_tracebacks()
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    return run(Path(argv[0]), fd_text, reattach=REATTACH_FLAG in argv[1:])
