"""`specialists run ... --gate "<cmd>"`: a plain job gated on the host, end to end with real
processes (the echo specialist on the command runner, a real git project)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_cli_pi import sp
from tests.support.jobs import echo_project
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


def events(root: Path, job: str) -> list[dict[str, object]]:
    path = root / ".specialists" / "jobs" / job / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_failed_gate_fails_the_job_then_a_pass_is_memoized():
    root = echo_project()
    (root / ".gitignore").write_text(".specialists/\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "spec"], cwd=root, check=True)
    gate = "test -f fixed || { echo 'no fix yet'; exit 4; }"
    out = sp("run", "echo", "--prompt", "hi", "--json", "--gate", gate)
    assert out.returncode == 1, out.stderr
    failed = json.loads(out.stdout)
    assert failed["status"] == "error"
    assert "gate `" in failed["error"] and "exit 4" in failed["error"]
    assert "no fix yet" in failed["error"]
    kinds = [e["event"] for e in events(root, failed["id"])]
    assert kinds.index("gate_start") < kinds.index("gate") < kinds.index("error")
    (root / "fixed").write_text("yes\n")
    passed = json.loads(sp("run", "echo", "--prompt", "hi", "--json", "--gate", gate).stdout)
    assert passed["status"] == "done" and passed["result"].strip() == "hi"
    again = json.loads(sp("run", "echo", "--prompt", "hi", "--json", "--gate", gate).stdout)
    assert again["status"] == "done"
    (gate_event,) = [e for e in events(root, again["id"]) if e["event"] == "gate"]
    assert gate_event["memo"] == "hit" and gate_event["outcome"] == "passed"
    evidence = json.loads(Path(str(gate_event["evidence"])).read_text())
    assert evidence["memo"] == "hit" and evidence["command"] == gate


def test_a_background_job_with_a_hanging_gate_fails_with_the_timeout():
    """The gate runs in the background supervisor too; one that hangs past --gate-timeout is
    killed and named."""
    echo_project()
    gate = "echo waiting; sleep 300"
    out = sp("run", "echo", "-p", "hi", "--background", "--gate", gate, "--gate-timeout", "1s")
    assert out.returncode == 0, out.stderr
    job = out.stdout.strip()

    def status() -> dict[str, object]:
        return dict(json.loads(sp("status", "--job", job, "--json").stdout))

    wait_until(lambda: status()["status"] == "error", what="the gated job to fail")
    error = str(status()["error"])
    assert "timed out after 1s" in error and "waiting" in error


def test_a_bad_gate_is_one_clear_error_and_no_job():
    root = echo_project()
    out = sp("run", "echo", "--prompt", "hi", "--gate", "   ")
    assert out.returncode == 2
    assert out.stderr.strip().startswith("error: argument --gate: must not be empty")
    out = sp("run", "echo", "--prompt", "hi", "--gate", "x" * 9000)
    assert out.returncode == 2
    assert out.stderr.strip() == "error: --gate command is longer than 8192 characters"
    out = sp("run", "echo", "--prompt", "hi", "--gate-timeout", "5s")
    assert out.returncode == 2 and "--gate-timeout needs --gate" in out.stderr
    assert "Traceback" not in out.stderr
    jobs = root / ".specialists" / "jobs"
    assert not jobs.exists() or not any(jobs.iterdir())


def test_a_sandboxed_job_is_gated_in_its_worktree():
    """With --sandbox the gate runs in the job's worktree (on its sandbox branch), not in the
    root working copy."""
    root = echo_project()
    (root / ".gitignore").write_text(".specialists/\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "spec"], cwd=root, check=True)
    gate = "git rev-parse --abbrev-ref HEAD; pwd; exit 9"
    out = sp("run", "echo", "-p", "hi", "--json", "--sandbox", "--gate", gate)
    failed = json.loads(out.stdout)
    assert failed["status"] == "error", out.stderr
    assert "sandbox-s-" in failed["error"] and "/.specialists/sandboxes/s-" in failed["error"]
