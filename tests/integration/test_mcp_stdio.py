"""`specialists mcp` on stdio against the official clients, in every protocol era we speak.

- The Python SDK's client: `auto` (server/discover, then the 2026-07-28 per-request era) and
  `legacy` (initialize at 2025-11-25).
- The TypeScript SDK 2.x through the MCP Inspector's CLI (@modelcontextprotocol/inspector,
  pinned in .tools/package.json; it needs Node >= 22.19) in its `legacy` and `modern` eras,
  and its client SDK for what one Inspector run cannot show: a cancelled call on a
  connection that goes on.
- Raw JSON-RPC for an older client (2025-06-18, 2024-11-05) and for what no SDK would send.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from specialists.features.asks.ops import list_asks
from specialists.fronts.mcp import wire
from specialists.fronts.mcp.table import ALWAYS_LOAD_META, TOOLS
from specialists.store.jobs import JobStore
from specialists.store.liveness import is_alive
from specialists.store.paths import state_dir
from tests.support.agent_env import find_agent_bin
from tests.support.jobs import new_job

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
TS_SESSION = REPO / "tests" / "support" / "mcp_ts_session.mjs"
SERVER = [sys.executable, "-m", "specialists", "mcp"]
CORE = {t.name for t in TOOLS if t.core}
ECHO = "metadata: {name: echo}\nexecution:\n  runner: {type: command, command: cat}\n"
MODERN_META = {wire.VERSION_KEY: "2026-07-28", wire.CAPABILITIES_KEY: {}}


@pytest.fixture
def project() -> Path:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / "specialists").mkdir()
    (root / "specialists" / "echo.specialist.yaml").write_text(ECHO)
    return root


def params(*extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=SERVER[0], args=[*SERVER[1:], *extra], env=dict(os.environ)
    )


# --- the Python SDK ---------------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_python_client_in_both_eras(project, mode, version):
    async def main() -> None:
        async with Client(params("--tools", "core"), mode=mode) as client:
            assert client.protocol_version == version
            listed = await client.list_tools()
            assert {t.name for t in listed.tools} == CORE
            assert all((t.meta or {}).get(ALWAYS_LOAD_META) is True for t in listed.tools)
            status = await client.call_tool("status", {})
            assert status.structured_content == {"active": [], "finished": {}, "recent": []}
            started = await client.call_tool("run", {"specialist": "echo", "prompt": "hi"})
            data = started.structured_content or {}
            assert re.fullmatch(r"[0-9a-f]{8}", data["job_id"])
            assert "call result once" in data["note"]  # the guidance Claude Code shows
            missing = await client.call_tool("result", {"job_id": "0badc0de"})
            assert missing.is_error and missing.structured_content is None
            assert missing.content[0].text.startswith("error: no job '0badc0de'")  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="unknown tool 'schedule'"):
                await client.call_tool("schedule", {"action": "list"})  # in the `more` set

    anyio.run(main)


def test_a_long_call_blocks_no_other_and_a_cancelled_one_takes_nothing(project):
    """While `events` waits, other calls are answered. Cancelled, it stops waiting: the
    timer event that fires afterwards is still there for the next call (a call that went
    on waiting would have taken it with it)."""

    async def main() -> None:
        async with Client(params()) as client:
            with anyio.CancelScope() as scope:

                async def others() -> None:
                    with anyio.fail_after(30):
                        for _ in range(3):
                            status = await client.call_tool("status", {})
                            assert not status.is_error
                    scope.cancel()

                async with anyio.create_task_group() as tg:
                    tg.start_soon(others)
                    await client.call_tool("events", {"wait_s": 60})
                    raise AssertionError("events returned instead of being cancelled")
            slept = await client.call_tool("sleep", {"seconds": 1, "note": "after the cancel"})
            assert not slept.is_error
            await anyio.sleep(3)
            with anyio.fail_after(30):
                got = await client.call_tool("events", {"wait_s": 20})
            assert "after the cancel" in got.content[0].text  # type: ignore[union-attr]

    anyio.run(main)


# --- an older client, and what no SDK sends ------------------------------------------------


def raw_session(lines: list[object], expect: set[Any], *extra: str) -> dict[Any, dict[str, Any]]:
    """Send the lines, read answers until every id in `expect` has one, close stdin. Asserts
    a clean exit without a traceback."""
    proc = subprocess.Popen(
        [*SERVER, *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    for line in lines:
        proc.stdin.write(line if isinstance(line, bytes) else json.dumps(line).encode())
        proc.stdin.write(b"\n")
    proc.stdin.flush()
    answers: dict[Any, dict[str, Any]] = {}
    while not expect <= set(answers):
        out = proc.stdout.readline()  # the test's timeout bounds a server that never answers
        assert out, f"the server closed stdout; answers so far: {answers}"
        answer = json.loads(out)
        answers[answer.get("id")] = answer
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    stderr = proc.stderr.read().decode()
    assert "Traceback" not in stderr, stderr
    return answers


def initialize(version: str, request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "old", "version": "1"},
        },
    }


@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26", "2024-11-05", "1999-01-01"])
def test_an_older_client_gets_its_version_or_our_newest_handshake(project, version):
    answers = raw_session(
        [
            initialize(version),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        ],
        {1, 2, 3},
    )
    expected = version if version in wire.HANDSHAKE_VERSIONS else "2025-11-25"
    assert answers[1]["result"]["protocolVersion"] == expected
    assert "resultType" not in answers[2]["result"]  # a legacy answer stays legacy
    assert {t["name"] for t in answers[2]["result"]["tools"]} >= CORE | {"schedule", "events"}
    assert answers[3]["result"] == {}


def test_a_modern_request_at_a_version_we_lack_is_told_which_we_have(project):
    answers = raw_session(
        [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/list",
                "params": {"_meta": {**MODERN_META, wire.VERSION_KEY: "2099-01-01"}},
            },
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "server/discover",
                "params": {"_meta": MODERN_META},
            },
        ],
        {1, 2},
    )
    error = answers[1]["error"]
    assert error["code"] == -32022 and error["data"]["requested"] == "2099-01-01"
    assert error["data"]["supported"][:2] == ["2026-07-28", "2025-11-25"]
    assert answers[2]["result"]["supportedVersions"] == list(wire.SUPPORTED_VERSIONS)


def test_deep_huge_and_broken_lines_each_get_one_answer(project):
    deep = b'{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":' + b"[" * 100_000
    huge = b'{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"p":"'
    huge += b"x" * (wire.MAX_LINE_BYTES + 10) + b'"}}'
    answers = raw_session(
        [
            deep + b"]" * 100_000 + b"}",
            huge,
            b'{"jsonrpc":"2.0","id":"t","method":"tools/list"',
            b"\xff\xfe",
            {"jsonrpc": "2.0", "id": "after", "method": "ping"},
        ],
        {"deep", "huge", "t", None, "after"},
    )
    assert answers["deep"]["error"]["code"] == wire.PARSE_ERROR
    assert "nested too deeply" in answers["deep"]["error"]["message"]
    assert "longer than 16 MiB" in answers["huge"]["error"]["message"]
    assert answers["t"]["error"]["code"] == wire.PARSE_ERROR
    assert "not UTF-8" in answers[None]["error"]["message"]
    assert answers["after"]["result"] == {}


def test_a_client_that_stops_reading_ends_the_server(project):
    """Its stdout is gone: the next answer cannot be written, and the server exits at once
    instead of serving nobody."""
    proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdout.close()
    proc.stdin.write(json.dumps(initialize("2025-11-25")).encode() + b"\n")
    proc.stdin.flush()
    assert proc.wait(timeout=60) == 0


def test_the_stdio_path_never_imports_the_sdk(project):
    """Answering initialize, listing and calling import no mcp, pydantic, anyio or httpx."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "specialists", "mcp"],
        input=b"\n".join(
            json.dumps(m).encode()
            for m in (
                initialize("2025-11-25"),
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {"name": "status", "arguments": {}},
                },
            )
        )
        + b"\n",
        capture_output=True,
        timeout=120,
    )
    assert out.returncode == 0
    # Calls run side by side: answers come in any order (JSON-RPC matches them by id).
    assert sorted(json.loads(line)["id"] for line in out.stdout.splitlines()) == [1, 2, 3]
    lines = out.stderr.decode(errors="replace")
    imported = {
        m.group(1).strip().split(".")[0]
        for m in re.finditer(r"import time:\s+\d+ \|\s+\d+ \|\s+(\S.*)", lines)
    }
    heavy = {"mcp", "pydantic", "anyio", "httpx", "asyncio"} & imported
    assert not heavy, heavy


