"""The MCP tools as plain functions (no MCP, no agent processes): scripted runners in-process."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from specialists.base.errors import Bug, UserError
from specialists.base.reader.arguments import ONE_LINE_PATTERN, check_arguments
from specialists.events.inbox import Inbox
from specialists.events.model import EventSource
from specialists.events.timers import TimerStore
from specialists.fronts.jobs import bounded_result
from specialists.fronts.mcp import table
from specialists.fronts.mcp.handlers import ServerContext
from specialists.fronts.mcp.table import TOOLS, TOOLS_BY_NAME, ToolOutcome, UnknownTool, call_tool
from specialists.native import agent_table as registry
from specialists.native.agent_tools import arg_number
from specialists.runners.base import Activity, RunFinished
from specialists.runners.testing import ScriptedRunner, Step
from specialists.store.jobs import JobStore
from specialists.supervise.actions import send_message, stop_job
from tests.support.jobs import make_record

SPEC = """\
metadata:
  name: tester
  description: test specialist
execution:
  runner: {type: command, command: python3}
prompt:
  system: You test.
"""

EXPECTED_TOOLS = {
    "run", "status", "result", "feed", "steer", "follow_up", "stop",
    "specialist_init", "list_specialists", "specialist_status", "use_specialist",
    "start_specialist", "poll_specialist", "stop_specialist", "run_parallel",
    "manage_specialist", "schedule", "workflow",
    "wait", "interrupt", "children",  # control (mcp/control_tool.py, supervise/verbs.py)
    "events",  # collecting events without hooks (mcp/agent_tools.py)
}  # fmt: skip
LONG = 30.0  # a scripted wait longer than any test


@pytest.fixture
def scripts(monkeypatch: pytest.MonkeyPatch) -> deque[list[Step]]:
    """Scripts for the next runners the server creates, in order (default: answer 'ANSWER')."""
    queue: deque[list[Step]] = deque()

    def make_runner(name: str) -> ScriptedRunner:
        script = queue.popleft() if queue else [Activity("text"), RunFinished(text="ANSWER")]
        return ScriptedRunner(script)

    monkeypatch.setattr("specialists.runners.registry.make_runner", make_runner)
    return queue


@pytest.fixture
def ctx(scripts: deque[list[Step]]) -> Iterator[ServerContext]:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / "specialists").mkdir()
    (root / "specialists" / "tester.specialist.yaml").write_text(SPEC)
    context = ServerContext()
    yield context
    context.jobs.stop_all(grace=2.0)


def call(ctx: ServerContext, name: str, **arguments: Any) -> ToolOutcome:
    return call_tool(ctx, name, arguments)


def ok(ctx: ServerContext, name: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its structured result must match its output schema."""
    outcome = call(ctx, name, **arguments)
    assert not outcome.is_error, outcome.text
    jsonschema.validate(outcome.data, TOOLS_BY_NAME[name].served_output_schema or {})
    return outcome.data


def failed(ctx: ServerContext, name: str, **arguments: Any) -> ToolOutcome:
    outcome = call(ctx, name, **arguments)
    assert outcome.is_error, outcome.text
    assert outcome.text.startswith("error: ")
    assert "\n" not in outcome.text and "Traceback" not in outcome.text
    assert outcome.data["error"] == outcome.text.removeprefix("error: ")
    return outcome


