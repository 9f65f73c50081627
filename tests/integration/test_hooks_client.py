"""hooks/client.py: the Stop hook finds the Claude Code that runs it from CLAUDE_PID alone.

A real process stands in for Claude Code: a copy of `sleep` placed where npm puts Claude
Code's binary (beside a package.json) or where the native installer puts it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from specialists.hooks.client import claude_version, stop_wake_reply

pytestmark = pytest.mark.integration


@pytest.fixture
def running() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        proc.kill()
        proc.wait()


def start_at(path: Path, procs: list[subprocess.Popen[bytes]]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    sleep = shutil.which("sleep")
    assert sleep is not None
    shutil.copy(sleep, path)
    proc = subprocess.Popen([str(path), "60"])
    procs.append(proc)
    return str(proc.pid)


def npm_layout(root: Path, version: str) -> Path:
    package = root / "node_modules" / "@anthropic-ai" / "claude-code"
    package.mkdir(parents=True)
    doc = {"name": "@anthropic-ai/claude-code", "version": version}
    (package / "package.json").write_text(json.dumps(doc))
    return package / "bin" / "claude.exe"


@pytest.mark.parametrize(
    ("version", "expected"), [("2.1.332", (2, 1, 332)), ("2.1.197", (2, 1, 197))]
)
def test_the_npm_package_says_the_version(
    tmp_path: Path, running: list[subprocess.Popen[bytes]], version: str, expected: tuple[int, ...]
) -> None:
    pid = start_at(npm_layout(tmp_path, version), running)
    assert claude_version({"CLAUDE_PID": pid}) == expected


def test_the_native_installer_path_says_the_version(
    tmp_path: Path, running: list[subprocess.Popen[bytes]]
) -> None:
    pid = start_at(tmp_path / "share" / "claude" / "versions" / "2.1.340", running)
    assert claude_version({"CLAUDE_PID": pid}) == (2, 1, 340)


def test_anything_else_is_unknown(tmp_path: Path, running: list[subprocess.Popen[bytes]]) -> None:
    assert claude_version({}) is None
    assert claude_version({"CLAUDE_PID": "not-a-pid"}) is None
    assert claude_version({"CLAUDE_PID": "999999999"}) is None
    pid = start_at(tmp_path / "opt" / "tool-3.11.7" / "sleep", running)  # a version, not ours
    assert claude_version({"CLAUDE_PID": pid}) is None


def test_the_wake_reply_follows_the_version() -> None:
    context = {"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "ev"}}
    block = {"decision": "block", "reason": "ev"}
    assert stop_wake_reply("ev", (2, 1, 332)) == context
    assert stop_wake_reply("ev", (3, 0, 0)) == context
    assert stop_wake_reply("ev", (2, 1, 197)) == block
    assert stop_wake_reply("ev", None) == block  # unknown: the way every version reads
