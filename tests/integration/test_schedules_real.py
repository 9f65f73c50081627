"""Schedules with real processes: `schedule run-due` launching a real command-runner job to
done, overlap against a job that is really running, a scheduler killed with SIGKILL in the
middle of a firing (before and after its launch) that never fires that slot again, and two
schedulers on one project that fire each slot once (issue 12 items 2 and 6)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specialists.features.schedules import ops
from specialists.features.schedules.model import SpecialistTarget
from specialists.features.schedules.store import ScheduleStore
from specialists.features.schedules.triggers import EveryTrigger
from tests.integration.test_cli_pi import sp
from tests.support.jobs import echo_project
from tests.support.processes import killed_after, wait_dead
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

HOUR = 3_600_000


def store() -> ScheduleStore:
    return ScheduleStore(Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists")


def due_now(sid: str, prompt: str = "scheduled hello", specialist: str = "echo") -> None:
    """A schedule created an hour and a half minute ago, every hour: one slot due now."""
    created = int(time.time() * 1000) - HOUR - 30_000
    ops.create(
        store(),
        trigger=EveryTrigger("every", HOUR, created, "1h"),
        target=SpecialistTarget("specialist", specialist, prompt),
        now_ms=created,
        schedule_id=sid,
    )


def job_ids() -> list[str]:
    jobs = Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists" / "jobs"
    return sorted(p.name for p in jobs.iterdir() if p.is_dir()) if jobs.is_dir() else []


def job_status(job_id: str) -> str:
    out = sp("status", "--job", job_id, "--json")
    assert out.returncode == 0, out.stderr
    return str(json.loads(out.stdout)["status"])


def test_run_due_launches_a_real_command_job_owned_by_the_schedule():
    root = echo_project()
    due_now("nightly")
    out = sp("schedule", "run-due", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["checked"] == 1
    (firing,) = report["firings"]
    assert firing["outcome"] == "fired"
    job = firing["job_id"]
    wait_until(lambda: job_status(job) == "done", what="the scheduled job to finish")
    assert sp("result", job).stdout.strip() == "scheduled hello"
    record = json.loads((root / ".specialists" / "jobs" / job / "job.json").read_text())
    assert record["owner"] == ["schedule-nightly"]
    again = json.loads(sp("schedule", "run-due", "--json").stdout)
    assert again["firings"] == []  # the slot is handled; the next is an hour away
    history = json.loads(sp("schedule", "history", "nightly", "--json").stdout)["history"]
    assert [(h["outcome"], h.get("job_id")) for h in history] == [("fired", job)]
    receipts = list((store().dir("nightly") / "runs").iterdir())
    assert len(receipts) == 1 and json.loads(receipts[0].read_text())["job_id"] == job


def test_overlap_skip_against_a_job_that_is_really_running():
    root = echo_project()
    gate = root / "gate"
    (root / "specialists" / "waiter.specialist.yaml").write_text(
        "metadata: {name: waiter}\n"
        "execution:\n"
        "  runner: {type: command, command: sh, args: [-c, 'while [ ! -f gate ]; do sleep 0.05;"
        " done; echo through']}\n"
    )
    due_now("slow", specialist="waiter")
    first = json.loads(sp("schedule", "run", "slow", "--json").stdout)
    assert first["outcome"] == "fired"
    wait_until(lambda: job_status(first["job_id"]) == "running", what="the job to run")
    second = json.loads(sp("schedule", "run", "slow", "--json").stdout)
    assert second["outcome"] == "skipped" and first["job_id"] in second["detail"]
    gate.write_text("")
    wait_until(lambda: job_status(first["job_id"]) == "done", what="the job to finish")
    third = json.loads(sp("schedule", "run", "slow", "--json").stdout)
    assert third["outcome"] == "fired"
    assert len(job_ids()) == 2


# A firing that stops dead after taking its lease: before launching, or after the launch
# returned but before its receipt. The process then waits to be killed.
HOLDER = """
import os, sys, time
from pathlib import Path
from specialists.project import Project
from specialists.features.schedules.fire import run_due
from specialists.features.schedules.launch import JobLauncher
from specialists.features.schedules.store import ScheduleStore

marker, phase = Path(sys.argv[1]), sys.argv[2]
project = Project()
launcher = JobLauncher(project.store)

def hold(*_):
    marker.write_text(str(os.getpid()))
    time.sleep(600)

hook = None
if phase == "after-launch":
    real = launcher.launch
    def launch(schedule, slot):
        real(schedule, slot)
        hold()
    launcher.launch = launch
