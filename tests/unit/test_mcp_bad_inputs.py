"""Garbage from an agent through the MCP tools: one clear error line, no job created, no
`bug:` (which would mean an unexpected exception reached the table)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from specialists.fronts.mcp.handlers import ServerContext
from specialists.fronts.mcp.table import call_tool

SPEC = """\
metadata:
  name: tester
  description: test specialist
execution:
  runner: {type: command, command: python3}
prompt:
  system: You test.
"""


@pytest.fixture
def ctx() -> ServerContext:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / "specialists").mkdir()
    (root / "specialists" / "tester.specialist.yaml").write_text(SPEC)
    return ServerContext()


def refused(ctx: ServerContext, name: str, **arguments: Any) -> str:
    outcome = call_tool(ctx, name, arguments)
    assert outcome.is_error, outcome.text
    assert outcome.text.startswith("error: ") and "\n" not in outcome.text
    assert "bug:" not in outcome.text, outcome.text
    assert ctx.store().list_ids() == []
    return outcome.text


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"prompt": "   "}, "the prompt is empty"),
        ({"prompt": "a\ud800b"}, "argument 'prompt' is not valid Unicode text"),
        ({"prompt": "x", "cwd": "a\x00b"}, "argument 'cwd' contains a NUL character"),
        ({"prompt": "x", "model": "m\x00"}, "NUL"),
        ({"prompt": "a\x00b"}, "NUL"),
        ({"prompt": "x", "cwd": "~no-such-user-here/x"}, "invalid cwd"),
        ({"prompt": "x", "cwd": "/etc/passwd"}, "is not a directory"),
    ],
)
def test_run_refuses_input_no_agent_could_use(ctx, arguments, message):
    assert message in refused(ctx, "run", specialist="tester", **arguments)


def test_out_of_range_number_is_shown_as_given(ctx):
    text = refused(ctx, "feed", job_id="abcd", limit=1e300)
    assert "got 1e+300" in text and len(text) < 200


def test_empty_continue_from_means_none(ctx):
    from specialists.fronts import dispatch
    from specialists.fronts.mcp.agent_tools import caller

    task = {"specialist": "tester", "prompt": "x", "continue_from": ""}
    record = dispatch._plan(caller(ctx), ctx.project, task)
    assert record.parent_id is None


def test_result_that_is_not_utf8_is_one_line_and_kept(ctx):
    from specialists.store.records import JobStatus
    from specialists.store.writer import JobWriter
    from tests.support.jobs import new_job

    store = ctx.store()
    record, lock = new_job(store, Path(os.environ["SPECIALISTS_PROJECT_ROOT"]))
    writer = JobWriter(store, record.id)
    writer.write_status(JobStatus(id=record.id, specialist="tester", status="done"))
    writer.close()
    lock.release()
    path = store.job_dir(record.id) / "result.txt"
    path.write_bytes(b"ok \xff bad")
    outcome = call_tool(ctx, "result", {"job_id": record.id})
    assert outcome.is_error and "not valid UTF-8" in outcome.text
    assert "bug:" not in outcome.text
    assert path.read_bytes() == b"ok \xff bad"


@pytest.mark.parametrize("tool", ["mission", "merge_queue"])
@pytest.mark.parametrize("action", [[], {"a": 1}, 5, None])
def test_an_action_that_is_no_name_is_one_line_not_a_bug(ctx, tool, action):
    """A grouped tool's `action` as a list or an object crashed `action not in ops` with
    'bug: TypeError: unhashable type' and a traceback on the server's stderr."""
    text = refused(ctx, tool, action=action)
    assert "action" in text and "one of" in text
