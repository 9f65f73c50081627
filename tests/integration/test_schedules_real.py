"""Schedules with real processes: `schedule run-due` launching a real command-runner job to
done, overlap against a job that is really running, a scheduler killed with SIGKILL at each
step of a firing's start whose slot still runs once, and two schedulers on one project that
fire each slot once (issue 12 items 2 and 6; issue 20 item 2)."""

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


# A firing that stops dead at one step of the one start (supervise/start.py): before the job
# is created, after it is created (unclaimed), after its key is claimed (no supervisor yet),
# or after its supervisor started (no receipt yet). The process then waits to be killed.
HOLDER = """
import os, sys, time
from pathlib import Path
from specialists.project import Project
from specialists.features.schedules.fire import run_due
from specialists.features.schedules.store import ScheduleStore
from specialists.store import keys
from specialists.supervise import start

marker, phase = Path(sys.argv[1]), sys.argv[2]
project = Project()

def hold():
    marker.write_text(str(os.getpid()))
    time.sleep(600)

def before(real):
    return lambda *a, **k: (hold(), real(*a, **k))[1]

def after(real):
    return lambda *a, **k: (real(*a, **k), hold())[0]

if phase == "planned":
    start.create_job = before(start.create_job)
elif phase == "created":
    keys.claim = before(keys.claim)
elif phase == "claimed":
    start.spawn_supervisor = before(start.spawn_supervisor)
else:
    start.spawn_supervisor = after(start.spawn_supervisor)
run_due(ScheduleStore(project.store.root), project.store, int(time.time() * 1000))
"""


@pytest.mark.parametrize(
    ("phase", "orphans"), [("planned", 0), ("created", 1), ("claimed", 0), ("spawned", 0)]
)
def test_a_scheduler_killed_at_each_step_of_a_firing_runs_that_slot_once(tmp_path, phase, orphans):
    """kill -9 at each step of the keyed start; a real scheduler takes over: the slot is
    fired once, by one job that runs to its end (a claimed job that never got its
    supervisor is given one). A job created but not yet claimed is an orphan recovery
    ends; it never runs."""
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
        scheduler = subprocess.Popen(
            [sys.executable, "-m", "specialists", "scheduler", "--max-wait", "0.2"],
            cwd=os.environ["SPECIALISTS_PROJECT_ROOT"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        pids.append(scheduler.pid)
        wait_until(lambda: store().history("once"), what="the slot to be recorded")
        for _ in range(3):  # a few more passes of the scheduler: nothing fires again
            sp("schedule", "run-due")
        scheduler.send_signal(signal.SIGTERM)
        out, err = scheduler.communicate(timeout=30)
        wait_dead(scheduler.pid)
    assert scheduler.returncode == 0, err
    assert "fired" in out
    ((outcome, job),) = [(h["outcome"], h.get("job_id")) for h in store().history("once")]
    assert outcome == "fired"
    wait_until(lambda: job_status(job) == "done", what="the slot's job to finish")
    assert sp("result", job).stdout.strip() == "scheduled hello"
    others = [j for j in job_ids() if j != job]
    assert len(others) == orphans
    assert all(job_status(j) == "error" for j in others)  # ended by recovery, never run
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
    """`specialists scheduler` itself, SIGKILLed as soon as it has claimed a slot's key,
    restarted, killed again...: every slot ends fired once, by a job of its own, and the
    only other jobs on disk are ones a kill left unclaimed (one per kill at most)."""
    echo_project()
    count = 12
    for n in range(count):
        due_now(f"k{n:02d}", prompt=f"hello {n}")
    claims = Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists" / "keys"

    def claimed() -> int:
        return len(list(claims.glob("[0-9a-f]*.json"))) if claims.is_dir() else 0

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
    history = {f"k{n:02d}": store().history(f"k{n:02d}") for n in range(count)}
    outcomes = {sid: [h["outcome"] for h in lines] for sid, lines in history.items()}
    assert all(o == ["fired"] for o in outcomes.values()), outcomes
    fired = {lines[0]["job_id"] for lines in history.values()}
    assert len(fired) == count  # a job of its own each: none fired twice
    assert fired <= set(job_ids()) and len(job_ids()) <= count + kills
    assert kills >= 1
