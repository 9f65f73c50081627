"""Fork versus fresh context for pi, Claude Code and Codex children of a parent on the same
runner (the real CLIs, mock LLM), asserted on what each child's first model request holds:
a forked child sees the parent's conversation so far (but not the parent's turn in progress,
the call to spawn_thread), a fresh one only its header and instructions."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from specialists.fronts.cli.main import main
from specialists.store.jobs import JobStore
from tests.support.agent_env import CLAUDE_MOCK_MODEL
from tests.support.mock_llm import MockLLM, Reply, Request, ToolCall
from tests.support.threads import thread_project
from tests.support.waiting import wait_until

# Two or three real agents, each waiting for our MCP server or pi extension to start (the
# mcp SDK import alone took 10-28 s at load 50): more than the default 120 s under load.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

SECRET = "The secret is 4217."
FORKED, FRESH = "What is the secret? (forked)", "What is the secret? (fresh)"
RUNNERS = {  # runner -> (execution block, how its model names our tools)
    "pi": ("{type: pi, specialists_extension: true}", "mock/mock-model", ""),
    "claude": (
        "{type: claude, specialists_mcp: true}",
        f"anthropic/{CLAUDE_MOCK_MODEL}",
        "mcp__specialists__",
    ),
}


def _texts(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(b.get("text", "")) for b in content if isinstance(b, dict)]
    return []


def _is_child(req: Request) -> bool:
    """A child's own prompt starts with its task header (an event quoting it does not)."""
    return any(
        text.startswith("[specialists thread]")
        for m in req.messages()
        if m.get("role") == "user"
        for text in _texts(m.get("content"))
    )


def _tool(runner: str, name: str, args: dict[str, object]) -> ToolCall:
    prefix = RUNNERS[runner][2]
    return ToolCall(prefix + name, args)


def _script(runner: str):  # type: ignore[no-untyped-def]
    """The parent forks one child in its first turn and starts a fresh one in its second
    (so the forked child's snapshot holds no finished spawn of the parent's), then waits."""

    def rule(req: Request) -> Reply:
        history = json.dumps(req.messages())
        if _is_child(req):
            before = history.split("[specialists thread]")[0]
            return Reply("It is 4217." if "4217" in before else "I cannot know.")
        done = len(req.tool_results())
        if done == 0:
            args: dict[str, object] = {"instructions": FORKED, "child_of": ["root"]}
            return Reply(tool_calls=[_tool(runner, "spawn_thread", args)])
        if done == 1:
            args = {"instructions": FRESH, "child_of": ["root"], "fresh_context": True}
            return Reply(tool_calls=[_tool(runner, "spawn_thread", args)])
        if history.count("[specialists event] child_closed") >= 2:
            return Reply("Both children answered.")
        return Reply("Waiting for my children.")

    return rule


def _first_requests(mock_llm: MockLLM) -> dict[str, Request]:
    firsts: dict[str, Request] = {}
    for req in mock_llm.model_requests:
        if _is_child(req):
            key = FORKED if FORKED in req.last_user_text() else FRESH
            firsts.setdefault(key, req)
    return firsts


@pytest.mark.parametrize("runner", ["pi", "claude"])
def test_a_forked_child_sees_its_parents_conversation_and_a_fresh_one_does_not(
    runner: str,
    request: pytest.FixtureRequest,
    mock_llm: MockLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    binary: Path = request.getfixturevalue(f"{runner}_bin")
    monkeypatch.setenv("PATH", f"{binary.parent}:{os.environ['PATH']}")
    project = thread_project()
    block, model, _ = RUNNERS[runner]
    (project / "specialists" / "par.specialist.yaml").write_text(
        "metadata: {name: par, description: t}\n"
        f"execution: {{runner: {block}, model: {model}, permission_required: LOW}}\n"
        'prompt: {system: "Be brief.", task_template: "$prompt"}\n'
    )
    mock_llm.set_default(_script(runner))
    assert main(["run", "par", "--background", "--cwd", str(project), "-p", SECRET]) == 0
    parent = capsys.readouterr().out.strip()
    store = JobStore(project / ".specialists", news=None)
    wait_until(
        lambda: (st := store.read_status(parent)) and not st.active,
        timeout=300,
        what="the parent job's end",
    )
    assert store.read_result(parent) == "Both children answered.", store.read_status(parent)

    firsts = _first_requests(mock_llm)
    forked, fresh = json.dumps(firsts[FORKED].messages()), json.dumps(firsts[FRESH].messages())
    assert SECRET in forked and "Your context is forked" in forked
    assert SECRET not in fresh and "4217" not in fresh and "Your context is fresh" in fresh
    # The parent's turn in progress (its call to spawn_thread) is not in the child's context,
    # nor what the parent did after the spawn (its second, fresh child).
    assert forked.count(FORKED) == 1, "the fork carried the parent's unfinished tool call"
    assert FRESH not in forked, "the fork holds what the parent did after the spawn"
    children = [j for j in store.list_ids() if j != parent]
    records = [store.read_record(j) for j in children]
    assert {r.runner for r in records} == {runner}
    answers = sorted(store.read_result(j) or "" for j in children)
    assert answers == ["I cannot know.", "It is 4217."]
