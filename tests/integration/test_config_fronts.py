"""One unknown key in config.toml, on every front (issue 21 item 15): named once, ignored;
the rest of the file applies. Before, `bg run` and `timer set` refused, `run` said nothing,
and the MCP server and the pi sidecar dropped the whole file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.integration

CONFIG = "[jobs]\nmax = 1\nfoo = 1\n"  # one unknown key beside one that matters
WARNING = "jobs.foo: unknown key, ignored"


def root() -> Path:
    return Path(os.environ["SPECIALISTS_PROJECT_ROOT"])


@pytest.fixture(autouse=True)
def project() -> None:
    (root() / "specialists").mkdir(exist_ok=True)
    (root() / "specialists" / "echo.specialist.yaml").write_text(
        "metadata: {name: echo, description: t}\n"
        "execution: {runner: {type: command, command: cat}}\n"
        'prompt: {task_template: "$prompt"}\n'
    )
    (root() / ".specialists").mkdir(exist_ok=True)
    (root() / ".specialists" / "config.toml").write_text(CONFIG)


def sp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specialists", *args],
        cwd=root(), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.parametrize(
    "argv",
    [
        ("run", "echo", "--prompt", "hi"),
        ("run", "echo", "--prompt", "hi", "--background"),
        ("bg", "run", "sleep 30"),
        ("timer", "set", "600", "--note", "x"),
    ],
)
def test_the_cli_names_it_once_and_goes_on(argv: tuple[str, ...]) -> None:
    out = sp(*argv)
    assert out.returncode == 0, out.stderr
    warnings = [ln for ln in out.stderr.splitlines() if ln.startswith("warning: ")]
    assert len(warnings) == 1 and warnings[0].endswith(WARNING), out.stderr


def test_the_rest_of_the_file_applies_to_bg_run() -> None:
    """`[jobs] max = 1` still holds beside the unknown key: a second command is refused."""
    assert sp("bg", "run", "sleep 30").returncode == 0
    second = sp("bg", "run", "sleep 30")
    assert second.returncode != 0 and "1" in second.stderr, second.stderr
    sp("bg", "cancel", "--all")


def test_the_mcp_server_names_it_once_and_applies_the_rest() -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "specialists", "mcp"], env=dict(os.environ),
        cwd=str(root()),
    )  # fmt: skip

    async def main() -> list[str]:
        texts = []
        async with Client(params) as client:
            for command in ("sleep 30", "sleep 31"):
                got = await client.call_tool("bg_run", {"command": command})
                texts.append(got.content[0].text)  # type: ignore[union-attr]
            await client.call_tool("bg_cancel", {"all": True})
        return texts

    first, second = anyio.run(main)
    assert WARNING in first and "error" not in first.split("\n")[0]
    assert WARNING not in second  # once per server
    assert "error" in second.lower()  # [jobs] max = 1 applies: the file was not dropped