def wait_until(pred: Callable[[], bool], timeout: float = 10.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def start_own(ctx: ServerContext, scripts: deque[list[Step]], script: list[Step]) -> str:
    """A job supervised in this process (like use_specialist's), left running."""
    scripts.append(script)
    store = ctx.store()
    job_id = ctx.jobs.start(ctx.project, make_record(Path(os.environ["SPECIALISTS_PROJECT_ROOT"])))
    wait_until(lambda: _status(store, job_id) == "running", what="job running")
    return job_id


def _status(store: JobStore, job_id: str) -> str | None:
    st = store.read_status(job_id)
    return st.status if st else None


# --- the table ------------------------------------------------------------------------------


def test_the_table_has_every_tool_with_schemas_and_short_descriptions():
    """The job tools, `events`, and every tool of the agent tool table (served as it is)."""
    assert {t.name for t in TOOLS} == EXPECTED_TOOLS | {t.name for t in registry.TOOLS}
    for tool in TOOLS:
        assert 80 < len(tool.description) < 900, tool.name
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        assert tool.output_schema["type"] == "object"
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
        assert tool.description.startswith("DEPRECATED") == tool.deprecated, tool.name


def test_descriptions_say_dispatch_keep_working_and_no_polling():
    deprecated = {t.name for t in TOOLS if t.deprecated}
    assert deprecated == {"start_specialist", "poll_specialist", "stop_specialist", "run_parallel"}
    for name in ("run", "status", "result", "feed", "steer", "follow_up", "poll_specialist"):
        text = TOOLS_BY_NAME[name].description.lower()
        assert "poll" in text or "in a loop" in text, name
    for name in ("run", "follow_up", "start_specialist", "run_parallel"):
        assert "keep working" in TOOLS_BY_NAME[name].description.lower(), name


def test_the_listing_the_stdio_server_starts_with_is_the_tables():
    """stdio.py answers tools/list from listing.json before the table loads: it must be what
    the table generates from the ops and the agent tools, for each tool set."""
    from specialists.fronts.mcp.stdio import LISTING

    written = json.loads(Path(LISTING).read_text(encoding="utf-8"))
    assert written == table.listings(), "listing.json is stale: run scripts/mcp-listing"


def test_the_control_tools_generated_from_their_ops_keep_their_shapes(ctx):
    """steer, follow_up and stop (supervise/verbs.py): the arguments and answers the
    hand-written tools had; a person's flag (`--no-wait`) is no model's argument."""
    job_id = {"type": "string", "maxLength": 64, "minLength": 1, "pattern": ONE_LINE_PATTERN}
    message = {"type": "string", "maxLength": 200_000, "minLength": 1}
    schemas = {n: TOOLS_BY_NAME[n].input_schema for n in ("steer", "follow_up", "stop")}
    for schema in schemas.values():
        assert schema["additionalProperties"] is False
        for p in schema["properties"].values():
            p.pop("description", None)
            p.get("items", {}).pop("description", None)
    assert schemas["stop"]["properties"] == {"job_id": job_id}
    assert schemas["follow_up"]["properties"] == {"job_id": job_id, "message": message}
    assert schemas["steer"]["properties"] == {
        "job_id": job_id, "message": message, "children": {"type": "boolean"},
        "job_ids": {"type": "array", "items": job_id, "maxItems": 63},
        "recover": {"type": "boolean"},
    }  # fmt: skip
    assert [schemas[n].get("required") for n in ("steer", "follow_up", "stop")] == [
        ["job_id", "message"], ["job_id", "message"], ["job_id"],
    ]  # fmt: skip
    each = TOOLS_BY_NAME["steer"].output_schema["properties"]["each"]["items"]
    assert "additionalProperties" not in each and each["required"] == ["job_id", "state"]
    for name in ("steer", "follow_up", "stop"):
        out = TOOLS_BY_NAME[name].output_schema
        assert out["additionalProperties"] is False and "text" not in out["properties"]
        assert TOOLS_BY_NAME[name].core
    said = failed(ctx, "follow_up", job_id="0badc0de", message="x", no_wait=True)
    assert "unknown argument 'no_wait'" in said.text


# Claude Code sends a tool as {name, description, input_schema}, named mcp__<server>__<tool>.
MAX_CORE_SCHEMA_BYTES = 12_000


def sent_bytes(tools: list[table.McpTool], server: str) -> int:
    return sum(
        len(
            json.dumps(
                {
                    "name": f"mcp__{server}__{t.name}",
                    "description": t.description,
                    "input_schema": t.input_schema,
                },
                separators=(",", ":"),
                ensure_ascii=False,
            )
        )
        for t in tools
    )


def test_the_core_costs_every_request_at_most_12_kb_of_schema():
    """What the always-loaded server puts in every model request. The whole table (37 kB
    before the core existed) cannot pass this."""
    core = [t for t in TOOLS if t.core]
    assert {t.name for t in core} == {
        "run",
        "status",
        "result",
        "steer",
        "follow_up",
        "stop",
        "list_specialists",
    }
    assert sent_bytes(core, "specialists") <= MAX_CORE_SCHEMA_BYTES
    assert sent_bytes(list(TOOLS), "specialists") > 3 * MAX_CORE_SCHEMA_BYTES


def test_the_tool_sets_split_the_table_and_hide_the_deprecated_aliases(ctx):
    listed = {
        toolset: {
            t["name"]: t for t in table.wire_listing(dataclasses.replace(ctx, toolset=toolset))
        }
        for toolset in table.TOOLSETS
    }
    deprecated = {t.name for t in TOOLS if t.deprecated}
    assert set(listed["core"]) | set(listed["more"]) == set(listed["all"])
    assert not set(listed["core"]) & set(listed["more"])
    assert not deprecated & set(listed["all"])
    for name, tool in listed["all"].items():  # a single-server setup still loads the core
        assert (tool.get("_meta") == {table.ALWAYS_LOAD_META: True}) == (name in listed["core"])
    # an old client's alias is answered by the default set, and by no other
    assert not call(ctx, "poll_specialist", job_id="0badc0de").text.startswith("unknown")
    for toolset in ("core", "more"):
        with pytest.raises(UnknownTool):
            call_tool(dataclasses.replace(ctx, toolset=toolset), "poll_specialist", {})
    with pytest.raises(UnknownTool):
        call_tool(dataclasses.replace(ctx, toolset="core"), "schedule", {"action": "list"})


# --- bad input ------------------------------------------------------------------------------


def test_unknown_tool_is_a_protocol_error(ctx):
    with pytest.raises(UnknownTool, match="unknown tool 'nope'"):
        call(ctx, "nope")


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("run", {"specialist": "tester"}, "run: missing required argument 'prompt'"),
        ("run", {"specialist": "tester", "prompt": ""}, "argument 'prompt' must not be empty"),
        ("run", {"specialist": "tester", "prompt": "x", "bogus": 1}, "unknown argument 'bogus'"),
        ("run", {"specialist": 7, "prompt": "x"}, "argument 'specialist' must be text, got 7"),
        ("run", {"specialist": "nope", "prompt": "x"}, "unknown specialist 'nope'"),
        ("feed", {"job_id": "ab", "limit": 500}, "'limit' must be between 1 and 200"),
        ("feed", {"job_id": "ab", "limit": True}, "'limit' must be an integer, got true"),
        ("status", {"job_id": "../x"}, "invalid job id '../x'"),
        ("result", {"job_id": "../../etc/passwd"}, "invalid job id"),
        ("result", {"job_id": "deadbeef"}, "no job 'deadbeef'"),
        ("stop", {}, "missing required argument 'job_id'"),
        ("steer", {"job_id": "ab", "message": ""}, "argument 'message' must not be empty"),
        ("run_parallel", {"tasks": []}, "argument 'tasks' needs at least 1 item"),
        ("run_parallel", {"tasks": [{"specialist": "t"}]}, "argument 'tasks[0].prompt'"),
        ("use_specialist", {"specialist": "t", "prompt": "x", "timeout_s": 0}, "between 1 and"),
    ],
)
def test_bad_arguments_give_one_clear_line(ctx, tool, arguments, message):
    outcome = call_tool(ctx, tool, arguments)
    assert outcome.is_error
    assert message in outcome.text
    assert "\n" not in outcome.text and "Traceback" not in outcome.text