else:
    hook = hold
run_due(ScheduleStore(project.store.root), launcher, int(time.time() * 1000), after_lease=hook)
"""


@pytest.mark.parametrize(("phase", "jobs"), [("before-launch", 0), ("after-launch", 1)])
def test_a_scheduler_killed_mid_firing_never_fires_that_slot_again(tmp_path, phase, jobs):
    echo_project()
    due_now("once")
    marker = tmp_path / "holding"
    with killed_after() as pids:
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(marker), phase],
            cwd=os.environ["SPECIALISTS_PROJECT_ROOT"],
        )
        pids.append(holder.pid)
        wait_until(marker.exists, what="the firing to stop midway")
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        # A real scheduler takes over: it must record the slot as interrupted, not fire it.
        scheduler = subprocess.Popen(
            [sys.executable, "-m", "specialists", "scheduler", "--max-wait", "0.2"],
            cwd=os.environ["SPECIALISTS_PROJECT_ROOT"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        pids.append(scheduler.pid)
        wait_until(
            lambda: [h["outcome"] for h in store().history("once")] == ["interrupted"],
            what="the interrupted slot to be recorded",
        )
        for _ in range(3):  # a few more passes of the scheduler: still nothing fires
            sp("schedule", "run-due")
        scheduler.send_signal(signal.SIGTERM)
        out, err = scheduler.communicate(timeout=30)
        wait_dead(scheduler.pid)
    assert scheduler.returncode == 0, err
    assert "interrupted" in out
    assert len(job_ids()) == jobs
    assert [h["outcome"] for h in store().history("once")] == ["interrupted"]
    assert store().load("once")[1].next_due_ms is not None  # it goes on with the next slot


def test_two_schedulers_on_one_project_fire_each_slot_once():
    echo_project()
    for n in range(4):
        due_now(f"s{n}", prompt=f"hello {n}")
    with killed_after() as pids:
        schedulers = [
            subprocess.Popen(
                [sys.executable, "-m", "specialists", "scheduler", "--max-wait", "0.1"],
                cwd=os.environ["SPECIALISTS_PROJECT_ROOT"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        pids.extend(p.pid for p in schedulers)
        wait_until(
            lambda: all(store().history(f"s{n}") for n in range(4)),
            what="every schedule to fire",
        )
        for p in schedulers:
            p.send_signal(signal.SIGTERM)
        errors = [p.communicate(timeout=30)[1] for p in schedulers]
    assert [p.returncode for p in schedulers] == [0, 0], errors
    for n in range(4):
        assert [h["outcome"] for h in store().history(f"s{n}")] == ["fired"]
    assert len(job_ids()) == 4


def test_the_real_scheduler_killed_again_and_again_fires_no_slot_twice():
    """`specialists scheduler` itself, SIGKILLed as soon as it has claimed a slot, restarted,
    killed again...: every slot ends fired once or interrupted, and the jobs on disk are
    exactly the fired ones (none launched twice, none launched unrecorded but one per
    interrupted slot at most)."""
    echo_project()
    count = 12
    for n in range(count):
        due_now(f"k{n:02d}", prompt=f"hello {n}")

    def claimed() -> int:
        return sum(
            1 for n in range(count) for p in store().dir(f"k{n:02d}").iterdir()
            if p.name.startswith("fire-")
        )  # fmt: skip

    kills = 0
    with killed_after() as pids:
        while claimed() < count and kills < 6:
            before = claimed()
            proc = subprocess.Popen(
                [sys.executable, "-m", "specialists", "scheduler", "--max-wait", "0.1"],
                cwd=os.environ["SPECIALISTS_PROJECT_ROOT"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            pids.append(proc.pid)
            wait_until(lambda b=before: claimed() > b, what="the scheduler to claim a slot")
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            kills += 1
        final = subprocess.run(
            [sys.executable, "-m", "specialists", "schedule", "run-due", "--json"],
            cwd=os.environ["SPECIALISTS_PROJECT_ROOT"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert final.returncode in (0, 1), final.stderr
    outcomes = {
        f"k{n:02d}": [h["outcome"] for h in store().history(f"k{n:02d}")] for n in range(count)
    }
    assert all(o in (["fired"], ["interrupted"]) for o in outcomes.values()), outcomes
    fired = sum(o == ["fired"] for o in outcomes.values())
    interrupted = count - fired
    assert fired <= len(job_ids()) <= fired + interrupted
    assert kills >= 1
