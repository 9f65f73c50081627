"""`specialists doctor` starts the real pi 1.6.0 with our extension and says what it found.

Three cases, each through the CLI as a person runs it: all is well (the Node setup put
beside pi, the extension loads, its sidecar answers); the sidecar cannot start (the
extension's own warning becomes doctor's line); pi has only a Node that is too old (one line
naming both versions). A problem makes doctor exit 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def doctor(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specialists", "doctor", "--json"],
        cwd=os.environ["SPECIALISTS_PROJECT_ROOT"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_doctor_says_the_extension_loads_on_the_real_pi(pi_bin: Path) -> None:
    out = doctor({**os.environ, "SPECIALISTS_PI_BIN": str(pi_bin)})
    report = json.loads(out.stdout)
    pi = report["tools"]["pi"]
    assert pi["version"] == "1.6.0"
    assert pi["extension"] == {
        "ok": True,
        "detail": "the specialists extension loads and its sidecar answers",
    }
    assert report["tools"]["node"]["path"] == str(pi_bin.parent / "node")
    assert not [p for p in report["problems"] if p.startswith("pi:")]


def test_doctor_reports_a_sidecar_that_will_not_start(pi_bin: Path, tmp_path: Path) -> None:
    env = {**os.environ, "SPECIALISTS_PI_BIN": str(pi_bin)}
    env["SPECIALISTS_CMD"] = json.dumps([str(tmp_path / "no-such-specialists")])
    out = doctor(env)
    assert out.returncode == 1
    report = json.loads(out.stdout)
    assert report["tools"]["pi"]["extension"]["ok"] is False
    [problem] = [p for p in report["problems"] if p.startswith("pi:")]
    assert "sidecar" in problem and "\n" not in problem


def test_doctor_names_the_node_pi_needs_and_the_one_it_found(pi_bin: Path, tmp_path: Path) -> None:
    lonely = tmp_path / "bin"
    lonely.mkdir()
    (lonely / "pi").symlink_to(os.path.realpath(pi_bin))
    old = tmp_path / "old"
    old.mkdir()
    (old / "node").write_text("#!/bin/sh\necho v20.20.2\n")
    (old / "node").chmod(0o755)
    env = {**os.environ, "PATH": f"{lonely}:{old}:/usr/bin:/bin"}
    out = doctor(env)
    assert out.returncode == 1
    [problem] = [p for p in json.loads(out.stdout)["problems"] if p.startswith("pi:")]
    assert "pi 1.6.0 needs Node >= 22.19.0" in problem and "v20.20.2" in problem


def test_an_agent_cli_that_does_not_run_is_a_problem_not_a_check_mark(
    pi_bin: Path, tmp_path: Path
) -> None:
    """A `codex` that cannot be run (here a FIFO where the binary should be) was shown with
    a check mark and doctor exited 0; it is a problem line now, and the exit is 1."""
    fifo = tmp_path / "codex"
    os.mkfifo(fifo)
    env = {**os.environ, "SPECIALISTS_PI_BIN": str(pi_bin), "SPECIALISTS_CODEX_BIN": str(fifo)}
    out = doctor(env)
    assert out.returncode == 1
    report = json.loads(out.stdout)
    assert report["tools"]["codex"]["version"].startswith("unusable: not executable")
    assert [p for p in report["problems"] if p.startswith("codex:")] == [
        f"codex: {report['tools']['codex']['version']}"
    ]
    text = subprocess.run(
        [sys.executable, "-m", "specialists", "doctor"],
        cwd=os.environ["SPECIALISTS_PROJECT_ROOT"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    ).stdout
    assert "✗ codex   unusable: not executable" in text
