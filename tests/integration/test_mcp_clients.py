"""Every MCP client gets our answer: the SDKs' own clients (TypeScript, Python) over stdio, and
raw JSON-RPC lines no SDK would send (lone surrogates, closed pipes).

The TypeScript client (tests/support/mcp_ts_client.mjs) runs on @modelcontextprotocol/sdk
pinned in .tools/package.json: the SDK the MCP Inspector is built on. Its client checks
every structuredContent against the tool's output schema, errors included.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
TS_CLIENT = REPO / "tests" / "support" / "mcp_ts_client.mjs"
TS_SDK = REPO / ".tools" / "node_modules" / "@modelcontextprotocol" / "sdk"
SERVER = [sys.executable, "-m", "specialists", "mcp"]
ECHO = "metadata: {name: echo}\nexecution:\n  runner: {type: command, command: cat}\n"
FAILS = (
    "metadata: {name: fails}\nexecution:\n"
    '  runner: {type: command, command: sh, args: ["-c", "echo boom >&2; exit 3"]}\n'
)
ERROR_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("result", {"job_id": "0badc0de"}),  # no such job
    ("run", {"specialist": "echo"}),  # a required argument missing
    ("run", {"specialist": "nobody", "prompt": "x"}),  # unknown specialist
    ("status", {"job_id": 5}),  # wrong type
    ("feed", {"job_id": "../x"}),  # a path, not an id
    ("steer", {"job_id": "0badc0de", "message": "x" * 300_000}),  # too long
    ("use_specialist", {"specialist": "fails", "prompt": "x", "timeout_s": 30}),  # job failed
]


@pytest.fixture
def project() -> Path:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / "specialists").mkdir()
    (root / "specialists" / "echo.specialist.yaml").write_text(ECHO)
    (root / "specialists" / "fails.specialist.yaml").write_text(FAILS)
    return root


def ts_calls(calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    node = shutil.which("node")
    if node is None or not TS_SDK.is_dir():
        pytest.skip("needs node and @modelcontextprotocol/sdk (cd .tools && npm install)")
    out = subprocess.run(
        [node, str(TS_CLIENT), *SERVER],
        input=json.dumps(calls),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_typescript_sdk_client_accepts_every_error_result(project):
    """Before: each error came back as "Structured content does not match the tool's output
    schema" from the SDK, and the model never saw our line."""
    answers = ts_calls(ERROR_CALLS)
    assert [a["name"] for a in answers] == [name for name, _ in ERROR_CALLS]
    for answer in answers:
        assert answer["ok"], answer["error"]
        result = answer["result"]
        assert result["isError"] is True and "structuredContent" not in result
        (block,) = result["content"]
        assert block["text"].startswith("error: ") and "\n" not in block["text"]
    assert "no job '0badc0de'" in answers[0]["result"]["content"][0]["text"]
    assert answers[-1]["result"]["_meta"]["specialists/error"]["status"] == "error"


def test_typescript_sdk_client_validates_our_answers(project):
    """Successes keep their structuredContent, and the SDK finds it matches the schema."""
    answers = ts_calls(
        [
            ("use_specialist", {"specialist": "echo", "prompt": "ping", "timeout_s": 30}),
            ("status", {}),
            ("list_specialists", {}),
            ("specialist_init", {}),
        ]
    )
    for answer in answers:
        assert answer["ok"] and not answer["result"].get("isError"), answer
        assert "structuredContent" in answer["result"]
    assert answers[0]["result"]["structuredContent"]["result"] == "ping"


def test_python_sdk_client_gets_errors_and_answers(project):
    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:], env=dict(os.environ))

    async def main() -> None:
        async with Client(params) as client:
            for name, args in ERROR_CALLS:
                result = await client.call_tool(name, args)
                assert result.is_error, (name, result)
                assert result.structured_content is None
                assert result.content[0].text.startswith("error: ")  # type: ignore[union-attr]
            ok = await client.call_tool(
                "use_specialist", {"specialist": "echo", "prompt": "pong", "timeout_s": 30}
            )
            assert not ok.is_error and ok.structured_content["result"] == "pong"

    anyio.run(main)


# --- raw JSON-RPC ---------------------------------------------------------------------------

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


def raw_session(*lines: str, expect: set[int] = frozenset()) -> dict[Any, dict[str, Any]]:
    """Send initialize and the given lines, read answers until every id in `expect` has one,
    then close stdin (the client leaves). Returns the answers by id; asserts a clean exit."""
    proc = subprocess.Popen(
        SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    initialized = '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    for line in (json.dumps(INIT), initialized, *lines):
        proc.stdin.write(line + "\n")
    proc.stdin.flush()
    answers: dict[Any, dict[str, Any]] = {}
    while not {1, *expect} <= set(answers):
        line = proc.stdout.readline()  # the test's timeout bounds a server that never answers
        assert line, f"the server closed stdout; answers so far: {sorted(answers, key=str)}"
        answer = json.loads(line)
        answers[answer.get("id")] = answer
    proc.stdin.close()
    proc.wait(timeout=60)
    stderr = proc.stderr.read() if proc.stderr else ""
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
    return answers


def test_a_lone_surrogate_gets_an_answer(project):
    """Before: the SDK's parser dropped the line and the client waited forever."""
    call = (
        '{"jsonrpc":"2.0","id":7,"method":"tools/call",'
        '"params":{"name":"run","arguments":{"specialist":"echo","prompt":"a\\ud800b"}}}'
    )
    answers = raw_session(call, expect={7})
    error = answers[7]["error"]
    assert error["code"] == -32602 and "lone surrogate" in error["message"]
    assert not (project / ".specialists" / "jobs").exists() or not [
        p for p in (project / ".specialists" / "jobs").iterdir() if p.name[0] != "."
    ]


def test_huge_and_malformed_lines_do_not_stop_the_server(project):
    junk = ["not json", "[1,2", json.dumps({"jsonrpc": "2.0", "id": 8, "method": 5})]
    big = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "status", "arguments": {"job_id": "a" * 5_000_000}},
        }
    )
    after = json.dumps({"jsonrpc": "2.0", "id": 10, "method": "tools/list"})
    answers = raw_session(*junk, big, after, expect={9, 10})
    assert answers[9]["result"]["isError"] is True
    assert "too long" in answers[9]["result"]["content"][0]["text"]
    assert len(answers[10]["result"]["tools"]) >= 10


def test_closed_stdin_is_one_line_not_a_traceback():
    """`specialists mcp <&-`: exit 2 and one line saying what the command is for."""
    out = subprocess.run(
        ["sh", "-c", 'exec "$0" -m specialists mcp <&-', sys.executable],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 2
    (line,) = out.stderr.splitlines()
    assert line.startswith("error: stdin is closed") and "MCP client" in line


def test_client_gone_mid_request_ends_the_server_cleanly(project):
    """The client closes stdin while a synchronous call runs: the server stops its job and
    exits 0, printing no traceback."""
    call = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 11,
            "method": "tools/call",
            "params": {
                "name": "use_specialist",
                "arguments": {"specialist": "echo", "prompt": "x", "timeout_s": 60},
            },
        }
    )
    raw_session(call)  # asserts exit 0 and no traceback
