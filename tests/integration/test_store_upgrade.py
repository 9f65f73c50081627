"""A `.specialists/` written by release 0.1.0 keeps working (issue "One core": nothing a user
has is lost).

tests/fixtures/store-0.1.0.tar.gz was made by tests/fixtures/make_store.sh with that release:
finished, failed and crashed jobs with owners, a background command, a thread in a sandbox,
timers, a schedule, missions, a declarative workflow run, a gated run, and the inboxes they
filled. It unpacks at the fixed path it was made at (git worktrees record absolute paths), so
these tests take a lock and run in one xdist group.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("store-fixture")]

FIXTURE = Path(__file__).parents[1] / "fixtures" / "store-0.1.0.tar.gz"
ROOT = Path("/tmp/specialists-store-fixture")
SESSION = "fixture-session"


def _manifest(root: Path) -> dict[str, str]:
    lines = (root / "MANIFEST").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


@pytest.fixture
def old_store(isolated_env: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The 0.1.0 project unpacked afresh at ROOT; os.environ points at its HOME and root."""
    with open("/tmp/specialists-store-fixture.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(ROOT, ignore_errors=True)
        ROOT.mkdir(parents=True)
        with tarfile.open(FIXTURE) as tar:
            tar.extractall(ROOT, filter="tar")
        home = ROOT / "home"
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("XDG_STATE_HOME", str(home / ".state"))
        monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        monkeypatch.setenv("XDG_DATA_HOME", str(home / ".data"))
        monkeypatch.setenv("LOGNAME", "fixture")
        monkeypatch.setenv("USER", "fixture")
        monkeypatch.setenv("SPECIALISTS_PROJECT_ROOT", str(ROOT / "project"))
        monkeypatch.delenv("CLAUDE_CODE_SESSION_ID", raising=False)
        monkeypatch.delenv("SPECIALISTS_OWNER", raising=False)
        monkeypatch.chdir(ROOT / "project")
        try:
            yield _manifest(ROOT)
        finally:
            shutil.rmtree(ROOT, ignore_errors=True)


def sp(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specialists", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def ok(*args: str, env: dict[str, str] | None = None) -> str:
    done = sp(*args, env=env)
    assert done.returncode == 0, (args, done.returncode, done.stdout, done.stderr)
    return done.stdout


def test_jobs_results_and_the_crashed_job(old_store: dict[str, str]) -> None:
    rows = json.loads(ok("status", "--all", "--json"))
    jobs = [j for key in ("jobs", "active", "finished") for j in rows.get(key) or []]
    by_id = {j["id"]: j for j in jobs}
    assert len(by_id) == 11, sorted(by_id)
    assert by_id[old_store["done_job"]]["status"] == "done"
    assert by_id[old_store["failed_job"]]["status"] == "error"
    assert by_id[old_store["workflow_job"]]["status"] == "done"
    # The job whose supervisor was killed is recovered on first touch, not left running.
    crashed = json.loads(ok("status", old_store["crashed_job"], "--json"))
    assert crashed["status"] == "error" and "supervisor" in (crashed["error"] or "")
    assert "calc.py" in ok("result", old_store["done_job"])
    failed = sp("result", old_store["failed_job"])
    assert failed.returncode == 1 and "refused the key" in failed.stderr + failed.stdout
    feed = ok("feed", old_store["done_job"])
    assert "done" in feed


def test_a_control_request_0_1_0_left_is_still_read(old_store: dict[str, str]) -> None:
    """Release 0.1.0 wrote each request as a file in <job>/control/ (store/control.py reads
    them until none is left): a stop the crashed job's supervisor never took makes its end
    `cancelled`, as asked, not a crash; no new code writes there."""
    job = old_store["crashed_job"]
    control = ROOT / "project" / ".specialists" / "jobs" / job / "control"
    request = {"id": "0a1b2c3d", "kind": "stop", "message": "", "sent_at_ms": 1}
    (control / "00000000000000000001-0a1b2c3d.json").write_text(json.dumps(request))
    crashed = json.loads(ok("status", job, "--json"))
    assert crashed["status"] == "cancelled", crashed
    assert [p.name for p in control.iterdir()] == ["00000000000000000001-0a1b2c3d.json"]


def test_inboxes_deliver_what_0_1_0_left(old_store: dict[str, str]) -> None:
    session = {"CLAUDE_CODE_SESSION_ID": SESSION}
    events = [json.loads(line) for line in ok("events", "--json", env=session).splitlines()]
    ids = {e["id"] for e in events}
    for job in ("done_job", "failed_job", "parent_job"):
        assert f"job-{old_store[job]}:notice:1" in ids, ids
    person = [json.loads(line) for line in ok("events", "--json").splitlines()]
    assert any(e["kind"] == "job_exit" and "fixture-out" in e["body"] for e in person), person
    # Taken once, then gone.
    ok("events", "--ack", env=session)
    assert ok("events", "--json", env=session).strip() == ""


def test_timers_schedules_missions_workflows_threads_sandboxes(old_store: dict[str, str]) -> None:
    # The fixture's one-day timer fell due on 2026-12-02: the first look fires it late, into
    # the person's inbox, and it is no longer pending (a date-free check: due_ms is fixed).
    due = json.loads(ok("timer", "list", "--all", "--json"))["timers"]
    assert [(t["note"], t["state"]) for t in due] == [("fixture: tomorrow", "fired")], due
    assert json.loads(ok("timer", "list", "--json"))["timers"] == []
    person = [json.loads(line) for line in ok("events", "--json").splitlines()]
    assert any("fixture: tomorrow" in json.dumps(e) for e in person), person
    assert "fx-nightly" in ok("schedule", "list")
    assert "Fixture mission" in ok("mission", "show", old_store["mission"])
    shown = ok("workflow", "show", old_store["workflow_job"])
    for key in ("look-a", "look-b", "sum"):
        assert key in shown
    tree = ok("threads", "--tree")
    assert "Write notes.txt" in tree and "closed" in tree
    boxes = ok("sandboxes")
    assert "unmerged" in boxes and "sandbox-t-" in boxes
