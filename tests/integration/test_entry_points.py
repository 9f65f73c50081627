"""What `specialists init` and `install --pi` write runs from an environment whose PATH lacks
the virtualenv, and says so clearly once that virtualenv is gone.

The virtualenv here lives at a path with a space and a quote (`my venv's`): a copy of this
one made of links (its pyvenv.cfg and lib/ beside a bin/python), so removing it is removing
a virtualenv as a person would, while the test's own interpreter stays.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from specialists.fronts.mcp.table import TOOLS

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CORE = {t.name for t in TOOLS if t.core}
BARE_PATH = "/usr/local/bin:/usr/bin:/bin"  # no virtualenv on it
HOOK_INPUT = {"session_id": "s-1", "hook_event_name": "SessionStart", "source": "startup"}


@pytest.fixture
def odd_venv(tmp_path: Path) -> Path:
    """A virtualenv at `<tmp>/my venv's` (links to this one's parts)."""
    venv = tmp_path / "my venv's"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    shutil.copy(Path(sys.prefix) / "pyvenv.cfg", venv / "pyvenv.cfg")
    (venv / "lib").symlink_to(Path(sys.prefix) / "lib")
    return venv


def bare_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SPECIALISTS_CMD", "VIRTUAL_ENV")}
    env["PATH"] = BARE_PATH
    return env


def sp(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "specialists", *args],
        cwd=cwd,
        env=bare_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def run_hook(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """As Claude Code runs a hook: through the shell, the hook input on stdin."""
    return subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps({**HOOK_INPUT, "cwd": str(cwd)}),
        cwd=cwd,
        env=bare_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def mcp_listing(entry: dict[str, Any], cwd: Path) -> set[str]:
    """Start a server as its .mcp.json entry says; initialize and list its tools."""
    proc = subprocess.Popen(
        [entry["command"], *entry["args"]],
        cwd=cwd,
        env={**bare_env(), **entry["env"]},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    for message in (
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
        },
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ):
        proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    answers = [json.loads(proc.stdout.readline()) for _ in range(2)]
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    return {t["name"] for t in answers[1]["result"]["tools"]}


def hook_commands(settings: dict[str, Any]) -> dict[str, str]:
    return {
        event: groups[-1]["hooks"][-1]["command"] for event, groups in settings["hooks"].items()
    }


def test_init_writes_entry_points_that_run_without_the_venv_on_path(odd_venv, tmp_path):
    project = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    python = odd_venv / "bin" / "python"
    out = sp(python, "init", cwd=project)
    assert out.returncode == 0, out.stderr
    assert f"run {python}" in out.stdout  # init says which interpreter it wrote

    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert {e["command"] for e in servers.values()} == {str(python)}
    assert mcp_listing(servers["specialists"], project) == CORE
    more = mcp_listing(servers["specialists-more"], project)
    assert more and not more & CORE and "schedule" in more

    hooks = hook_commands(json.loads((project / ".claude" / "settings.json").read_text()))
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"}
    started = run_hook(hooks["SessionStart"], project)
    assert started.returncode == 0, started.stderr
    context = json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("[specialists] available:")

    out = sp(python, "doctor", "--json", cwd=project)
    report = json.loads(out.stdout)
    assert [f["python"] for f in report["entry_points"]] == [str(python)]
    assert all(f["problem"] is None for f in report["entry_points"])

    # the virtualenv goes away
    shutil.rmtree(odd_venv)
    gone = run_hook(hooks["SessionStart"], project)
    assert gone.returncode == 0 and gone.stderr == ""
    (line,) = gone.stdout.splitlines()
    message = json.loads(line)["systemMessage"]  # Claude Code shows this to the person
    assert message.startswith(f"specialists: {python} is gone") and "specialists init" in message
    assert json.loads(run_hook(hooks["UserPromptSubmit"], project).stdout) == json.loads(line)
    for event in ("PreToolUse", "PostToolUse", "Stop"):  # once a prompt is enough: silence
        quiet = run_hook(hooks[event], project)
        assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")

    doctor = subprocess.run(
        [sys.executable, "-m", "specialists", "doctor"],
        cwd=project,
        env=bare_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert doctor.returncode == 1
    problems = [ln for ln in doctor.stdout.splitlines() if "entry points:" in ln]
    assert problems and all(f"{python} is gone" in ln for ln in problems)
    assert "MCP server specialists" in problems[0] and "specialists init" in problems[0]

    # init again from the install in use brings every entry point back
    assert sp(Path(sys.executable), "init", cwd=project).returncode == 0
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert servers["specialists"]["command"] == os.path.abspath(sys.executable)
    hooks = hook_commands(json.loads((project / ".claude" / "settings.json").read_text()))
    assert run_hook(hooks["SessionStart"], project).stdout.startswith('{"hookSpecificOutput"')


def test_install_pi_records_the_interpreter_the_extension_starts(odd_venv):
    """The extension's own lookup (core.mjs sidecarCommand) finds what install --pi wrote,
    and once it is gone says what to do instead of failing to spawn `specialists`."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("needs node")
    project = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    python = odd_venv / "bin" / "python"
    assert sp(python, "install", "--pi", cwd=project).returncode == 0
    core = REPO / "src" / "specialists" / "runners" / "pi_extension" / "core.mjs"
    script = (
        f"import({json.dumps(str(core))}).then((c) => {{"
        "try { console.log(JSON.stringify(c.sidecarCommand(process.env))); }"
        " catch (e) { console.log('ERROR ' + e.message); } })"
    )

    def lookup() -> str:
        out = subprocess.run(
            [node, "-e", script],
            cwd=project / "src" if (project / "src").is_dir() else project,
            env=bare_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    assert json.loads(lookup()) == [str(python), "-m", "specialists"]
    shutil.rmtree(odd_venv)
    said = lookup()
    assert said.startswith("ERROR ") and f"{python}, which is gone" in said
    assert "specialists install --pi" in said
