"""Which agent tools a job may have, by its permission tier: the one table every front uses.

A tool that only keeps the job's own bookkeeping (timers, its inbox, reports and asks to its
supervisor, mission records, a pure computation) is offered to every tier. A tool that needs
a power (vocab.TIER_POWERS) is offered only to a tier that grants it:

| tool | needs | why |
|---|---|---|
| bg_run | command | runs `sh -c` on the host, outside any sandbox the agent has |
| bg_output, bg_list, bg_cancel | command | only bg_run's jobs to read or stop |
| squash_sandbox | write | writes a child's changes into the caller's tree |
| claim_files | write | only a job that may write has files to claim |
| merge_queue | write | merges sandboxes and starts resolver jobs |
| spawn_thread | (none) | the child's tier: the narrower of its own and its parent's |

So READ_ONLY gets no tool that runs a command, writes a file or merges a sandbox; BASH_ONLY
gets the bg_* tools; LOW gets squash_sandbox; MEDIUM and HIGH get everything. A caller that
is not one of our jobs (a person's Claude Code or pi session) has no tier: it gets every
tool. The fronts list only what `allowed` says, and `toolset.table.call_tool` refuses the
rest, so a front that forgot the filter still cannot run one.
"""

from __future__ import annotations

from pathlib import Path

from specialists.base.vocab import PERMISSION_TIERS, TIER_POWERS

TOOL_NEEDS: dict[str, str] = {
    "bg_run": "command",
    "bg_output": "command",
    "bg_list": "command",
    "bg_cancel": "command",
    "squash_sandbox": "write",
    "claim_files": "write",
    "merge_queue": "write",
}
# Every tool of the registry that needs no power; a new tool must be placed in one of the two
# (tests/unit/test_tool_tiers.py), so none is offered to a read-only job by accident.
NEEDS_NOTHING = frozenset(
    {
        "sleep",
        "sleep_until",
        "sleep_until_event",
        "timer_cancel",
        "spawn_thread",
        "report_to_parent",
        "close_thread",
        "send_message_to_child",
        "assess_coverage",
        "contact_supervisor",
        "list_asks",
        "reply_to_ask",
        "mission",
        "release_files",
        "list_claims",
    }
)
FAIL_CLOSED_TIER = "READ_ONLY"  # a job whose record cannot be read gets the least


def allowed(tool: str, tier: str | None) -> bool:
    """May a caller of `tier` (None: not one of our jobs) use `tool`?"""
    if tier is None:
        return True
    if tool in NEEDS_NOTHING:
        return True
    need = TOOL_NEEDS.get(tool)
    return need is not None and need in TIER_POWERS.get(tier, frozenset())


def refusal(tool: str, tier: str) -> str:
    """The one line a job gets for a tool its tier does not grant."""
    need = TOOL_NEEDS.get(tool)
    what = {"command": "runs a command", "write": "writes files"}.get(need or "", "")
    because = f": it {what}, which the tier does not grant" if what else ""
    return f"{tool} is not available to a {tier} job{because}"


def job_tier(state_root: Path, job_id: str) -> str:
    """The job's permission tier, read from its record (never from the caller's word); a
    record that cannot be read, or an unknown tier, is the least trusted tier."""
    from specialists.base.errors import SpecialistsError
    from specialists.store.jobs import JobStore

    try:
        tier = JobStore(state_root, news=None).read_record(job_id).permission
    except (SpecialistsError, OSError, ValueError, KeyError):
        return FAIL_CLOSED_TIER
    return tier if tier in PERMISSION_TIERS else FAIL_CLOSED_TIER
