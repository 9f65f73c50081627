"""A thread job's child tools on a Ray node (issue 13 item 1, "exactly as locally"): a native
parent job runs on the worker node (its loop in the relay process there) and spawns a thread
child with spawn_thread; the child (a native job on this machine) reports and closes; the
parent's supervisor, here, wakes the parent's loop on the node with those events, and its
last model request holds the child's report and its close exactly once.

With `workspace = "shared"`: the child tools write the job store, and on a node they see the
node's filesystem; only a store every node mounts at the same path is the job's store there
(docs/executors.md says what a bundle workspace does)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.test_cli_pi import sp, status, wait_until
from tests.integration.test_ray_executor import ACTIVE, events, placed_on, project, worker_ids
from tests.support.mock_llm import MockLLM, Reply, Request, ToolCall

pytestmark = [
    pytest.mark.integration,
    pytest.mark.ray,
    pytest.mark.xdist_group("ray"),
    pytest.mark.timeout(600),
]

CHILD = (
    "metadata: {name: kid, description: t}\n"
    "execution: {runner: native, model: openai/mock-model, executor: local}\n"
    'prompt: {system: "Be brief.", task_template: "$prompt"}\n'
)


def first_user_text(req: Request) -> str:
    for message in req.messages():
        if message.get("role") == "user":
            return json.dumps(message.get("content"))
    return ""


def script(req: Request) -> Reply:
    """The child reports, then closes; the parent spawns it, then waits for both events."""
    done = len(req.tool_results())
    if "You are thread" in first_user_text(req):
        if done == 0:
            return Reply(tool_calls=[ToolCall("report_to_parent", {"report": "kid halfway"})])
        if done == 1:
            close = {"structured": {"summary": "kid part done"}}
            return Reply(tool_calls=[ToolCall("close_thread", close)])
        return Reply("Closed.")
    if done == 0:
        spawn = {"instructions": "do the kid part", "child_of": ["root"], "fresh_context": True}
        return Reply(tool_calls=[ToolCall("spawn_thread", {**spawn, "specialist": "kid"})])
    history = json.dumps(req.messages())
    if "kid part done" in history:
        return Reply("The kid reported and closed.")
    return Reply("Waiting for my child.")


def test_a_parent_on_the_node_hears_its_thread_child_once(cluster: Any, mock_llm: MockLLM):
    forward = 'forward_env = ["*_API_KEY", "OPENAI_BASE_URL"]\nworkspace = "shared"\n'
    root = project(
        cluster, "true", config=forward, runner="{runner: native, model: openai/mock-model}"
    )
    (root / "specialists" / "kid.specialist.yaml").write_text(CHILD)
    mock_llm.set_default(script)
    out = sp("run", "job", "--prompt", "Split the work.", "--background", "--executor", "ray")
    assert out.returncode == 0, out.stderr
    parent = out.stdout.strip()
    wait_until(lambda: status(parent)["status"] not in ACTIVE, 300, "the parent's end")
    st = status(parent)
    assert st["status"] == "done", (st, events(parent)[-6:])
    assert sp("result", parent).stdout.strip() == "The kid reported and closed."
    assert placed_on(parent) in worker_ids(cluster)
    mine = [r for r in mock_llm.model_requests if "You are thread" not in first_user_text(r)]
    last = json.dumps(mine[-1].messages())
    assert last.count("kid halfway") == 1, last[-3000:]
    assert last.count("kid part done") == 1, last[-3000:]
    assert "child_report" in last and "child_closed" in last
