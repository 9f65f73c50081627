"""`/specialists` in pi (R-U2): the text for each subcommand, built on the tool table.

    /specialists                the overview: timers, jobs, threads, undelivered events
    /specialists timers         pending timers
    /specialists jobs           background jobs (the bg_list tool, once the table has it)
    /specialists threads        this session's threads as a tree (workflow children too)
    /specialists cancel <id|all> cancel a timer (tm-...) or a background job, or all of them
    /specialists config         the settings in force and where they come from

Cancelling goes through the same tools the model calls, so a person and the model see the
same rules and the same answers. What this version does not have yet says so.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from specialists.base.errors import UserError
from specialists.events.inbox import Inbox
from specialists.events.timers import TimerStore
from specialists.native.agent_tools import AgentTool, ToolCall, call_tool

if TYPE_CHECKING:
    from specialists.fronts.pi.ops import Front

USAGE = "usage: /specialists [jobs | timers | threads | cancel <id|all> | config]"
NO_JOBS = "background jobs: not available in this version yet (the tool table has no bg_list)"


def run_command(front: Front, args: str) -> str:
    words = args.split()
    if not words:
        return overview(front)
    sub, rest = words[0], words[1:]
    if sub == "timers" and not rest:
        return timers_text(front)
    if sub == "jobs" and not rest:
        return jobs_text(front)
    if sub == "threads" and not rest:
        return threads_text(front)
    if sub == "cancel" and len(rest) == 1:
        return cancel(front, rest[0])
    if sub == "config" and not rest:
        return config_text(front)
    raise UserError(f"unknown or incomplete subcommand {args.strip()[:80]!r}", hint=USAGE)


def overview(front: Front) -> str:
    counts = front.counts()
    pending = Inbox(front.state_root, front.owner).has_pending()
    lines = [
        f"specialists for {front.owner} ({front.state_root})",
        f"  timers: {counts['timers']} pending",
        f"  jobs: {counts['jobs']} running" if _tool(front, "bg_list") else f"  {NO_JOBS}",
        "  threads: /specialists threads",
        f"  inbox: {'events waiting for delivery' if pending else 'nothing undelivered'}",
        f"  bash guard: {front.settings.bash.guard}",
    ]
    return "\n".join(lines + [f"  problem: {p}" for p in front.problems])


def threads_text(front: Front) -> str:
    """This session's threads as a tree: its children, theirs, and those of the jobs it
    started (a workflow's children under the workflow)."""
    from specialists.features.threads.listing import rows_of, tree_order

    rows, problems = rows_of(front.state_root, {front.owner})
    if not rows:
        return "no threads" + "".join(f"\n  problem: {p[:200]}" for p in problems[:3])
    lines = [f"{len(rows)} thread(s):"]
    for depth, child in tree_order(rows):
        r = child.record
        phase = child.phase + (" (failed)" if child.failed else "")
        text = " ".join(r.instructions.split())[:60]
        under = f" (of {r.parent})" if depth == 0 and r.parent != front.owner else ""
        lines.append(
            f"{'  ' * (depth + 1)}{r.id[:12]}  {phase}  job {r.job_id} {r.runner}{under}  {text}"
        )
    return "\n".join(lines + [f"  problem: {p[:200]}" for p in problems[:3]])


def timers_text(front: Front) -> str:
    pending = TimerStore(front.state_root, front.owner).pending()
    if not pending:
        return "no pending timers"
    now_ms = int((front.clock or time.time)() * 1000)
    lines = [f"{len(pending)} pending timer(s):"]
    for timer in pending:
        left_s = max(0, -((now_ms - timer.due_ms) // 1000))  # rounded up
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timer.due_ms / 1000))
        note = f"  {timer.note}" if timer.note else ""
        lines.append(f"  {timer.id}  due {when} (in {left_s} s){note}")
    return "\n".join(lines)


def jobs_text(front: Front) -> str:
    tool = _tool(front, "bg_list")
    if tool is None:
        return NO_JOBS
    return call_tool(tool, ToolCall({}, front.caller(), call_id="specialists-command")).text


def cancel(front: Front, target: str) -> str:
    timer_cancel = _tool(front, "timer_cancel")
    bg_cancel = _tool(front, "bg_cancel")
    calls: list[tuple[AgentTool, dict[str, object]]] = []
    if target == "all":
        calls = [(t, {"all": True}) for t in (timer_cancel, bg_cancel) if t is not None]
    elif target.startswith("tm-") and timer_cancel is not None:
        calls = [(timer_cancel, {"id": target})]
    elif bg_cancel is not None:
        calls = [(bg_cancel, {"id": target})]
    else:
        raise UserError(f"no timer {target[:40]!r}", hint="timer ids start with tm-; " + NO_JOBS)
    texts = []
    for tool, args in calls:
        reply = call_tool(tool, ToolCall(args, front.caller(), call_id="specialists-command"))
        if reply.is_error:
            raise UserError(str(reply.data.get("error") or reply.text))
        texts.append(reply.text)
    return "\n".join(texts)


def config_text(front: Front) -> str:
    path = front.state_root / "config.toml"
    lines = [f"config: {path}" + ("" if path.exists() else " (absent: the defaults apply)")]
    for section in ("bash", "jobs", "events", "overflow", "timers"):
        values = getattr(front.settings, section)._asdict()
        lines.append(f"  [{section}] " + ", ".join(f"{k} = {v!r}" for k, v in values.items()))
    return "\n".join(lines + [f"  problem: {p}" for p in front.problems])


def _tool(front: Front, name: str) -> AgentTool | None:
    return next((t for t in front.offered_tools() if t.name == name), None)
