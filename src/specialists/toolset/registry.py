"""Every agent tool, in one table, and the shared system prompt section (R-G1)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from specialists.events.owners import owner_job_id
from specialists.toolset.ask_tools import ASK_TOOLS
from specialists.toolset.bg_tools import BG_TOOLS
from specialists.toolset.mission_tools import MISSION_TOOLS
from specialists.toolset.table import AgentTool
from specialists.toolset.thread_tools import THREAD_TOOLS
from specialists.toolset.tiers import FAIL_CLOSED_TIER, allowed, job_tier, refusal
from specialists.toolset.timer_tools import TIMER_TOOLS
from specialists.vocab import NODE_COPY_ENV, PERMISSION_TIERS

TOOLS: tuple[AgentTool, ...] = (
    *BG_TOOLS,
    *TIMER_TOOLS,
    *THREAD_TOOLS,
    *ASK_TOOLS,
    *MISSION_TOOLS,
)

GUIDANCE_HEADER = "## Working without blocking (specialists)"
GUIDANCE_CORE = (
    "Never wait on slow work: dispatch it and yield. Never poll or sleep in a loop. Results "
    "arrive later as [specialists event] messages. Do not fabricate the results of work you "
    "started and have not seen."
)


def tool_named(name: str) -> AgentTool | None:
    return next((t for t in TOOLS if t.name == name), None)


def offered(
    *,
    thread: bool,
    job: bool = True,
    tier: str | None = None,
    env: Mapping[str, str] = os.environ,
) -> tuple[AgentTool, ...]:
    """The tools a caller gets: child-scoped ones (report_to_parent, close_thread) only when
    it is a thread, i.e. its job record has a `thread` (not a `parent_id`, which a continued
    job has too; a root session's children have a thread but no parent job); job-scoped ones
    (contact_supervisor) only when it is one of our jobs; only those its permission `tier`
    grants (toolset/tiers.py; None: not a job, every tool). None on a Ray node that works in
    a copy: every tool here keeps its state in the job's store, which is not on that node."""
    if env.get(NODE_COPY_ENV):
        return ()
    return tuple(
        t
        for t in TOOLS
        if (t.scope == "any" or (t.scope == "child" and thread) or (t.scope == "job" and job))
        and allowed(t.name, tier)
    )


def offered_to(
    state_root: Path, owner: str, env: Mapping[str, str] = os.environ
) -> tuple[AgentTool, ...]:
    """The tools of the caller `owner` (a job's `job-<id>`, or an outside session's key), from
    its job's record: a thread's tools if it is one, its tier's tools, the least when the
    record cannot be read. What the MCP server and the pi sidecar list."""
    job_id = owner_job_id(owner)
    if job_id is None:
        return offered(thread=False, job=False, env=env)
    from specialists.errors import SpecialistsError
    from specialists.jobs.store import JobStore

    try:
        record = JobStore(state_root, news=None).read_record(job_id)
        thread, tier = bool(record.thread), record.permission
    except (SpecialistsError, OSError, ValueError, KeyError):
        thread, tier = False, FAIL_CLOSED_TIER  # no readable record: a root job, the least
    if tier not in PERMISSION_TIERS:
        tier = FAIL_CLOSED_TIER
    return offered(thread=thread, job=True, tier=tier, env=env)


def tier_refusal(name: str, state_root: Path, owner: str) -> str | None:
    """Why a job may not use the table's tool `name` (its tier does not grant it), or None:
    the line a front gives for a tool it did not offer for that reason."""
    job_id = owner_job_id(owner)
    if tool_named(name) is None or job_id is None:
        return None
    tier = job_tier(state_root, job_id)
    return None if allowed(name, tier) else refusal(name, tier)


def prompt_guidance(tools: tuple[AgentTool, ...] = TOOLS) -> str:
    """One system-prompt section: the core rules plus each offered tool's own line."""
    lines = [GUIDANCE_HEADER, GUIDANCE_CORE]
    lines += [f"- {t.guidance}" for t in tools if t.guidance]
    return "\n".join(lines)
