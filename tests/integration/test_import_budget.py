"""`status`, `result`, `feed` and the hooks must start fast: no heavy imports on that path."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    *("mcp", "openai", "anthropic", "ray", "pydantic", "rich", "httpx", "yaml", "asyncio"),
    "argcomplete",  # shell completion: only when the shell asks (_ARGCOMPLETE)
)

FAST_COMMANDS = [
    ["status"],
    ["status", "--json"],
    ["feed"],
    ["result", "00000000"],
    ["hook", "user-prompt-submit"],
    ["hook", "session-start"],
    ["hook", "pre-tool-use"],
    ["hook", "post-tool-use"],
    ["hook", "stop"],
    ["steer", "00000000", "x"],
    ["stop", "00000000"],
    ["mcp"],  # an MCP client waits for its start (stdin ends at once here)
    ["mcp", "--tools", "core"],
]


def imported_modules(args: list[str], cwd: Path) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "specialists", *args],
        cwd=cwd,
        env=os.environ,
        capture_output=True,
        text=True,
        timeout=60,
        input="",
    )
    names = set()
    for line in proc.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+\d+ \|\s+(\S.*)$", line)
        if match:
            names.add(match.group(1).strip())
    assert names, f"no -X importtime output; stderr was: {proc.stderr[-500:]}"
    return names


@pytest.mark.parametrize("args", FAST_COMMANDS, ids=lambda a: " ".join(a))
def test_fast_path_imports_nothing_heavy(args, tmp_path):
    names = imported_modules(args, tmp_path)
    heavy = sorted({n for n in names if n.split(".")[0] in HEAVY})
    assert heavy == [], f"`specialists {' '.join(args)}` imports heavy modules: {heavy}"


# What a person waiting on a read verb never pays for: argparse (a plain form is read without
# it), `typing` and `datetime`, and the features (booted only when a job's news needs them).
READ_COMMANDS = [["status"], ["status", "--json"], ["status", "--all"], ["feed"]]
READ_COMMANDS += [["result", "00000000"], ["result", "00000000", "--raw"]]
NOT_FOR_READS = ("argparse", "typing", "datetime", "specialists.features", "specialists.supervise")


@pytest.mark.parametrize("args", READ_COMMANDS, ids=lambda a: " ".join(a))
def test_a_read_verb_parses_and_boots_nothing_it_does_not_need(args, tmp_path):
    names = imported_modules(args, tmp_path)
    loaded = sorted(n for n in names if n.startswith(NOT_FOR_READS))
    assert loaded == [], f"`specialists {' '.join(args)}` imports {loaded}"
