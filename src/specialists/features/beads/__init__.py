"""Beads runs: track a specialist job as a bead (an issue in the `bd` tracker).

Three parts, one concern each:

- notes.py   pure: the bead record, the tracking policy, titles, prompts and pinned notes
- client.py  the bd client over the short-command seam (one method per bd command)
- jobs.py    the job hooks: `track` at planning, `bead_prompt_for` for `run --bead`,
             `on_job_finished` at the end, `settle_crashed` for crashed supervisors

Nothing here prints; functions return warnings (or raise BeadsError) for the interfaces to
render. See docs/beads.md for the policy and the exact bd commands.
"""

from specialists.features.beads.client import (
    BD_ENV,
    BeadsClient,
    bd_path,
    git_head,
    project_uses_beads,
)
from specialists.features.beads.jobs import (
    SETTLED_MARKER,
    bead_prompt_for,
    on_job_finished,
    settle_crashed,
    track,
)
from specialists.features.beads.notes import (
    MAX_NOTES_CHARS,
    Bead,
    BeadsError,
    bead_prompt,
    check_bead_id,
    close_reason,
    collect_blockers,
    pin_notes,
    prompt_hash,
    run_title,
    should_track,
)

__all__ = [
    "BD_ENV",
    "MAX_NOTES_CHARS",
    "SETTLED_MARKER",
    "Bead",
    "BeadsClient",
    "BeadsError",
    "bd_path",
    "bead_prompt",
    "bead_prompt_for",
    "check_bead_id",
    "close_reason",
    "collect_blockers",
    "git_head",
    "on_job_finished",
    "pin_notes",
    "project_uses_beads",
    "prompt_hash",
    "run_title",
    "settle_crashed",
    "should_track",
    "track",
]