# --- the TypeScript SDK, through the MCP Inspector ------------------------------------------


def node_22() -> Path:
    node = find_agent_bin("node")
    if node is None:
        pytest.skip("needs Node >= 22.19 (scripts/setup installs it under .tools)")
    version = subprocess.run([str(node), "--version"], capture_output=True, text=True).stdout
    numbers = tuple(int(n) for n in re.findall(r"\d+", version)[:2])
    if numbers < (22, 19):
        pytest.skip(f"the MCP Inspector needs Node >= 22.19; {node} is {version.strip()}")
    return node


def inspector_js() -> Path:
    found = find_agent_bin("mcp-inspector")
    if found is None:
        pytest.skip("needs @modelcontextprotocol/inspector (scripts/setup installs it in .tools)")
    return found.resolve()


def inspect(era: str, *method: str, extra: tuple[str, ...] = ()) -> tuple[int, Any, str]:
    """One Inspector CLI run against our server in `era`: (exit code, JSON output, stderr)."""
    node, js = node_22(), inspector_js()
    config = Path(os.environ["SPECIALISTS_PROJECT_ROOT"]).parent / f"inspector-{era}.json"
    server = {
        "type": "stdio",
        "command": SERVER[0],
        "args": [*SERVER[1:], *extra],
        "env": dict(os.environ),
        "protocolEra": era,
    }
    config.write_text(json.dumps({"mcpServers": {"sp": server}}))
    out = subprocess.run(
        [
            str(node),
            str(js),
            "--cli",
            "--config",
            str(config),
            "--server",
            "sp",
            "--format",
            "json",
            *method,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "MCP_INSPECTOR_SECRET_STORE": "memory"},  # no keychain here
    )
    body = json.loads(out.stdout) if out.stdout.strip().startswith("{") else out.stdout
    return out.returncode, body, out.stderr


