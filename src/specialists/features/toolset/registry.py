"""Every agent tool, in one table, and the shared system prompt section (R-G1)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from specialists.base.vocab import NODE_COPY_ENV
from specialists.features.asks.tools import ASK_TOOLS
from specialists.features.missions.tools import MISSION_TOOLS
from specialists.features.procs.tools import BG_TOOLS
from specialists.features.threads.tools import THREAD_TOOLS
from specialists.features.timers.tools import TIMER_TOOLS
from specialists.native.agent_tools import AgentTool

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
    *, thread: bool, job: bool = True, env: Mapping[str, str] = os.environ
) -> tuple[AgentTool, ...]:
    """The tools a caller gets: child-scoped ones (report_to_parent, close_thread) only when
    it is a thread, i.e. its job record has a `thread` (not a `parent_id`, which a continued
    job has too; a root session's children have a thread but no parent job); job-scoped ones
    (contact_supervisor) only when it is one of our jobs. None on a Ray node that works in a
    copy: every tool here keeps its state in the job's store, which is not on that node."""
    if env.get(NODE_COPY_ENV):
        return ()
    return tuple(
        t
        for t in TOOLS
        if t.scope == "any" or (t.scope == "child" and thread) or (t.scope == "job" and job)
    )


def prompt_guidance(tools: tuple[AgentTool, ...] = TOOLS) -> str:
    """One system-prompt section: the core rules plus each offered tool's own line."""
    lines = [GUIDANCE_HEADER, GUIDANCE_CORE]
    lines += [f"- {t.guidance}" for t in tools if t.guidance]
    return "\n".join(lines)
