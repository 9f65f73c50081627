"""Signals, missing Node, and the housekeeping commands, through the CLI as a user runs them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_cli_pi import _alive, sp, start, status, wait_until, write_spec
from tests.support.mock_llm import MockLLM, Reply

pytestmark = pytest.mark.integration


@pytest.fixture
def pi_project(pi_bin: Path, mock_llm: MockLLM) -> Path:
    write_spec()
    return Path(os.environ["SPECIALISTS_PROJECT_ROOT"])


def test_ctrl_c_on_foreground_run_cancels_and_exits_130(pi_project: Path, mock_llm: MockLLM):
    mock_llm.enqueue(Reply("never ends", hang_after=1))
    proc = subprocess.Popen(
        [sys.executable, "-m", "specialists", "run", "tester", "--prompt", "hang"],
        cwd=pi_project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    mock_llm.wait_until_hanging(1, timeout=30)
    job_id = next(iter(os.listdir(pi_project / ".specialists" / "jobs")))
    agent = status(job_id)["pid"]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert status(job_id)["status"] == "cancelled"
    wait_until(lambda: not _alive(agent), 10, "agent gone")
    mock_llm.release()


def test_sigterm_to_background_supervisor_cancels(pi_project: Path, mock_llm: MockLLM):
    mock_llm.enqueue(Reply("never ends", hang_after=1))
    job_id = start("hang")
    mock_llm.wait_until_hanging(1, timeout=30)
    st = status(job_id)
    os.kill(st["supervisor_pid"], signal.SIGTERM)
    wait_until(lambda: status(job_id)["status"] == "cancelled", 20, "cancelled")
    wait_until(lambda: not _alive(st["pid"]) and not _alive(st["supervisor_pid"]), 10, "exit")
    kinds = [
        json.loads(line)["event"]
        for line in sp("feed", "--job", job_id, "--json").stdout.splitlines()
    ]
    assert kinds[-1] == "cancelled" and "stopping" in kinds
    mock_llm.release()


def test_node_missing_is_named(pi_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pi = shutil.which("pi")
    assert pi is not None
    (bin_dir / "pi").symlink_to(pi)
    # Only pi and python on PATH: pi's `#!/usr/bin/env node` cannot find Node.
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.path.dirname(sys.executable)}")
    out = sp("run", "tester", "--prompt", "x")
    assert out.returncode == 3  # an agent that cannot run (docs/cli.md)
    assert "Traceback" not in out.stderr
    first = out.stderr.strip().splitlines()[0]
    assert "pi 1.6.0 needs Node >= 22.19.0; no `node` on PATH" in first, out.stderr


def test_init_is_idempotent_and_gitignores(tmp_path: Path):
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / ".gitignore").write_text("node_modules/")  # no trailing newline
    first = sp("init", "--no-register")
    assert first.returncode == 0, first.stderr
    second = sp("init", "--no-register")
    assert second.returncode == 0
    assert (root / ".gitignore").read_text() == (
        "node_modules/\n.specialists/\nspecialists/config.local.toml\n"
    )
    assert (root / ".specialists" / "jobs").is_dir()


def test_gc_and_doctor(pi_project: Path, mock_llm: MockLLM):
    mock_llm.enqueue(Reply("ok"))
    job_id = start("quick")
    assert sp("result", job_id, "--wait", "--timeout", "60s").returncode == 0
    keep = sp("gc")
    assert keep.returncode == 0 and "removed 0" in keep.stdout
    gone = sp("gc", "--days", "0")
    assert gone.returncode == 0 and "removed 1" in gone.stdout
    assert sp("status", "--job", job_id).returncode == 2
    doctor = sp("doctor", "--json")
    report = json.loads(doctor.stdout)
    assert report["tools"]["pi"]["version"].startswith("1.6.0"), report["tools"]["pi"]
    assert report["specialists"] >= 8
    bad = Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / "specialists" / "broken.specialist.yaml"
    bad.write_text("metadata: [unclosed\n")
    doctor = sp("doctor")
    assert doctor.returncode == 1 and "broken.specialist.yaml" in doctor.stdout
    listed = sp("list")
    assert listed.returncode == 0 and "tester" in listed.stdout
    assert "broken.specialist.yaml" in listed.stderr
