"""A real supervisor whose agent floods a 256 KiB store ends `error` naming the full disk.

The project's .specialists/ is a small tmpfs; a command-runner agent prints megabytes. The
job must end in a terminal state that says "no space left on device", written once (from
the room reserved at creation), whatever readers come later and after space returns; the
foreground run prints one error line and no traceback.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.integration.test_cli_pi import sp, wait_until
from tests.support.tmpfs import fill, small_tmpfs

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

FLOOD = """\
metadata:
  name: flood
  description: prints far more than the store can hold
execution:
  runner:
    type: command
    command: sh
    args: ["-c", "cat >/dev/null; yes 'flood flood flood flood' | head -c {size}; echo end"]
prompt:
  task_template: "$prompt"
"""


@pytest.fixture
def project():
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / "specialists").mkdir(exist_ok=True)
    (root / "specialists" / "flood.specialist.yaml").write_text(FLOOD.format(size=4_000_000))
    (root / "specialists" / "small.specialist.yaml").write_text(
        FLOOD.format(size=100).replace("name: flood", "name: small")
    )
    with small_tmpfs(root / ".specialists"):
        yield root


def status(job_id: str) -> dict:
    out = sp("status", "--job", job_id, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def final_events(root: Path, job_id: str) -> list[dict]:
    lines = (root / ".specialists" / "jobs" / job_id / "events.jsonl").read_bytes().splitlines()
    events = [json.loads(line) for line in lines if line.strip()]
    return [e for e in events if e["event"] in ("done", "error", "cancelled")]


def test_a_flooding_agent_ends_the_job_with_the_cause_written_once(project: Path) -> None:
    out = sp("run", "flood", "--background", "--prompt", "go")
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    wait_until(lambda: status(job_id)["status"] not in ("starting", "running"), 120, "the end")
    st = status(job_id)
    assert st["status"] == "error", st
    assert "no space left on device" in st["error"].lower()
    for _ in range(3):  # later readers change nothing
        assert sp("status").returncode == 0
        assert sp("feed", "--job", job_id).returncode == 0
    assert len(final_events(project, job_id)) == 1
    (project / ".specialists" / "jobs" / job_id / "stdout.log").unlink()  # space returns
    again = status(job_id)
    assert again["error"] == st["error"]  # never "supervisor crashed"
    assert len(final_events(project, job_id)) == 1
    # And the store still works once there is room: a small job runs to the end.
    small = sp("run", "small", "--prompt", "go")
    assert small.returncode == 0, small.stderr
    assert small.stdout.strip().endswith("end")


def test_a_flood_in_the_foreground_is_one_error_line_no_traceback(project: Path) -> None:
    out = sp("run", "flood", "--prompt", "go")
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and "no space left on device" in errors[0].lower(), out.stderr
    job_id = errors[0].split()[2]
    assert status(job_id)["status"] == "error"
    assert len(final_events(project, job_id)) == 1


def test_no_room_to_create_a_job_is_one_clear_line(project: Path) -> None:
    (project / ".specialists" / "jobs").mkdir(mode=0o700)
    fill(project / ".specialists")
    out = sp("run", "small", "--background", "--prompt", "go")
    assert out.returncode == 4, out.stderr
    assert out.stderr.startswith("error: could not create the job: No space left on device")
    assert "Traceback" not in out.stderr
    assert [p.name for p in (project / ".specialists" / "jobs").iterdir()] == []
    listed = sp("status")
    assert listed.returncode == 0 and "no jobs" in listed.stdout
