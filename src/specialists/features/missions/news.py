"""A linked job's news drives its goal mission: a subscriber of the job's one teller
(supervise/news.py `tell`, `HOOKS.heard`).

`heard` runs whenever a job has news (a keep-alive answer, its end; from its supervisor or
from crash recovery), once its status is written and its owners told: when the job is linked
to a goal mission, one goal step (goal.py) and its notice to the mission's owner. It never
raises into the supervisor (R-E5): a problem is logged. Kept light at import: the mission
room is imported only for a linked job.
"""

from __future__ import annotations

import os
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from specialists.supervise.hooks import JobEnd


def heard(ending: JobEnd) -> None:
    """The job's news, told (supervise/hooks.py `HOOKS.heard`)."""
    step(ending.store.root, ending.record.id)


def step(state_dir: Path, job_id: str) -> None:
    """The news of a job linked to a goal mission drives one goal step, and its notice is
    posted; a problem is logged, never raised."""
    # Two lstats for a job that is on no mission (the common case): nothing else loads.
    link = os.path.join(state_dir, "missions", ".by-job", job_id)
    if not (os.path.lexists(link + ".json") or os.path.lexists(link)):  # 0.1.0's: no suffix
        return
    import logging

    from specialists.base.errors import SpecialistsError

    try:
        from specialists.features.missions.driver import idle_turn

        idle_turn(state_dir, job_id)
    except (SpecialistsError, OSError) as exc:
        logging.getLogger("specialists.features.missions").warning(
            "goal step for job %s not taken: %s", job_id, exc
        )
