"""Schedules: `specialists schedule run-due` over 1,000 schedules (none due, and 10 due that
launch real command-runner jobs), the firing core alone, and an idle `specialists scheduler`
(CPU and memory over a stretch with nothing due). Target: run-due well under a second."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import time
from pathlib import Path

from benchmarks.common import isolated_project, machine, peak_rss_of, sp_argv, timed
from specialists.features.schedules import ops
from specialists.features.schedules.fire import run_due
from specialists.features.schedules.model import SpecialistTarget
from specialists.features.schedules.store import ScheduleStore
from specialists.features.schedules.testing import RecordingLauncher
from specialists.features.schedules.triggers import CronTrigger, EveryTrigger

HOUR = 3_600_000
ECHO = """\
metadata: {name: echo}
execution:
  runner: {type: command, command: cat}
prompt: {task_template: "$prompt"}
"""


def build(project: Path, n: int = 1000) -> ScheduleStore:
    (project / "specialists").mkdir(exist_ok=True)
    (project / "specialists" / "echo.specialist.yaml").write_text(ECHO)
    store = ScheduleStore(project / ".specialists")
    now = int(time.time() * 1000)
    for i in range(n):
        trigger = (
            CronTrigger("cron", f"{i % 60} 3 * * *", "Europe/Berlin")
            if i % 2
            else EveryTrigger("every", 6 * HOUR, now, "6h")
        )
        ops.create(
            store,
            trigger=trigger,
            target=SpecialistTarget("specialist", "echo", f"run {i}"),
            now_ms=now,
            schedule_id=f"s{i:04d}",
        )
    return store


def make_due(store: ScheduleStore, ids: list[str]) -> None:
    """As if time had passed for these: their next slot is a second ago."""
    now = int(time.time() * 1000)
    for sid in ids:
        state = store.load_state(sid)
        store.save_state(sid, state.__class__(now - 2000, now - 1000, None, *_counts(state)))


def _counts(state) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
    return state.fired, state.skipped, state.missed


def run_due_cli(rounds: int = 7) -> None:
    layout = isolated_project()
    store = build(layout.project)
    env = layout.env
    walls, fired = [], []
    for _ in range(rounds):
        wall, _, out = timed(sp_argv("schedule", "run-due"), env=env, cwd=layout.project)
        assert out.returncode == 0, out.stderr
        walls.append(wall)
    rss = peak_rss_of(sp_argv("schedule", "run-due"), env=env, cwd=layout.project)
    print(
        f"run-due, 1,000 schedules, none due: median {statistics.median(walls) * 1000:.0f} ms"
        f" (min {min(walls) * 1000:.0f}), peak RSS {rss:.1f} MB"
    )
    walls = []
    for r in range(rounds):
        ids = [f"s{(r * 10 + k) * 7 % 1000:04d}" for k in range(10)]
        make_due(store, ids)
        wall, _, out = timed(sp_argv("schedule", "run-due"), env=env, cwd=layout.project)
        assert out.returncode == 0, out.stderr
        walls.append(wall)
        fired.append(out.stdout.count(" fired "))
    print(
        f"run-due, 1,000 schedules, 10 due (10 real background jobs launched):"
        f" median {statistics.median(walls) * 1000:.0f} ms (min {min(walls) * 1000:.0f});"
        f" fired per pass {sorted(set(fired))}"
    )


def core(rounds: int = 15) -> None:
    import tempfile

    store = build(Path(tempfile.mkdtemp(prefix="sp-bench-sched-")))
    launcher = RecordingLauncher()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        report = run_due(store, launcher, int(time.time() * 1000))
        times.append((time.perf_counter() - t0) * 1000)
        assert report.checked == 1000 and not report.firings
    print(f"firing core alone, 1,000 schedules, none due: median {statistics.median(times):.1f} ms")
    times = []
    for r in range(rounds):
        make_due(store, [f"s{(r * 10 + k) * 3 % 1000:04d}" for k in range(10)])
        launcher.finish_all()
        t0 = time.perf_counter()
        report = run_due(store, launcher, int(time.time() * 1000))
        times.append((time.perf_counter() - t0) * 1000)
        assert sum(f.outcome == "fired" for f in report.firings) == 10
    print(
        f"firing core alone, 1,000 schedules, 10 due (recording launcher):"
        f" median {statistics.median(times):.1f} ms"
    )


def idle_scheduler(seconds: float = 20.0) -> None:
    layout = isolated_project()
    build(layout.project)
    proc = subprocess.Popen(
        sp_argv("scheduler", "--max-wait", "5"),
        env=layout.env,
        cwd=layout.project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(3)  # start-up and the first pass are not idle time
        cpu0 = _cpu_s(proc.pid)
        time.sleep(seconds)
        cpu = _cpu_s(proc.pid) - cpu0
        rss = _rss_mb(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    print(
        f"idle scheduler, 1,000 schedules, nothing due: {cpu / seconds * 100:.2f}% of a core"
        f" ({cpu * 1000:.0f} ms CPU in {seconds:.0f} s, a pass every 5 s), RSS {rss:.1f} MB"
    )


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    print(f"# schedules — {machine()}")
    core()
    run_due_cli()
    idle_scheduler()


if __name__ == "__main__":
    main()
