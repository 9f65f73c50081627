"""The two JSON records of a job: job.json (immutable launch record) and status.json.

These sit on the hot path of `status` (parsed once per job), so they are plain classes over
a field table rather than dataclasses: importing `dataclasses` alone costs more than reading
a hundred status files. Attributes are annotated for type checkers; `__init__` takes them as
keywords, fills defaults and refuses unknown or missing ones.
"""

from __future__ import annotations

from typing import Any, ClassVar

from specialists.errors import StoreError

SCHEMA_VERSION = 1

ACTIVE_STATES = frozenset({"starting", "running", "waiting"})
TERMINAL_STATES = frozenset({"done", "error", "cancelled"})
ALL_STATES = ACTIVE_STATES | TERMINAL_STATES

REQUIRED: Any = object()


def _check_schema(data: dict[str, Any], what: str) -> None:
    version = data.get("schema", 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise StoreError(
            f"{what} has schema {version!r}, newer than this specialists understands",
            hint="upgrade specialists",
        )


class _Record:
    """Keyword construction, dict round trip and equality over `_fields` (name -> default).

    A default of `list` or `dict` (the type) means a fresh empty one per instance.
    """

    _fields: ClassVar[dict[str, Any]]
    _what: ClassVar[str]

    def __init__(self, **values: Any) -> None:
        for name, default in self._fields.items():
            if name in values:
                value = values.pop(name)
            elif default is REQUIRED:
                raise TypeError(f"{type(self).__name__} needs {name!r}")
            elif default is list or default is dict:
                value = default()
            else:
                value = default
            object.__setattr__(self, name, value)
        if values:
            raise TypeError(f"{type(self).__name__} has no field(s) {sorted(values)}")

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._fields}

    @classmethod
    def _from_data(cls, data: dict[str, Any]) -> Any:
        _check_schema(data, cls._what)
        known = {k: v for k, v in data.items() if k in cls._fields}  # newer fields are ignored
        try:
            return cls(**known)
        except TypeError as exc:
            raise StoreError(f"{cls._what} is incomplete: {exc}") from exc

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, _Record)
            and type(other) is type(self)
            and (self.to_dict() == other.to_dict())
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"{type(self).__name__}({shown})"


class JobRecord(_Record):
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
    system_prompt: str
    permission: str
    thinking_level: str | None
    fallback_model: str | None
    timeout_ms: int | None
    stall_timeout_ms: int | None
    stall_kill: bool
    keep_alive: bool
    idle_timeout_ms: int | None
    max_turns: int | None
    max_tokens: int | None
    response_format: str | None
    skill_paths: list[str]
    pre_scripts: list[dict[str, Any]]
    post_scripts: list[dict[str, Any]]
    runner_options: dict[str, Any]
    parent_id: str | None  # the job this one continues (--continue / resume)
    resume_session: str | None  # agent session to continue from
    bead_id: str | None
    owns_bead: bool
    foreground: bool
    source: str | None  # definition file, for provenance
    owner: list[str]  # who asked: keys its completion notice is addressed to (owner.py)
    schema: int

    _fields = {
        "id": REQUIRED,
        "specialist": REQUIRED,
        "prompt": REQUIRED,
        "task": REQUIRED,
        "runner": REQUIRED,
        "model": REQUIRED,
        "cwd": REQUIRED,
        "created_at_ms": REQUIRED,
        "system_prompt": "",
        "permission": "MEDIUM",
        "thinking_level": None,
        "fallback_model": None,
        "timeout_ms": None,
        "stall_timeout_ms": None,
        "stall_kill": False,
        "keep_alive": False,
        "idle_timeout_ms": None,
        "max_turns": None,
        "max_tokens": None,
        "response_format": None,
        "skill_paths": list,
        "pre_scripts": list,
        "post_scripts": list,
        "runner_options": dict,
        "parent_id": None,
        "resume_session": None,
        "bead_id": None,
        "owns_bead": False,
        "foreground": False,
        "source": None,
        "owner": list,
        "schema": SCHEMA_VERSION,
    }

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"JobRecord is immutable; use .replace({name}=...)")

    def replace(self, **changes: Any) -> JobRecord:
        return JobRecord(**{**self.to_dict(), **changes})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobRecord:
        record: JobRecord = cls._from_data(data)
        return record


class JobStatus(_Record):
    """status.json: the job's current state. Only its supervisor writes it."""

    _what = "status.json"
    id: str
    specialist: str
    status: str
    current_event: str | None
    current_tool: str | None
    model: str | None
    backend: str | None
    runner: str | None
    pid: int | None  # the agent's pid (seed field name)
    agent_start_time: int | None
    supervisor_pid: int | None
    supervisor_start_time: int | None
    started_at_ms: int
    elapsed_s: float
    last_event_at_ms: int | None
    finished_at_ms: int | None
    bead_id: str | None
    session_file: str | None
    error: str | None
    stalled: bool
    exit_code: int | None
    cwd: str | None
    parent_id: str | None
    tokens: dict[str, int]
    cost_usd: float
    needs_attention: str | None
    keep_alive: bool
    events: int
    tool_calls: int
    turns: int
    schema: int

    _fields = {
        "id": REQUIRED,
        "specialist": REQUIRED,
        "status": "starting",
        "current_event": None,
        "current_tool": None,
        "model": None,
        "backend": None,
        "runner": None,
        "pid": None,
        "agent_start_time": None,
        "supervisor_pid": None,
        "supervisor_start_time": None,
        "started_at_ms": 0,
        "elapsed_s": 0.0,
        "last_event_at_ms": None,
        "finished_at_ms": None,
        "bead_id": None,
        "session_file": None,
        "error": None,
        "stalled": False,
        "exit_code": None,
        "cwd": None,
        "parent_id": None,
        "tokens": dict,
        "cost_usd": 0.0,
        "needs_attention": None,
        "keep_alive": False,
        "events": 0,
        "tool_calls": 0,
        "turns": 0,
        "schema": SCHEMA_VERSION,
    }

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_STATES

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobStatus:
        if not isinstance(data.get("id"), str) or not isinstance(data.get("specialist"), str):
            raise StoreError("status.json lacks id or specialist")
        status: JobStatus = cls._from_data(data)
        return status
