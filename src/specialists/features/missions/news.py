"""A linked job's news drives its goal mission: a poster of the store's news (store/news.py).

`post_for_job` runs whenever a job has news (a keep-alive answer, its end; from its
supervisor or from crash recovery), after the owner's notice: when the job is linked to a
goal mission, one goal step (goal.py) and its notice to the mission's owner. It never
raises into the supervisor (R-E5): a problem is logged. Kept light at import
(`status` loads this module): the mission room is imported only for a linked job.
"""

from __future__ import annotations

import os
from pathlib import Path


def post_for_job(state_dir: Path, job_id: str) -> None:
    """The news of a job linked to a goal mission drives one goal step (store.news poster)."""
    # Two lstats for a job that is on no mission (the common case): nothing else loads.
    link = os.path.join(state_dir, "missions", ".by-job", job_id)
    if os.path.lexists(link + ".json") or os.path.lexists(link):  # 0.1.0's had no suffix
        drive_goal(state_dir, job_id)


def drive_goal(state_dir: Path, job_id: str) -> None:
    """Run one goal step for `job_id`'s mission and post its notice; logged, never raised."""
    import logging

    from specialists.base.errors import SpecialistsError

    try:
        from specialists.features.missions.driver import idle_turn

        idle_turn(state_dir, job_id)
    except (SpecialistsError, OSError) as exc:
        logging.getLogger("specialists.features.missions").warning(
            "goal step for job %s not taken: %s", job_id, exc
        )