def test_a_number_no_float_holds_is_refused_in_one_line() -> None:
    """The events tool's own check, behind the table's: an integer of 400 digits is shown
    as given, cut (formatting it as a float raised OverflowError)."""
    with pytest.raises(UserError, match=r"'wait_s' must be from 0 to 60; got 1000000000"):
        arg_number({"wait_s": 10**400}, "wait_s", low=0, high=60)
    with pytest.raises(UserError, match=r"got 60\.5$"):
        arg_number({"wait_s": 60.5}, "wait_s", low=0, high=60)


def test_a_handler_bug_becomes_one_line_not_a_traceback(ctx, monkeypatch):
    def broken(_ctx: ServerContext, _args: dict[str, Any]) -> dict[str, Any]:
        raise ValueError("kaput")

    spec = dataclasses.replace(TOOLS_BY_NAME["status"], handler=broken)
    monkeypatch.setitem(table.TOOLS_BY_NAME, "status", spec)  # type: ignore[index]
    outcome = failed(ctx, "status")
    assert outcome.text == "error: bug: status failed: ValueError: kaput"


def test_defaults_are_filled_in():
    assert check_arguments("feed", TOOLS_BY_NAME["feed"].input_schema, {"job_id": "ab"}) == {
        "job_id": "ab",
        "from_seq": 1,
        "limit": 50,
    }
    assert (
        check_arguments("feed", TOOLS_BY_NAME["feed"].input_schema, {"job_id": "ab", "limit": 3.0})[
            "limit"
        ]
        == 3
    )


