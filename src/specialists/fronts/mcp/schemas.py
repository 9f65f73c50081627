"""JSON Schemas of the tools' arguments and structured results."""

from __future__ import annotations

from typing import Any

from specialists.base.reader.arguments import ONE_LINE_PATTERN

Schema = dict[str, Any]

STATUSES = ["starting", "running", "waiting", "done", "error", "cancelled"]
MAX_PROMPT = 200_000
MAX_ID = 64


def obj(properties: Schema, required: tuple[str, ...] = (), *, closed: bool = True) -> Schema:
    schema: Schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    return schema


def text(
    description: str, *, max_length: int = 4096, min_length: int = 0, one_line: bool = True
) -> Schema:
    """A string argument; one line (no control characters) unless it is a prompt or message."""
    schema: Schema = {"type": "string", "description": description, "maxLength": max_length}
    if min_length:
        schema["minLength"] = min_length
    if one_line:
        schema["pattern"] = ONE_LINE_PATTERN
    return schema


def integer(description: str, default: int, low: int, high: int) -> Schema:
    return {
        "type": "integer",
        "description": description,
        "default": default,
        "minimum": low,
        "maximum": high,
    }


JOB_ID = text("job id (8 hex characters) or a unique prefix", max_length=MAX_ID, min_length=1)
STATUS = {"type": "string", "enum": STATUSES}

# --- arguments ------------------------------------------------------------------------------

_TASK_PROPS: Schema = {
    "specialist": text("specialist name (see list_specialists)", max_length=128, min_length=1),
    "prompt": text(
        "the whole task: what to do, where, what the answer must contain",
        max_length=MAX_PROMPT,
        min_length=1,
        one_line=False,
    ),
    "model": text(
        "override the specialist's model, e.g. anthropic/claude-sonnet-4-5", max_length=256
    ),
    "cwd": text("working directory (relative paths are under the project root)"),
}

_ATTENTION_PROPS: Schema = {  # docs/attention.md; run, use_specialist, the deprecated tools
    "attention_after": text(
        "tell you when the job shows no activity this long: 30s, 5m, 1h; off for never",
        max_length=16,
    ),
    "watchdog": {
        "type": "boolean",
        "description": "have each turn's change to the working tree reviewed (a child job)",
    },
}

CEILING_PROPS: Schema = {  # docs/spend.md: what the job and all below it may spend
    "max_cost": {"type": "number", "exclusiveMinimum": 0, "description": "US dollars, tree"},
    "max_tokens": {"type": "integer", "minimum": 1, "description": "input+output tokens, tree"},
}

RUN_ARGS = obj(
    {
        **_TASK_PROPS,
        "timeout_s": {
            "type": "integer",
            "description": "time limit for the job",
            "minimum": 1,
            "maximum": 86_400,
        },
        "continue_from": text("a finished job id whose agent session to continue", max_length=64),
        "bead": text("run this beads issue as the task (its blockers as context)", max_length=128),
        "sandbox": {
            "type": "boolean",
            "description": "run in a new git worktree on a sandbox-<id> branch",
        },
        "mission": {"type": "boolean", "description": "true: a new mission for this run"},
        "mission_id": text("attach to this existing mission (strict)", max_length=48),
        **_ATTENTION_PROPS,
        **CEILING_PROPS,
    },
    ("specialist", "prompt"),
)

USE_ARGS = obj(
    {
        **_TASK_PROPS,
        **_ATTENTION_PROPS,
        "timeout_s": integer("seconds to wait before stopping it", 120, 1, 1800),
    },
    ("specialist", "prompt"),
)

PARALLEL_ARGS = obj(
    {
        "tasks": {
            "type": "array",
            "minItems": 1,
            "maxItems": 8,
            "items": obj({**_TASK_PROPS, **_ATTENTION_PROPS}, ("specialist", "prompt")),
        },
        "timeout_s": integer("seconds to wait for all of them", 300, 1, 3600),
    },
    ("tasks",),
)

JOB_ARGS = obj({"job_id": JOB_ID}, ("job_id",))
OPTIONAL_JOB_ARGS = obj(
    {
        "job_id": JOB_ID,
        "threads": {
            "type": "boolean",
            "description": "also list your child threads, each with its transport",
        },
    }
)
FEED_ARGS = obj(
    {
        "job_id": JOB_ID,
        "from_seq": integer("first event sequence number to return", 1, 0, 10**9),
        "limit": integer("most events to return", 50, 1, 200),
    },
    ("job_id",),
)
NO_ARGS = obj({})
LIST_ARGS = obj({"scope": {"type": "string", "enum": ["project", "user", "builtin"]}})

