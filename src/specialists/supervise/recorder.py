"""What the supervisor writes of a job: status.json, events.jsonl, and what the foreground sees.

status.json is rewritten (atomically) when something changed and on a heartbeat (due.py);
events are appended, except those a successor replays that were written before it
(checkpoint.py `Replay`). The agent's words become bounded `text` events (words.py). The
functions at the end keep the status's fields up to date from the agent's events; the
supervisor decides what is logged and when status.json is written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from specialists.base.errors import SpecialistsError
from specialists.base.lazy import logger
from specialists.runners.base import Activity, AgentHandle, Usage
from specialists.store.jobs import JobStore, now_ms
from specialists.store.records import JobRecord, JobStatus
from specialists.store.writer import JobWriter
from specialists.supervise.words import Words

if TYPE_CHECKING:
    from specialists.supervise.checkpoint import Replay

log = logger("specialists.supervisor")
LAST_TEXT_CHARS = 200  # status.json's last_text: what a view shows beside the job
# Activities that say what the agent is doing now (status.json's current_event).
_DOING = ("toolcall", "tool_execution", "thinking", "text", "tool_execution_end")


class Observer(Protocol):
    """Someone watching in-process (the foreground CLI)."""

    def on_text(self, text: str) -> None: ...

    def on_event(self, event: dict[str, object]) -> None: ...


class Recorder:
    def __init__(
        self,
        store: JobStore,
        record: JobRecord,
        observer: Observer | None,
        clock: Callable[[], float],
    ) -> None:
        self.store, self.record, self.observer, self.clock = store, record, observer, clock
        self.writer = JobWriter(store, record.id)
        self.job_dir = store.job_dir(record.id)
        previous, self.startup_notice = _previous_status(store, record.id)
        self.status = previous or JobStatus(id=record.id, specialist=record.specialist)
        self.finished = False  # the end is being or has been written: nothing else is
        self.dirty = False  # status-only changes not written yet
        self.saved_at = 0.0
        self.replay: Replay | None = None  # a successor's events written before it
        self.words = Words()

    def event(self, kind: str, **fields: object) -> None:
        if self.replay is not None and self.replay.seen(kind, fields):
            return  # written by the supervisor before us
        record = self.writer.append_event(kind, **fields)
        self.status.events = self.writer.seq
        if self.observer:
            self.show(lambda observer: observer.on_event(record))

    def notice(self, message: str) -> None:
        self.event("notice", message=message)

    def show(self, show: Callable[[Observer], None]) -> None:
        """Pass something to the foreground display; one that fails (a closed terminal) is
        dropped with a notice: the job never depends on it."""
        observer = self.observer
        if observer is None:
            return
        try:
            show(observer)
        except Exception as exc:
            log.exception("the foreground display failed")
            self.observer = None
            self.notice(f"the foreground display failed and was dropped: {exc!r}")

    def say(self, text: str) -> None:
        """A piece of the agent's answer: shown at once, logged by windows."""
        self.show(lambda observer: observer.on_text(text))
        for fields in self.words.add(text):
            self._said(fields)

    def words_end(self) -> None:
        """A block of answer text ended (another event came, or the job ends)."""
        self._said(self.words.end())

    def _said(self, fields: dict[str, object] | None) -> None:
        if fields is None:
            return
        self.event("text", **fields)
        self.status.last_text = str(fields["text"])[:LAST_TEXT_CHARS]
        self.dirty = True

    def save(self, agent: AgentHandle | None, *, force: bool = False) -> None:
        """Rewrite status.json if something changed (or `force`); `agent`: the runner's
        process now (a one-shot runner starts one per run)."""
        st = self.status
        if not self.finished:
            if agent is not None and agent.pid is not None and agent.pid != st.pid:
                st.pid, st.agent_start_time = agent.pid, agent.start_time
            if st.started_at_ms:
                st.elapsed_s = round((now_ms() - st.started_at_ms) / 1000, 1)
        if force or self.dirty:
            if not self.writer.write_status(st) and self.writer.failures_in_a_row == 1:
                log.warning(
                    "status.json not written (%s); kept in memory", self.writer.last_failure
                )
            self.saved_at = self.clock()
            self.dirty = False


def _previous_status(store: JobStore, job_id: str) -> tuple[JobStatus | None, str | None]:
    """The status the launcher wrote; a damaged one is replaced, and said so."""
    try:
        return store.read_status(job_id), None
    except (SpecialistsError, OSError, ValueError, TypeError) as exc:
        log.warning("status.json of job %s unreadable: %s", job_id, exc)
        return None, f"status.json was unreadable and has been rewritten: {exc}"


# --- what the agent's events change in status.json --------------------------------------


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
