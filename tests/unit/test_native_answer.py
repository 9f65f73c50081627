"""The native structured-output tool: final_answer is offered, a tool call is required on
every request, a mismatch is an error result the model fixes, a valid call ends the run with
the answer as its text; providers say "required" in their own words."""

from __future__ import annotations

import json
from pathlib import Path

from specialists.native.calling import ModelSlot
from specialists.native.loop import AgentLoop, LoopSettings
from specialists.native.model import ModelInfo, ModelRequest, Prices
from specialists.native.session import Session
from specialists.native.testing import ScriptedModel, call, reply
from specialists.native.tools import ToolContext, tools_for_permission
from specialists.native.tools.answer import ANSWER_TOOL, answer_tool

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def _loop(tmp_path: Path, model: ScriptedModel, schema: dict) -> AgentLoop:  # type: ignore[type-arg]
    tools = tools_for_permission("READ_ONLY")
    tools[ANSWER_TOOL] = answer_tool(schema)
    slot = ModelSlot(ModelInfo("test/m", "test", "m", prices=Prices(0, 0)), lambda: model)
    return AgentLoop(
        session=Session.create(tmp_path / "job" / "session.jsonl"),
        models=[slot],
        tools=tools,
        tool_context=ToolContext(cwd=tmp_path, spill_dir=tmp_path / "spill"),
        settings=LoopSettings(answer_schema=schema),
        emit=lambda e: None,
    )


def test_a_valid_final_answer_ends_the_run_with_the_answer(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            reply(calls=[call("ls", path=".")]),
            reply(calls=[call(ANSWER_TOOL, n="two")]),
            reply(calls=[call(ANSWER_TOOL, n=2)]),
            reply("never asked"),
        ]
    )
    finished = _loop(tmp_path, model, SCHEMA).run("count")
    assert finished.error is None and json.loads(finished.text) == {"n": 2}
    assert len(model.requests) == 3
    assert all(r.tool_choice == "required" for r in model.requests)
    assert ANSWER_TOOL in [t.name for t in model.requests[0].tools]


def test_a_schema_that_is_not_an_object_is_wrapped(tmp_path: Path) -> None:
    schema = {"type": "array", "items": {"type": "string"}}
    model = ScriptedModel([reply(calls=[call(ANSWER_TOOL, answer=["a", "b"])])])
    finished = _loop(tmp_path, model, schema).run("list")
    assert json.loads(finished.text) == ["a", "b"]
    assert answer_tool(schema).parameters["required"] == ["answer"]


def test_providers_require_a_tool_call_in_their_own_words() -> None:
    from specialists.native.model import ToolSpec
    from specialists.native.providers.anthropic import anthropic_params
    from specialists.native.providers.openai_chat import chat_params
    from specialists.native.providers.openai_responses import responses_params

    tools = (ToolSpec("t", "d", {"type": "object"}),)
    request = ModelRequest(model="m", system="s", items=(), tools=tools, tool_choice="required")
    assert chat_params(request, provider="openai")["tool_choice"] == "required"
    assert responses_params(request)["tool_choice"] == "required"
    assert anthropic_params(request)["tool_choice"] == {"type": "any"}
    plain = ModelRequest(model="m", system="s", items=(), tools=tools)
    assert "tool_choice" not in chat_params(plain, provider="openai")
    assert "tool_choice" not in anthropic_params(plain)