@pytest.mark.parametrize(("era", "version"), [("legacy", "2025-11-25"), ("modern", "2026-07-28")])
def test_inspector_cli_in_both_eras(project, era, version):
    code, connected, err = inspect(era, "--method", "initialize")
    assert code == 0, err
    assert connected["result"]["protocolVersion"] == version

    code, listed, err = inspect(era, "--method", "tools/list", extra=("--tools", "core"))
    assert code == 0, err
    tools = listed["result"]["tools"]
    assert {t["name"] for t in tools} == CORE
    assert all(t["_meta"][ALWAYS_LOAD_META] is True for t in tools)

    # structured output, which the SDK checks against the output schema
    code, ran, err = inspect(
        era,
        "--method",
        "tools/call",
        "--tool-name",
        "run",
        "--tool-args-json",
        '{"specialist": "echo", "prompt": "hi"}',
    )
    assert code == 0, err
    result = ran["result"]
    assert not result.get("isError") and "call result once" in result["structuredContent"]["note"]

    # an error result: exit 5, the one line, no structuredContent to fail the schema check
    code, failed, err = inspect(
        era,
        "--method",
        "tools/call",
        "--tool-name",
        "result",
        "--tool-args-json",
        '{"job_id": "0badc0de"}',
    )
    assert code == 5, (failed, err)
    result = failed["result"]
    assert result["isError"] is True and "structuredContent" not in result
    assert result["content"][0]["text"].startswith("error: no job '0badc0de'")


