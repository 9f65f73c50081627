"""Beads runs: track a specialist job as a bead (an issue in the `bd` tracker).

Three parts, one concern each:

- notes.py   pure: the bead record, the tracking policy, titles, prompts and pinned notes
- client.py  the bd client over the short-command seam (one method per bd command)
- jobs.py    the job hooks: `track` at planning, `bead_prompt_for` for `run --bead`,
             `on_job_finished` at the end, `settle_crashed` for crashed supervisors

Nothing here prints; functions return warnings (or raise BeadsError) for the interfaces to
render. See docs/beads.md for the policy and the exact bd commands.
"""
