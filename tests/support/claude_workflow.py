"""Drive Claude Code's own `Workflow` tool (2.1.197) against the mock LLM.

The mock answers three kinds of request, told apart by their content:

- the top-level session's first request: a `tool_use` of `Workflow` whose script fans out;
- a workflow subagent's request (its system prompt says it was "spawned by a workflow
  orchestration script"): a short final text, or, when Claude Code offers it a
  `StructuredOutput` tool (an `agent()` call with a `schema`), a call of that tool;
- every later top-level request: a text that repeats what came back (the tool result after
  the launch, then the `<task-notification>` that carries the workflow's return value).

The facts behind it are in docs/workflows.md, "Compared with Claude Code's Workflow tool".
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tests.support.mock_llm import Reply, Request, ToolCall

# The first line of the system prompt Claude Code gives every workflow subagent.
SUBAGENT_MARK = "You are a subagent spawned by a workflow orchestration script"
# The tool Claude Code offers a subagent whose agent() call has a schema.
STRUCTURED_TOOL = "StructuredOutput"
# A subagent's task is the last text block of its (single) user message.
_TASK = re.compile(r"bench child (\S+)")
_RESULT = re.compile(r"<result>(.*?)</result>", re.S)

Shape = Literal["parallel", "pipeline"]
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
}


def fan_script(n: int, shape: Shape, *, schema: bool = False) -> str:
    """A Workflow script with `n` children: one `parallel` barrier, or a `pipeline` of two
    stages over n/2 items (n agents in all). Each child's prompt names it (`bench child
    <tag>`) so the mock can answer it and a test can count it."""
    opts = f", {{schema: {json.dumps(ANSWER_SCHEMA)}}}" if schema else ""
    head = (
        "export const meta = { name: 'bench-fan', description: 'fan out trivial children', "
        "phases: [{ title: 'fan' }] }\nphase('fan')\n"
    )
    if shape == "parallel":
        body = (
            f"const out = await parallel(Array.from({{length: {n}}}, (_, i) => () => "
            f"agent('bench child p' + i + ': answer in one word'{opts})))\n"
        )
    else:
        body = (
            f"const out = await pipeline(Array.from({{length: {n // 2}}}, (_, i) => i),\n"
            f"  i => agent('bench child a' + i + ': answer in one word'{opts}),\n"
            f"  (prev, i) => agent('bench child b' + i + ': answer in one word'{opts}))\n"
        )
    return head + body + "return out\n"


def is_subagent(req: Request) -> bool:
    return SUBAGENT_MARK in req.system_text()


def child_tag(req: Request) -> str | None:
    """The tag of a bench child's request (`p3`, `a0`, `b0`), None for any other request."""
    found = _TASK.search(req.last_user_text()) if is_subagent(req) else None
    return found.group(1).rstrip(":") if found else None


@dataclass
class WorkflowMock:
    """A mock rule (`mock.set_default(rule)`) for one Workflow run: the first top-level
    request (a fresh prompt, or with `--resume` Claude Code's notice about an unfinished
    workflow) gets the Workflow tool_use `call` ({"script": ...} or `Launch.resume_call()`).

    `children` counts the subagent requests per child tag; `results` collects the
    `<result>` of every completed task notification the top-level conversation received."""

    call: dict[str, Any]
    children: dict[str, int] = field(default_factory=dict)
    results: list[str] = field(default_factory=list)
    top_level: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, req: Request) -> Reply:
        if is_subagent(req):
            return self._child(req)
        with self._lock:
            self.top_level += 1
            first = self.top_level == 1
        if first:
            return Reply(tool_calls=[ToolCall("Workflow", self.call)])
        found = _RESULT.search(req.last_user_text())
        if found:
            with self._lock:
                self.results.append(found.group(1))
            return Reply(f"workflow finished: {found.group(1)}")
        return Reply("workflow launched")

    def _child(self, req: Request) -> Reply:
        tag = child_tag(req) or "?"
        with self._lock:
            self.children[tag] = self.children.get(tag, 0) + 1
        if STRUCTURED_TOOL in req.tool_names():
            if req.tool_results():  # the tool accepted the answer and ended the turn
                return Reply("done")
            return Reply(tool_calls=[ToolCall(STRUCTURED_TOOL, {"answer": f"ok-{tag}"})])
        return Reply(f"ok-{tag}")

    def subagent_requests(self) -> int:
        with self._lock:
            return sum(self.children.values())


@dataclass(frozen=True)
class Launch:
    """What `claude -p --output-format stream-json` printed about a Workflow launch."""

    session: str
    run_id: str
    script_path: str

    def resume_call(self) -> dict[str, str]:
        return {"scriptPath": self.script_path, "resumeFromRunId": self.run_id}


def launch_of(stdout: str) -> Launch:
    """The session, run id and persisted script of the Workflow call in a stream-json log."""
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    text = json.dumps(events)
    run = re.search(r"Run ID: (wf_[0-9a-f-]+)", text)
    script = re.search(r"Script file: (\S+?\.js)", text)
    if not (events and run and script):
        raise AssertionError(f"no Workflow launch in Claude Code's output: {stdout[-800:]}")
    return Launch(str(events[0]["session_id"]), run.group(1), script.group(1))


def journaled_results(config_dir: Path) -> int:
    """How many agents Claude Code has journaled as finished, over every workflow run under
    its config dir (`projects/<project>/<session>/subagents/workflows/<run>/journal.jsonl`).
    A crash cut a line short at worst: only whole lines count."""
    count = 0
    for journal in config_dir.glob("projects/*/*/subagents/workflows/*/journal.jsonl"):
        for line in journal.read_text().splitlines():
            try:
                count += json.loads(line).get("type") == "result"
            except ValueError:
                continue  # the line a kill cut short
    return count


def claude_workflow_argv(claude: str, *, model: str = "claude-sonnet-4-5") -> list[str]:
    """`claude -p` that may run the Workflow tool without a prompt: in -p mode an unlisted
    Workflow call is denied ("Review dynamic workflow before running")."""
    return [
        claude,
        "-p",
        "use a workflow to fan out agents",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        model,
        "--allowedTools",
        "Workflow",
    ]
