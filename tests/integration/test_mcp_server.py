"""`specialists mcp` through the SDK's own client, in-process and over stdio, with REAL pi.

The temp project defines `tester` (pi, mock provider). The mock LLM answers "FAST DONE",
or hangs with "SLOW DONE" pending when the prompt says SLOW (until `release()`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from specialists.fronts.mcp.handlers import ServerContext
from specialists.fronts.mcp.http import build_server
from specialists.fronts.mcp.table import TOOLS_BY_NAME
from specialists.native import agent_table as registry
from specialists.store.jobs import JobStore
from specialists.store.liveness import is_alive
from specialists.store.news import NEWS
from specialists.store.paths import state_dir
from tests.support.mock_llm import MockLLM, Reply

pytestmark = pytest.mark.integration

SPEC = """\
metadata:
  name: tester
  description: test specialist
execution:
  runner: pi
  model: mock/mock-model
  permission_required: READ_ONLY
prompt:
  system: You are a careful tester.
"""
TOOL_NAMES = {
    "run", "status", "result", "feed", "steer", "follow_up", "stop",
    "specialist_init", "list_specialists", "specialist_status", "use_specialist",
    "manage_specialist", "schedule", "workflow",
    "wait", "interrupt", "children",  # control (mcp/control_tool.py)
    "events",  # collecting events without hooks
}  # fmt: skip
# and the agent tool table, as a root session is offered it (no thread-only tools)
TOOL_NAMES |= {t.name for t in registry.TOOLS if t.scope == "any"}


def _answer(req: Any) -> Reply:
    if "SLOW" in req.last_user_text():
        return Reply("SLOW DONE", hang_after=0)
    return Reply("FAST DONE")


@pytest.fixture
def project(mock_llm: MockLLM, pi_bin: Path) -> Path:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / "specialists").mkdir()
    (root / "specialists" / "tester.specialist.yaml").write_text(SPEC)
    mock_llm.set_default(_answer)
    return root


def store_of(root: Path) -> JobStore:
    return JobStore(state_dir(root), news=NEWS)


def wait_until(pred: Callable[[], bool], timeout: float = 30, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


async def call(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def wait_for_status(client: Client, job_id: str, wanted: set[str]) -> dict[str, Any]:
    with anyio.fail_after(60):
        while True:
            job = (await call(client, "status", job_id=job_id))["job"]
            if job["status"] in wanted:
                return job
            await anyio.sleep(0.1)


async def lifecycle(client: Client) -> None:
    """What every transport must do: list, dispatch, check, read, page events, bad input."""
    listed = await client.list_tools()
    assert {t.name for t in listed.tools} == TOOL_NAMES
    assert all(len(t.description or "") < 900 for t in listed.tools)
    # A text-first tool (the table's, events) has none: Claude Code would show the model
    # its structured data instead of the text (mcp/table.py McpTool.text_first).
    assert all(bool(t.output_schema) != TOOLS_BY_NAME[t.name].text_first for t in listed.tools)

    started = await call(client, "run", specialist="tester", prompt="say hi")
    job_id = started["job_id"]
    job = await wait_for_status(client, job_id, {"done", "error", "cancelled"})
    assert job["status"] == "done", job

    # A deprecated alias is listed no more, but a configuration written for it still works.
    polled = await call(client, "poll_specialist", job_id=job_id)
    assert polled["status"] == "done" and polled["result"] == "FAST DONE"

    answer = await client.call_tool("result", {"job_id": job_id})
    assert answer.structured_content == {"job_id": job_id, "status": "done", "result": "FAST DONE"}
    assert answer.content[0].text == f"[job {job_id} done]\nFAST DONE"

    page = await call(client, "feed", job_id=job_id, from_seq=1, limit=2)
    assert [e["seq"] for e in page["events"]] == [1, 2] and page["more"] is True
    rest = await call(client, "feed", job_id=job_id, from_seq=page["next_seq"])
    assert rest["events"][-1]["event"] == "done" and rest["more"] is False

    missing = await client.call_tool("run", {"specialist": "tester"})
    assert missing.is_error
    assert missing.content[0].text == "error: run: missing required argument 'prompt'"
    bad_id = await client.call_tool("result", {"job_id": "../x"})
    assert bad_id.is_error and "invalid job id '../x'" in bad_id.content[0].text
    unknown_job = await client.call_tool("stop", {"job_id": "0badc0de"})
    assert unknown_job.is_error and "no job '0badc0de'" in unknown_job.content[0].text
    with pytest.raises(MCPError, match="unknown tool 'no_such_tool'"):
        await client.call_tool("no_such_tool", {})


def test_in_process_lifecycle_with_real_pi(project):
    async def main() -> None:
        async with Client(build_server(ServerContext())) as client:
            await lifecycle(client)

    anyio.run(main)


def test_stdio_lifecycle_with_real_pi(project):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "specialists", "mcp"],
        env=dict(os.environ),
        cwd=str(project),
    )

    async def main() -> None:
        async with Client(params) as client:
            await lifecycle(client)

    anyio.run(main)


def test_stop_a_running_background_job(project, mock_llm):
    store = store_of(project)

    async def main() -> None:
        async with Client(build_server(ServerContext())) as client:
            job_id = (await call(client, "run", specialist="tester", prompt="SLOW"))["job_id"]
            await anyio.to_thread.run_sync(mock_llm.wait_until_hanging, 1, 30.0)
            job = await wait_for_status(client, job_id, {"running"})
            assert job["elapsed_s"] >= 0
            not_yet = await client.call_tool("result", {"job_id": job_id})
            assert not_yet.is_error
            assert not_yet.structured_content is None  # an error carries no answer shape
            assert not_yet.meta["specialists/error"]["status"] == "running"
            st = store.read_status(job_id)
            assert st is not None and st.pid
            stopped = await call(client, "stop", job_id=job_id)
            assert stopped == {"job_id": job_id, "status": "cancelled", "stopped": True}
            assert not is_alive(st.pid, st.agent_start_time)

    anyio.run(main)


def test_sigterm_kills_synchronous_agents_but_not_background_jobs(project, mock_llm):
    """SIGTERM to the server: use_specialist's agent dies, a `run` job keeps going."""
    store = store_of(project)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "specialists", "mcp"],
        env=dict(os.environ),
        cwd=str(project),
    )
    sync_call: dict[str, Any] = {}

    async def use_specialist(client: Client) -> None:
        try:
            with anyio.fail_after(30):
                sync_call["result"] = await client.call_tool(
                    "use_specialist", {"specialist": "tester", "prompt": "SYNC SLOW"}
                )
        except Exception as exc:  # the server dies mid-call: any error will do
            sync_call["error"] = exc

    async def main() -> tuple[str, str]:
        async with Client(params) as client:
            bg_id = (await call(client, "run", specialist="tester", prompt="BG SLOW"))["job_id"]
            await anyio.to_thread.run_sync(mock_llm.wait_until_hanging, 1, 30.0)
            async with anyio.create_task_group() as tg:
                tg.start_soon(use_specialist, client)
                await anyio.to_thread.run_sync(mock_llm.wait_until_hanging, 2, 30.0)
                sync_id = next(i for i in store.list_ids() if i != bg_id)
                await anyio.to_thread.run_sync(
                    lambda: wait_until(lambda: bool(_pid(store, sync_id)), what="agent pid")
                )
                server_pid = store.read_status(sync_id).supervisor_pid  # type: ignore[union-attr]
                assert server_pid and server_pid != os.getpid()
                os.kill(server_pid, signal.SIGTERM)
            return bg_id, sync_id

    bg_id, sync_id = anyio.run(main)
    assert "error" in sync_call or sync_call["result"].is_error

    sync = store.read_status(sync_id)
    assert sync is not None and sync.status == "cancelled", sync
    assert not is_alive(sync.pid, sync.agent_start_time)
    assert not is_alive(sync.supervisor_pid, sync.supervisor_start_time)

    bg = store.read_status(bg_id)
    assert bg is not None and bg.status == "running"
    assert is_alive(bg.supervisor_pid, bg.supervisor_start_time)
    assert is_alive(bg.pid, bg.agent_start_time)
    mock_llm.release()
    wait_until(lambda: _status(store, bg_id) == "done", what="background job done")
    assert store.read_result(bg_id) == "SLOW DONE"


