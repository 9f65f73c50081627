"""The relay's wire form of runner events (executors/relay.py): every field of every kind
crosses to the supervisor and back, a yielded run included (it was once dropped)."""

from __future__ import annotations

import json

import pytest

from specialists.executors.relay import event_from_dict, event_to_dict
from specialists.runners.base import Activity, AgentExited, AnswerDelta, RunFinished, Usage

EVENTS = [
    Activity(
        "toolcall", {"name": "bash", "args": {"command": "ls"}}, log=False, current_tool="bash"
    ),
    Activity("text"),
    AnswerDelta("half an ans"),
    Usage(10, 20, 3, 4, 0.25),
    RunFinished("done", session_file="/s.jsonl", usage=Usage(1, 2)),
    RunFinished("", yielded=True),
    RunFinished(None, error="model failed"),
    AgentExited(None, 9, "killed"),
]


@pytest.mark.parametrize("event", EVENTS)
def test_every_event_crosses_whole(event) -> None:
    wire = json.loads(json.dumps(event_to_dict(event)))
    assert event_from_dict(wire) == event


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown event kind"):
        event_from_dict({"kind": "exploded"})