def ts_session(mode: str, ops: list[list[Any]], *extra: str) -> subprocess.Popen[str]:
    """A running TS client session (mcp_ts_session.mjs): its stdout holds one JSON line per
    op; the caller reads them (and may look at the project meanwhile)."""
    node = node_22()
    client_dir = inspector_js().parents[4] / "client"  # @modelcontextprotocol/client, hoisted
    proc = subprocess.Popen(
        [str(node), str(TS_SESSION), *SERVER, *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MCP_CLIENT_DIR": str(client_dir)},
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"mode": mode, "ops": ops}))
    proc.stdin.close()
    return proc


def next_line(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the test's timeout bounds a client that never answers
    assert line, proc.stderr.read()[-3000:] if proc.stderr else "no output"
    return json.loads(line)


@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_typescript_client_cancels_a_waiting_ask_and_the_session_goes_on(
    project, mode, version, tmp_path
):
    """contact_supervisor waits for the parent's reply (600 s); the client aborts the call:
    the ask is settled `cancelled` while the connection is still open (not only when the
    client leaves), and the next call on the same connection is answered."""
    boss = "cli-boss"
    record, lock = new_job(JobStore(state_dir(project), news=None), project, owner=[boss])
    lock.release()
    ask = {"kind": "need_decision", "message": "tabs or spaces?", "timeout_s": 600}
    proc = ts_session(
        mode,
        [
            ["cancel", 5000, "contact_supervisor", ask],
            ["pause", 60_000, str(tmp_path / "seen")],  # the connection stays open till then
            ["call", "bg_list", {}],
        ],
        "--job",
        record.id,
    )
    try:
        assert next_line(proc)["connected"]["version"] == version
        cancelled = next_line(proc)
        assert cancelled["ok"] is False and "cancels it" in cancelled["error"]
        deadline = time.monotonic() + 30
        while list_asks(state_dir(project), (boss,), include_settled=False)[0]:
            assert time.monotonic() < deadline, "the cancelled ask is still open"
            time.sleep(0.1)
        assert proc.poll() is None, "the session ended before the ask was settled"
        (row,) = list_asks(state_dir(project), (boss,), include_settled=True)[0]
        assert row.state == "cancelled" and row.outcome is not None
        assert row.outcome.why == "its MCP client cancelled the call"
        (tmp_path / "seen").write_text("")
        assert next_line(proc) == {"op": "pause", "ok": True}
        after = next_line(proc)
        assert after["ok"] is True and not after["result"].get("isError"), after
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


SLEEPER = (
    "metadata: {name: sleeper}\nexecution:\n"
    '  runner: {type: command, command: sh, args: ["-c", "sleep 300"]}\n'
)


def test_a_server_killed_mid_call_loses_no_job(project):
    """kill -9 while use_specialist waits on a job the server supervises itself: the client
    sees the connection end, the agent dies with the server, and the job reads as ended
    (crash recovery) with its reason, not as running forever."""
    (project / "specialists" / "sleeper.specialist.yaml").write_text(SLEEPER)
    proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "use_specialist",
            "arguments": {"specialist": "sleeper", "prompt": "x", "timeout_s": 600},
        },
    }
    for message in (initialize("2025-11-25"), call):
        proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    store = JobStore(state_dir(project), news=None)
    deadline = time.monotonic() + 60
    while not (ids := store.list_ids()) or not (st := store.read_status(ids[0])) or not st.pid:
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.1)
    assert st.supervisor_pid == proc.pid
    proc.kill()
    proc.wait(timeout=30)
    assert proc.stdout.readline() == b""  # the client sees the end, not a hang
    deadline = time.monotonic() + 30
    while is_alive(st.pid, st.agent_start_time):
        assert time.monotonic() < deadline, "the agent outlived its server"
        time.sleep(0.1)
    shown = subprocess.run(
        [*SERVER[:-1], "status", ids[0], "--json"], capture_output=True, text=True, timeout=60
    )
    final = json.loads(shown.stdout)
    assert final["status"] == "error" and "supervisor crashed" in final["error"], final