def _pid(store: JobStore, job_id: str) -> int | None:
    st = store.read_status(job_id)
    return st.pid if st and st.status == "running" else None


def _status(store: JobStore, job_id: str) -> str | None:
    st = store.read_status(job_id)
    return st.status if st else None


def test_client_going_away_ends_synchronous_jobs(project, mock_llm):
    """stdin closed mid use_specialist (the client quit): the server stops its job and exits."""
    store = store_of(project)
    server = subprocess.Popen(
        [sys.executable, "-m", "specialists", "mcp"],
        cwd=project,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdin is not None
    for message in (
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "use_specialist",
                "arguments": {"specialist": "tester", "prompt": "SLOW"},
            },
        },
    ):
        server.stdin.write((json.dumps(message) + "\n").encode())
    server.stdin.flush()
    try:
        mock_llm.wait_until_hanging(1, 120.0)  # a server start plus pi: ~30 s at load 50
        job_id = store.list_ids()[0]
        wait_until(lambda: bool(_pid(store, job_id)), what="agent pid")
        st = store.read_status(job_id)
        assert st is not None and st.supervisor_pid == server.pid
        server.stdin.close()
        assert server.wait(timeout=15) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    final = store.read_status(job_id)
    assert final is not None and final.status == "cancelled", final
    assert not is_alive(st.pid, st.agent_start_time)


def test_a_client_without_hooks_sleeps_and_collects_its_wake_up_with_events(tmp_path):
    """Over stdio, as Codex or Cursor would: `sleep` answers in text (end your turn), then
    `events` waits, fires the timer and returns its event once; the data rides in `_meta`.
    The client is no Claude Code session: the server names it by its process."""
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_CODE_SESSION_ID"}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "specialists", "mcp"], env=env, cwd=str(tmp_path)
    )

    async def main() -> None:
        async with Client(params) as client:
            slept = await client.call_tool("sleep", {"seconds": 1, "note": "poll CI"})
            assert not slept.is_error and slept.structured_content is None
            assert "end it now" in slept.content[0].text  # type: ignore[union-attr]
            with anyio.fail_after(90):
                got = await client.call_tool("events", {"wait_s": 30})
            text = got.content[0].text  # type: ignore[union-attr]
            assert text.startswith("[specialists event] timer from sleep (mcp-")
            assert "poll CI" in text
            data = (got.meta or {})["specialists/data"]
            assert [e["kind"] for e in data["events"]] == ["timer"]
            again = await client.call_tool("events", {"wait_s": 0})
            assert again.content[0].text == "No events after 0 s; nothing is pending."  # type: ignore[union-attr]

    anyio.run(main)