# --- synchronous path -----------------------------------------------------------------------


def test_use_specialist_returns_the_answer(ctx):
    data = ok(ctx, "use_specialist", specialist="tester", prompt="do it")
    assert data["status"] == "done"
    assert data["result"] == "ANSWER"
    listing = ok(ctx, "status")
    assert [j["id"] for j in listing["recent"]] == [data["job_id"]]
    assert listing["finished"] == {"done": 1}
    assert ctx.jobs.ids() == []


def test_use_specialist_timeout_stops_the_job(ctx, scripts):
    scripts.append([LONG])
    started = time.monotonic()
    outcome = failed(ctx, "use_specialist", specialist="tester", prompt="slow", timeout_s=1)
    assert time.monotonic() - started < 8
    assert "timed out after 1s" in outcome.text and "(cancelled)" in outcome.text
    assert "use run" in outcome.text
    job_id = outcome.data["job_id"]
    assert _status(ctx.store(), job_id) == "cancelled"


def test_use_specialist_reports_an_agent_error(ctx, scripts):
    scripts.append([RunFinished(text=None, error="provider returned 500")])
    outcome = failed(ctx, "use_specialist", specialist="tester", prompt="x")
    assert outcome.data["status"] == "error"
    assert outcome.text.endswith("ended error: provider returned 500")


def test_run_parallel_waits_for_all_and_stops_stragglers(ctx, scripts):
    scripts.extend([[RunFinished(text="one")], [LONG]])
    data = ok(
        ctx,
        "run_parallel",
        tasks=[{"specialist": "tester", "prompt": "a"}, {"specialist": "tester", "prompt": "b"}],
        timeout_s=1,
    )
    first, second = data["results"]
    assert (first["status"], first["result"]) == ("done", "one")
    assert second["status"] == "cancelled" and "ended cancelled" in second["error"]


def test_stop_all_ends_the_servers_own_jobs(ctx, scripts):
    job_id = start_own(ctx, scripts, [LONG])
    assert ctx.jobs.stop_all(grace=3.0) == [job_id]
    assert _status(ctx.store(), job_id) == "cancelled"
    with pytest.raises(Bug, match="shutting down"):
        start_own(ctx, scripts, [LONG])


# --- reading and controlling a job ----------------------------------------------------------


