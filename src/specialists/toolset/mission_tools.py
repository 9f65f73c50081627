"""`mission`: one agent tool over the missions room (docs/missions.md), served by every front
(MCP clients such as Claude Code and Codex, the pi extension, native agents). The work is
missions/actions.py; this is the adapter: arguments checked, the caller's owner passed on
(a mission made here sends its goal notices to the caller), one line of text back."""

from __future__ import annotations

import json

from specialists.jobs.store import JobStore
from specialists.missions.actions import ACTIONS, mission_action
from specialists.news import NEWS
from specialists.toolset.table import AgentTool, Reply, ToolCall, check_known

_TEXT = {"type": "string", "maxLength": 4000}
MAX_RUNS_SHOWN = 50
_KNOWN = {
    "action", "mission_id", "title", "objective", "labels", "goal", "budget_tokens", "id",
    "scope", "all", "job_id", "question", "decision_id", "summary", "kind", "url", "status",
    "note", "path", "key", "value",
}  # fmt: skip
SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS)},
        "mission_id": {"type": "string", "maxLength": 48},
        "title": {"type": "string", "maxLength": 200},
        "objective": _TEXT,
        "labels": {"type": "array", "items": {"type": "string", "maxLength": 64}, "maxItems": 32},
        "goal": {"type": "boolean", "description": "new: drive it (needs budget_tokens)"},
        "budget_tokens": {"type": "integer", "minimum": 1},
        "scope": {"type": "string", "enum": ["project", "global"]},
        "all": {"type": "boolean", "description": "list: closed missions too"},
        "job_id": {"type": "string", "maxLength": 64},
        "question": _TEXT,
        "decision_id": {"type": "string", "maxLength": 20},
        "summary": _TEXT,
        "kind": {"type": "string", "maxLength": 40, "description": "receipt or artifact kind"},
        "url": {"type": "string", "maxLength": 2000},
        "status": {"type": "string", "maxLength": 200},
        "note": _TEXT,
        "path": {"type": "string", "maxLength": 4096},
        "key": {"type": "string", "maxLength": 128},
        "value": {"description": "state_set: any JSON value"},
    },
    "required": ["action"],
    "additionalProperties": False,
}
DESCRIPTION = (
    "Durable missions: why delegated work exists, so it survives compaction. After "
    "compaction or a restart: action list (scope global: every project), then show "
    "mission_id (live run statuses, decisions, state). Each workflow launch gets one. "
    "Actions: new (title, objective, labels; goal + budget_tokens for a goal mission that "
    "nudges you after each idle run), link job_id, decide question, resolve decision_id + "
    "summary, receipt kind (pull_request|ci|deployment|release) + absolute url + status "
    "(evidence, never authority to merge or deploy), artifact kind + path, state_get key, "
    "state_set key + value (JSON, 256 KiB in all; nextReadyAction steers a goal), pause, "
    "resume, close status (completed|failed|cancelled) + summary. Do not poll in a loop."
)
GUIDANCE = (
    "mission: after compaction call mission list then show; record decisions and receipts "
    "there, close missions with a summary."
)


def mission(call: ToolCall) -> Reply:
    check_known(call.args, _KNOWN)
    root = call.caller.state_root
    data = mission_action(root, JobStore(root, news=NEWS), call.args, owner=(call.caller.owner,))
    return Reply(json.dumps(_for_the_model(data), ensure_ascii=False, separators=(",", ":")), data)


def _for_the_model(data: dict) -> dict:
    """The text the model reads stays small: the last MAX_RUNS_SHOWN runs of a big mission
    (the count says so; `data` keeps them all) and no goal bookkeeping."""
    shown = dict(data)
    runs = data.get("runs")
    if isinstance(runs, list) and len(runs) > MAX_RUNS_SHOWN:
        shown["runs"] = runs[-MAX_RUNS_SHOWN:]
        shown["runs_not_shown"] = len(runs) - MAX_RUNS_SHOWN
    if isinstance(data.get("goal"), dict):
        shown["goal"] = {k: v for k, v in data["goal"].items() if k != "seen"}
    return shown


MISSION_TOOLS = (AgentTool("mission", DESCRIPTION, SCHEMA, mission, guidance=GUIDANCE),)