# --- results --------------------------------------------------------------------------------

JOB_BRIEF = obj(
    {
        "id": {"type": "string"},
        "specialist": {"type": "string"},
        "status": STATUS,
        "elapsed_s": {"type": "number"},
        "doing": {"type": "string"},
        "stalled": {"type": "boolean"},
        "needs_attention": {"type": "string"},
        "error": {"type": "string"},
        "events": {"type": "integer"},
        "tool_calls": {"type": "integer"},
        "model": {"type": "string"},
        "cost_usd": {"type": "number"},
        "continues": {"type": "string"},
        "result": {"type": ["string", "null"]},
    },
    ("id", "specialist", "status", "elapsed_s"),
    closed=False,
)

JOB_LIST = obj(
    {
        "active": {"type": "array", "items": JOB_BRIEF},
        "finished": {"type": "object", "additionalProperties": {"type": "integer"}},
        "recent": {"type": "array", "items": JOB_BRIEF},
        "problems": {"type": "array", "items": {"type": "string"}},
    },
    ("active", "finished", "recent"),
)

STARTED = obj(
    {
        "job_id": {"type": "string"},
        "specialist": {"type": "string"},
        "mission_id": {"type": ["string", "null"]},
    },
    ("job_id",),
)

ANSWER = obj(
    {
        "job_id": {"type": "string"},
        "status": STATUS,
        "result": {"type": ["string", "null"]},
        "truncated": {"type": "boolean"},
    },
    ("job_id", "status", "result"),
)

THREAD_ROW = obj(
    {
        "id": {"type": "string"},
        "job_id": {"type": "string"},
        "parent": {"type": "string"},
        "phase": {"type": "string"},
        "failed": {"type": "boolean"},
        "runner": {"type": "string"},
        "transport": {"type": "string"},
        "sandbox": {"type": ["string", "null"]},
        "instructions": {"type": "string"},
    },
    ("id", "job_id", "phase", "runner", "transport"),
    closed=False,
)
STATUS_RESULT = {
    "type": "object",
    "properties": {
        "job": JOB_BRIEF,
        **JOB_LIST["properties"],
        "threads": {"type": "array", "items": THREAD_ROW},
    },
}

FEED_RESULT = obj(
    {
        "job_id": {"type": "string"},
        "status": STATUS,
        "events": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"seq": {"type": "integer"}, "event": {"type": "string"}},
                "required": ["seq", "event"],
            },
        },
        "next_seq": {"type": "integer"},
        "more": {"type": "boolean"},
    },
    ("job_id", "status", "events", "next_seq", "more"),
)

STOPPED = obj(
    {"job_id": {"type": "string"}, "status": STATUS, "stopped": {"type": "boolean"}},
    ("job_id", "status", "stopped"),
)

PARALLEL_RESULT = obj(
    {
        "results": {
            "type": "array",
            "items": obj(
                {
                    "job_id": {"type": "string"},
                    "status": STATUS,
                    "result": {"type": ["string", "null"]},
                    "truncated": {"type": "boolean"},
                    "error": {"type": "string"},
                },
                ("job_id", "status"),
            ),
        }
    },
    ("results",),
)

INIT_RESULT = obj(
    {
        "project_root": {"type": "string"},
        "specialists": {"type": "array", "items": {"type": "string"}},
        "load_problems": {"type": "integer"},
        "active_jobs": {"type": "integer"},
        "beads": {"type": "boolean"},
        "how_to": {"type": "string"},
    },
    ("project_root", "specialists", "active_jobs"),
)

LIST_RESULT = obj(
    {
        "specialists": {
            "type": "array",
            "items": obj(
                {
                    "name": {"type": "string"},
                    "description": {"type": "string"},
                    "scope": {"type": "string"},
                    "permission": {"type": "string"},
                    "runner": {"type": "string"},
                    "model": {"type": "string"},
                },
                ("name", "description", "scope"),
            ),
        },
        "problems": {"type": "array", "items": {"type": "string"}},
    },
    ("specialists", "problems"),
)

HEALTH_RESULT = obj(
    {
        "breakers": {
            "type": "array",
            "items": obj(
                {
                    "key": {"type": "string"},
                    "state": {"type": "string"},
                    "failures": {"type": "integer"},
                    "last_error": {"type": "string"},
                },
                ("key", "state"),
            ),
        },
        "jobs": JOB_LIST,
        "problems": {"type": "array", "items": {"type": "string"}},
    },
    ("breakers", "jobs"),
)
