"""The two JSON records of a job: job.json (immutable launch record) and status.json."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from specialists.errors import StoreError

SCHEMA_VERSION = 1

ACTIVE_STATES = frozenset({"starting", "running", "waiting"})
TERMINAL_STATES = frozenset({"done", "error", "cancelled"})
ALL_STATES = ACTIVE_STATES | TERMINAL_STATES


def _check_schema(data: dict[str, Any], what: str) -> None:
    version = data.get("schema", 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise StoreError(
            f"{what} has schema {version!r}, newer than this specialists understands",
            hint="upgrade specialists",
        )


def _from_dict(cls: Any, data: dict[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class JobRecord:
    """job.json: what was launched. Written once by the launcher, never changed."""

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
    skill_paths: list[str] = field(default_factory=list)
    pre_scripts: list[dict[str, Any]] = field(default_factory=list)
    post_scripts: list[dict[str, Any]] = field(default_factory=list)
    runner_options: dict[str, Any] = field(default_factory=dict)
    parent_id: str | None = None  # the job this one continues (--continue / resume)
    resume_session: str | None = None  # agent session to continue from
    bead_id: str | None = None
    owns_bead: bool = False
    foreground: bool = False
    source: str | None = None  # definition file, for provenance
    schema: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobRecord:
        _check_schema(data, "job.json")
        try:
            return _from_dict(cls, data)
        except TypeError as exc:
            raise StoreError(f"job.json is missing fields: {exc}") from exc


@dataclass
class JobStatus:
    """status.json: the job's current state. Only its supervisor writes it."""

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
    tokens: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    needs_attention: str | None = None
    keep_alive: bool = False
    events: int = 0
    tool_calls: int = 0
    turns: int = 0
    schema: int = SCHEMA_VERSION

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_STATES

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobStatus:
        _check_schema(data, "status.json")
        if not isinstance(data.get("id"), str) or not isinstance(data.get("specialist"), str):
            raise StoreError("status.json lacks id or specialist")
        return _from_dict(cls, data)
