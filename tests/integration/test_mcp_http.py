"""`specialists mcp --http`: the tool table over streamable HTTP, behind a bearer token.

A real server process, the SDK's own HTTP client, a real job (command runner) run to done
through the `run` tool; without the token, or with a wrong one, every request is refused
before the SDK sees it; a port in use is one clear line and exit 2.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

pytestmark = pytest.mark.integration

SPEC = """\
metadata:
  name: echo
  description: answers with what it was told
execution:
  runner: {type: command, command: sh, args: [-c, "cat >/dev/null; echo HTTP DONE"]}
  permission_required: READ_ONLY
"""
TOKEN = "team-token-0123456789abcdef"


def _start(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "specialists", "mcp", "--http", *args],
        cwd=root,
        env=env or dict(os.environ),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def server() -> Iterator[tuple[str, str]]:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / "specialists").mkdir()
    (root / "specialists" / "echo.specialist.yaml").write_text(SPEC)
    proc = _start(root, "--port", "0")
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split(": ", 1)[1].strip()  # waits for the bound socket
        token = proc.stdout.readline().split(": ", 1)[1].strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), url
        yield url, token
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def _call(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def test_tools_over_http_with_the_token(server):
    url, token = server

    async def main() -> None:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"run", "status", "result", "stop"} <= names
            job_id = (await _call(client, "run", specialist="echo", prompt="hi"))["job_id"]
            with anyio.fail_after(60):
                while (await _call(client, "status", job_id=job_id))["job"]["status"] != "done":
                    await anyio.sleep(0.1)
            answer = await _call(client, "result", job_id=job_id)
            assert answer["result"].strip() == "HTTP DONE"

    anyio.run(main)


@pytest.mark.parametrize("header", [None, "Bearer wrong-token-0123456789", "Basic abc"])
def test_requests_without_the_token_are_refused(server, header):
    url, _ = server
    request = urllib.request.Request(
        url,
        data=b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
        headers={"content-type": "application/json", "accept": "application/json"},
        method="POST",
    )
    if header is not None:
        request.add_header("Authorization", header)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 401
    assert b"unauthorized" in refused.value.read()


def test_port_in_use_and_bad_token_are_one_line_each():
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        proc = _start(root, "--port", str(port))
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert err.strip().splitlines() == [
        f"error: port {port} on 127.0.0.1 is in use (stop what holds it, or pick another "
        "with --port (0: any free port))"
    ]
    short = _start(root, "--port", "0", env={**os.environ, "SPECIALISTS_MCP_TOKEN": "short"})
    _, err = short.communicate(timeout=60)
    assert short.returncode == 2 and "SPECIALISTS_MCP_TOKEN must be at least 16" in err
    assert "Traceback" not in err


def test_a_shared_token_from_the_environment_is_not_printed():
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    proc = _start(root, "--port", "0", env={**os.environ, "SPECIALISTS_MCP_TOKEN": TOKEN})
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        assert proc.stdout.readline().strip() == "token: from $SPECIALISTS_MCP_TOKEN"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