def test_running_job_status_result_steer_follow_up_stop(ctx, scripts):
    job_id = start_own(ctx, scripts, [Activity("toolcall", current_tool="bash(ls)"), LONG])
    job = ok(ctx, "status", job_id=job_id[:5])["job"]
    assert (job["id"], job["status"]) == (job_id, "running")
    assert ok(ctx, "status")["active"][0]["id"] == job_id

    outcome = failed(ctx, "result", job_id=job_id)
    assert outcome.data == {"job_id": job_id, "status": "running", "error": outcome.data["error"]}
    assert "no result yet" in outcome.text and "keep working" in outcome.text

    assert ok(ctx, "steer", job_id=job_id, message="look at x") == {
        "job_id": job_id,
        "state": "delivered",
    }
    assert ok(ctx, "follow_up", job_id=job_id, message="then y") == {
        "job_id": job_id,
        "state": "queued",
    }

    stopped = ok(ctx, "stop", job_id=job_id)
    assert stopped == {"job_id": job_id, "status": "cancelled", "stopped": True}
    again = ok(ctx, "stop_specialist", job_id=job_id)
    assert again == {"job_id": job_id, "status": "cancelled", "stopped": False}
    assert "ended cancelled; it has no result" in failed(ctx, "result", job_id=job_id).text
    refused = failed(ctx, "steer", job_id=job_id, message="too late")
    assert "job " + job_id + " is cancelled" in refused.text and "continue_from" in refused.text


def test_feed_pages_by_sequence_number(ctx, scripts):
    scripts.append([*(Activity("toolcall", {"tool": f"t{i}"}) for i in range(6)), RunFinished("A")])
    job_id = ok(ctx, "use_specialist", specialist="tester", prompt="x")["job_id"]
    page = ok(ctx, "feed", job_id=job_id, limit=3)
    assert [e["seq"] for e in page["events"]] == [1, 2, 3]
    assert page["events"][0]["event"] == "starting" and "ts" not in page["events"][0]
    assert (page["next_seq"], page["more"], page["status"]) == (4, True, "done")
    rest = ok(ctx, "feed", job_id=job_id, from_seq=page["next_seq"], limit=200)
    assert rest["events"][0]["seq"] == 4 and rest["events"][-1]["event"] == "done"
    assert rest["more"] is False
    end = ok(ctx, "feed", job_id=job_id, from_seq=rest["next_seq"])
    assert (end["events"], end["next_seq"]) == ([], rest["next_seq"])


def test_status_list_stays_short(ctx):
    for _ in range(5):
        ok(ctx, "use_specialist", specialist="tester", prompt="x")
    listing = ok(ctx, "status")
    assert listing["finished"] == {"done": 5}
    assert len(listing["recent"]) == 3
    assert len(call(ctx, "status").text) < 400


def test_poll_specialist_includes_the_result_when_done(ctx):
    job_id = ok(ctx, "use_specialist", specialist="tester", prompt="x")["job_id"]
    polled = ok(ctx, "poll_specialist", job_id=job_id)
    assert (polled["status"], polled["result"]) == ("done", "ANSWER")
    answer = call(ctx, "result", job_id=job_id)
    assert answer.text == f"[job {job_id} done]\nANSWER"


def test_long_results_are_clipped_with_the_path(tmp_path):
    shown, truncated = bounded_result("x" * 100, tmp_path / "result.txt", limit=10)
    assert truncated and shown.startswith("x" * 10)
    assert "90 more characters" in shown and str(tmp_path / "result.txt") in shown
    assert bounded_result("short", tmp_path, limit=10) == ("short", False)


# --- catalog and health ---------------------------------------------------------------------


def test_init_and_list_specialists(ctx):
    init = ok(ctx, "specialist_init")
    assert "tester" in init["specialists"] and init["active_jobs"] == 0
    assert "do not poll" in init["how_to"].lower()
    listed = ok(ctx, "list_specialists", scope="project")
    assert listed["specialists"] == [
        {
            "name": "tester",
            "description": "test specialist",
            "scope": "project",
            "permission": "MEDIUM",
            "runner": "command",
        }
    ]


def test_specialist_status_shows_breakers_and_jobs(ctx):
    from specialists.native.breaker import CircuitBreaker

    breaker = CircuitBreaker("mock/mock-model")
    for _ in range(3):
        breaker.record_failure("HTTP 529 overloaded")
    data = ok(ctx, "specialist_status")
    assert data["breakers"] == [
        {
            "key": "mock/mock-model",
            "state": "open",
            "failures": 3,
            "last_error": "HTTP 529 overloaded",
        }
    ]
    assert data["jobs"]["active"] == []


