"""The types the job ops (jobs.py, dispatch.py) name in their signatures: their arguments'
bounds and their answers' shapes, from which the MCP tools' schemas are generated. Kept
apart so that `status` and `result` at a terminal never import `typing`: the ops name this
module in `__types__`, for the schema reader only (base/opschema.py). (No `from __future__
import annotations`: a TypedDict's NotRequired keys must be seen as it is made.)
"""

from typing import Annotated, Any, Literal, NotRequired, Required, TypedDict

from specialists.base.opschema import Cli, Many, Range, Text

Status = Literal["starting", "running", "waiting", "done", "error", "cancelled"]
JobRef = Annotated[str, Text(64, 1)]
Name = Annotated[str, Text(128, 1)]
Prompt = Annotated[str, Text(200_000, 1, line=False)]
Model = Annotated[str | None, Text(256)]
Line = Annotated[str | None, Text()]
Attention = Annotated[str | None, Text(16)]
Timeout = Annotated[int | None, Range(1, 86_400)]
ContinueFrom = Annotated[str | None, Text(64)]
Bead = Annotated[str | None, Text(128)]
MissionId = Annotated[str | None, Text(48)]
MaxCost = Annotated[float | None, Range(0.0001, None)]
MaxTokens = Annotated[int | None, Range(1, None)]
WaitS = Annotated[int, Range(1, 1800)]
AllWaitS = Annotated[int, Range(1, 3600)]
FromSeq = Annotated[int, Range(0, 10**9)]
Limit = Annotated[int, Range(1, 200)]
Scope = Literal["project", "user", "builtin"]
Wait = Annotated[bool, Cli(person=True)]  # a person's `result --wait`
Threads = Annotated[bool, Cli(hidden=True)]  # a model's: its child threads
WaitFor = Annotated[float | None, Cli(person=True)]
JobRefs = Annotated[list[JobRef] | None, Many(64)]
WaitMode = Literal["next", "all"]
WaitUpTo = Annotated[float, Range(0, 300)]  # an MCP call blocks its client: well below its timeout


class Task(TypedDict, total=False):
    specialist: Required[Name]
    prompt: Required[Prompt]
    model: Model
    cwd: Line
    attention_after: Attention
    watchdog: bool


Tasks = Annotated[list[Task], Many(8, 1)]


class SandboxMade(TypedDict):
    id: str
    path: str
    branch: str


class Dispatched(TypedDict):
    job_id: str
    specialist: NotRequired[str]
    mission_id: NotRequired[str | None]
    sandbox: NotRequired[SandboxMade]


class Answer(TypedDict):
    job_id: str
    status: Status
    result: str | None
    truncated: NotRequired[bool]
    error: NotRequired[str | None]  # a person's answer


class Brief(TypedDict, total=False):
    id: Required[str]
    specialist: Required[str]
    status: Required[Status]
    elapsed_s: Required[float]
    doing: str
    stalled: bool
    needs_attention: str
    error: str
    events: int
    tool_calls: int
    model: str
    cost_usd: float
    continues: str
    result: str | None
    paused: bool
    ceilings: list[Any]


class ThreadRow(TypedDict, total=False):
    id: Required[str]
    job_id: Required[str]
    parent: str
    phase: Required[str]
    failed: bool
    runner: Required[str]
    transport: Required[str]
    sandbox: str | None
    instructions: str


class Jobs(TypedDict, total=False):
    job: Brief
    active: list[Brief]
    finished: dict[str, int]
    recent: list[Brief]
    problems: list[str]
    threads: list[ThreadRow]
    thread_problems: list[str]


class EventRow(TypedDict):
    seq: int
    event: str


class Page(TypedDict):
    job_id: str
    status: Status
    events: list[EventRow]
    next_seq: int
    more: bool


class SessionStart(TypedDict):
    project_root: str
    specialists: list[str]
    load_problems: NotRequired[int]
    active_jobs: int
    beads: NotRequired[bool]
    how_to: NotRequired[str]


class SpecialistRow(TypedDict):
    name: str
    description: str
    scope: str
    permission: NotRequired[str]
    runner: NotRequired[str]
    model: NotRequired[str]


class CatalogShown(TypedDict):
    specialists: list[SpecialistRow]
    problems: list[str]


class Breaker(TypedDict):
    key: str
    state: str
    failures: NotRequired[int]
    last_error: NotRequired[str]


class Health(TypedDict):
    breakers: list[Breaker]
    jobs: Jobs
    problems: NotRequired[list[str]]
