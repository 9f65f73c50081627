"""The two JSON records of a job: job.json (immutable launch record) and status.json.

Each field is declared once (see fields.py): its annotation is the type the checker and the
reader both use, its value the default; a field without a value is required.
"""

from __future__ import annotations

from specialists.base.display import first_line
from specialists.store.fields import EMPTY, Declared, check_schema

TYPE_CHECKING = False  # no `typing` at run time: `status` and `feed` read this
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 1
TITLE_CHARS = 120  # status.json's title: a task's first line, for a view's row

ACTIVE_STATES = frozenset({"starting", "running", "waiting"})
# A job an interrupt paused is `waiting` (idle, taking follow-ups: the seeds' word) with this
# current_event, so every view can say it is paused rather than that it answered.
PAUSED_EVENT = "interrupted"
# A usage limit paused it until `paused_until_ms` (waiting), or holds its start (starting).
LIMIT_EVENT = "usage_limit"
HELD_EVENT = "held"
TERMINAL_STATES = frozenset({"done", "error", "cancelled"})
ALL_STATES = ACTIVE_STATES | TERMINAL_STATES


class _Versioned(Declared):
    """A record with a `schema` version: a newer one is refused rather than misread."""

    @classmethod
    def _before_read(cls, data: dict[str, Any], where: str) -> None:
        check_schema(data, SCHEMA_VERSION, where)


class JobRecord(_Versioned):
    """job.json: what was launched. Written once by the launcher, never changed."""

    _what = "job.json"
    id: str
    specialist: str
    prompt: str
    task: str  # the rendered task sent to the agent (template applied, pre-scripts later)
    runner: str
    model: str | None
    cwd: str
    created_at_ms: int
    system_prompt: str = ""
    permission: str = "MEDIUM"
    thinking_level: str | None = None
    fallback_model: str | None = None
    timeout_ms: int | None = None
    stall_timeout_ms: int | None = None
    stall_kill: bool = False
    keep_alive: bool = False
    idle_timeout_ms: int | None = None
    max_turns: int | None = None
    max_tokens: int | None = None
    response_format: str | None = None
    skill_paths: list[str] = EMPTY
    pre_scripts: list[dict[str, Any]] = EMPTY
    post_scripts: list[dict[str, Any]] = EMPTY
    runner_options: dict[str, Any] = EMPTY
    # the definition's strict tool allowlist (catalog/tools.py names); None: the tier's tools
    tools: list[str] | None = None
    parent_id: str | None = None  # the job this one continues (--continue / resume)
    resume_session: str | None = None  # agent session to continue from
    bead_id: str | None = None
    owns_bead: bool = False
    foreground: bool = False
    source: str | None = None  # definition file, for provenance
    executor: dict[str, Any] = EMPTY  # {}: this machine; else where it runs (executors/)
    owner: list[str] = EMPTY  # who asked: keys its completion notice is addressed to (owner.py)
    thread: dict[str, Any] = EMPTY  # a thread job: id, parent owner, stack (threads/records.py)
    sandbox: str | None = None  # the sandbox (git worktree) the job runs in (sandbox/)
    requires_worktree: bool = False  # its definition asks for a sandbox
    auto_commit: bool = True  # its sandbox's work is committed when it ends (R-S3)
    commit_on_waiting: bool = False  # and at each answer it then waits after (a checkpoint)
    bare: bool = False  # the runner adds nothing of its own to the system prompt
    system_prompt_mode: str = "append"  # or "replace" the agent's own system prompt
    gate: dict[str, Any] = EMPTY  # a command run after it ends done; failing fails it (gates/)
    attention: dict[str, Any] = EMPTY  # resolved attention thresholds (attention/settings.py)
    watchdog: dict[str, Any] = EMPTY  # resolved watchdog settings; `reviews` on a review job
    start_key: str | None = None  # the key it was started by, once (store/keys.py)
    # What this job's tree may spend: tokens, cost_usd, approved_usd (a fan-out pre-approved),
    # mission (the mission whose ceiling it counts against) (features/spend/ceiling.py)
    ceiling: dict[str, Any] = EMPTY
    schema: int = SCHEMA_VERSION

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"JobRecord is immutable; use .replace({name}=...)")

    def replace(self, **changes: Any) -> JobRecord:
        return JobRecord(**{**self.to_dict(), **changes})

    def labels(self) -> dict[str, str | None]:
        """What a view calls the job beside its specialist (status.json's `title` and
        `workflow_key`): the task's first line, and a workflow child's key."""
        key = self.thread.get("workflow_key") if self.thread else None
        return {
            "title": first_line(self.prompt, TITLE_CHARS) or None,
            "workflow_key": key if isinstance(key, str) and key else None,
        }


class JobStatus(_Versioned):
    """status.json: the job's current state. Only its supervisor writes it."""

    _what = "status.json"
    _choices = {"status": ALL_STATES}
    id: str
    specialist: str
    status: str = "starting"
    current_event: str | None = None
    current_tool: str | None = None
    model: str | None = None
    backend: str | None = None
    runner: str | None = None
    pid: int | None = None  # the agent's pid (seed field name)
    agent_start_time: int | None = None
    supervisor_pid: int | None = None
    supervisor_start_time: int | None = None
    started_at_ms: int = 0
    elapsed_s: float = 0.0
    last_event_at_ms: int | None = None
    finished_at_ms: int | None = None
    bead_id: str | None = None
    session_file: str | None = None
    error: str | None = None
    stalled: bool = False
    exit_code: int | None = None
    cwd: str | None = None
    parent_id: str | None = None
    tokens: dict[str, int] = EMPTY
    cost_usd: float = 0.0
    needs_attention: str | None = None
    tool_open_since_ms: int | None = None  # when the oldest open tool call started
    title: str | None = None  # what the row is: the task's first line (store/records.py `labels`)
    workflow_key: str | None = None  # a workflow child's key
    last_text: str | None = None  # the agent's latest words, an excerpt (supervise/words.py)
    progress: dict[str, Any] = EMPTY  # a workflow's children counts (workflows/progress.py)
    ceilings: list[dict[str, Any]] = EMPTY  # each ceiling it counts against, as last counted
    paused_until_ms: int | None = None  # a usage limit's reset: paused until then (or held)
    keep_alive: bool = False
    telling: bool = False  # ended; its sessions not yet told (a crash here: recovery tells)
    events: int = 0
    tool_calls: int = 0
    turns: int = 0
    schema: int = SCHEMA_VERSION

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_STATES
