"""What the agent's events change in status.json (pure: a JobStatus in, the same one out).

The supervisor decides what is logged and when status.json is written; these functions only
keep the record's fields (what the agent is doing, counts, tokens and cost) up to date.
"""

from __future__ import annotations

from specialists.jobs.records import JobRecord, JobStatus
from specialists.runners.base import Activity, Usage

# Activities that say what the agent is doing now (status.json's current_event).
_DOING = ("toolcall", "tool_execution", "thinking", "text", "tool_execution_end")


def open_status(
    st: JobStatus, rec: JobRecord, *, pid: int, start_time: int | None, now_ms: int
) -> None:
    """The fields a starting job's status takes from its launch record and supervisor."""
    st.status = "starting"
    st.runner = rec.runner
    st.model = rec.model
    st.backend = rec.model.split("/", 1)[0] if rec.model and "/" in rec.model else rec.runner
    st.supervisor_pid = pid
    st.supervisor_start_time = start_time
    st.started_at_ms = st.started_at_ms or now_ms
    st.cwd = rec.cwd
    st.parent_id = rec.parent_id
    st.bead_id = rec.bead_id
    st.keep_alive = rec.keep_alive
    labels = rec.labels()
    st.title, st.workflow_key = labels["title"], labels["workflow_key"]


def note_activity(st: JobStatus, ev: Activity) -> None:
    kind = ev.event
    if kind == "progress":  # a workflow's counts and its children's spending
        st.progress = dict(ev.fields)
        return
    if kind in _DOING:
        st.current_event = kind
    # Keep the toolcall's `bash(echo hi)` while the agent reports plain `bash` running.
    keep = bool(
        st.current_tool and ev.current_tool and st.current_tool.startswith(ev.current_tool + "(")
    )
    if ev.current_tool is not None and not keep:
        st.current_tool = ev.current_tool
    elif kind == "tool_execution_end":
        st.current_tool = None
    if ev.log and kind == "toolcall":  # status-only toolcall hints precede the real one
        st.tool_calls += 1
    if ev.log and kind == "turn_end":
        st.turns += 1


def add_usage(st: JobStatus, ev: Usage) -> None:
    t = st.tokens
    for key, value in (
        ("input", ev.input_tokens),
        ("output", ev.output_tokens),
        ("cache_read", ev.cache_read_tokens),
        ("cache_write", ev.cache_write_tokens),
    ):
        if value:
            t[key] = t.get(key, 0) + value
    st.cost_usd = round(st.cost_usd + ev.cost_usd, 6)
