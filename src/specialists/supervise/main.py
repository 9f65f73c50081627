"""A detached supervisor: `python -m specialists _supervise <job_dir>` (specialists/__main__.py
boots the features first), or with `--reattach` one that takes over a running job whose
supervisor died (checkpoint.py).

It forks first, before anything heavy is imported: the parent stays behind as the job's
keeper (keeper.py), the child supervises."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from specialists.base.errors import bound_tracebacks
from specialists.supervise.argv import LOCK_FD_ENV, REATTACH_FLAG
from specialists.supervise.keeper import fork_keeper


def main(argv: list[str]) -> int:
    bound_tracebacks()
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    job_dir = Path(argv[0])
    fd_text = os.environ.pop(LOCK_FD_ENV, "")
    kept = fork_keeper(job_dir, int(fd_text) if fd_text else None)
    if kept is not None:
        return kept  # the keeper, once the supervisor has ended
    from specialists.supervise.detached import supervise  # the supervisor's imports: after

    return supervise(job_dir, fd_text, reattach=REATTACH_FLAG in argv[1:])