# --- jobs/actions ---------------------------------------------------------------------------


def test_actions_leave_finished_jobs_alone(ctx):
    job_id = ok(ctx, "use_specialist", specialist="tester", prompt="x")["job_id"]
    store = ctx.store()
    outcome = stop_job(store, job_id)
    assert (outcome.was_active, outcome.stopped, outcome.status.status) == (False, False, "done")
    sent = send_message(store, job_id, "follow_up", "more")
    assert (sent.ok, sent.state, sent.reason) == (False, "refused", f"job {job_id} is done")


# --- the agent tool table and `events` ------------------------------------------------------


@pytest.fixture
def session_ctx(monkeypatch: pytest.MonkeyPatch) -> ServerContext:
    """A server started by Claude Code session `mcp-test` (it exports the id to its servers)."""
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "mcp-test")
    return ServerContext()


def test_a_table_tool_runs_for_the_calling_session_and_says_to_end_the_turn(session_ctx):
    outcome = call(session_ctx, "sleep", seconds=60, note="check CI")
    assert not outcome.is_error, outcome.text
    assert outcome.data["yields"] is True and "end it now" in outcome.text
    assert session_ctx.keys()[0] == "claude-mcp-test"
    (timer,) = TimerStore(session_ctx.store().root, "claude-mcp-test").pending()
    assert timer.id == outcome.data["timer_id"]
    bad = call(session_ctx, "sleep", seconds=0)
    assert bad.is_error and bad.text.startswith("error: ") and "\n" not in bad.text


def test_a_client_without_a_session_is_known_by_its_process(monkeypatch):
    monkeypatch.delenv("CLAUDE_CODE_SESSION_ID", raising=False)
    monkeypatch.setattr("specialists.base.owner.agent_ancestor", lambda pid=None: None)
    keys = ServerContext().keys()
    assert len(keys) == 1 and keys[0].startswith(f"mcp-{os.getppid()}.")


def test_events_returns_at_once_when_nothing_is_pending_or_the_wait_is_zero(session_ctx):
    started = time.monotonic()
    outcome = call(session_ctx, "events", wait_s=0)
    assert not outcome.is_error and outcome.data["events"] == []
    assert outcome.text == "No events after 0 s; nothing is pending."
    call(session_ctx, "sleep", seconds=3600)
    outcome = call(session_ctx, "events", wait_s=0.2)
    assert outcome.text.endswith("still pending: 1 timer(s).")
    assert time.monotonic() - started < 10


def test_events_waits_for_a_timer_fires_it_and_returns_it_once(session_ctx):
    """The client without hooks: sleep, then events wakes when the timer falls due."""
    TimerStore(session_ctx.store().root, "claude-mcp-test").set(
        int((time.time() + 0.5) * 1000),
        now_ms=int(time.time() * 1000),
        source=EventSource("sleep", "call-1", {"seconds": 0.5}),
    )
    outcome = call(session_ctx, "events", wait_s=30)
    assert not outcome.is_error, outcome.text
    (event,) = outcome.data["events"]
    assert event["kind"] == "timer" and event["call_id"] == "call-1"
    assert outcome.text.startswith("[specialists event] timer from sleep (call-1)")
    assert call(session_ctx, "events", wait_s=0).data["events"] == []


def test_events_is_bounded_and_a_cancelled_call_takes_nothing(session_ctx):
    assert call(session_ctx, "events", wait_s=61).is_error  # never an unbounded wait
    assert call(session_ctx, "events", nonsense=1).is_error
    Inbox(session_ctx.store().root, "claude-mcp-test").append(
        "job_exit", EventSource("bg_run", "c1", {}), "exit 0", source_id="bg-x.1", seq=1
    )
    cancelled = threading.Event()
    cancelled.set()
    outcome = call_tool(session_ctx, "events", {"wait_s": 5}, cancelled=cancelled)
    assert outcome.is_error and "cancelled" in outcome.text
    assert call(session_ctx, "events", wait_s=0).data["events"][0]["id"] == "bg-x.1:job_exit:1"
