"""A proc job under load: a producer writing 10,000 lines/s for 30 s, 1% of them matching a
watch pattern (issue 9 item 7). Targets: supervisor CPU under 10% of one core, RSS under
30 MB, match events within the rate limit, no line missing from the log.

    .venv/bin/python -m benchmarks.bench_procs [--seconds 30] [--rate 10000]

Three runs of the same producer, one after the other: `specialists bg run --watch` (the
default, rate limited), the same with `--associative` (every batch delivered), and the floor:
the producer redirected to a file by a plain `sh -c`, which is all an exit-only background
shell (Claude Code's `Bash run_in_background`) has to do to keep the output. The supervisor
is sampled from /proc (utime+stime, VmHWM) while it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import isolated_project, machine
from specialists.events.inbox import Inbox

OWNER = "cli-bench"
TICK_S = 0.01
PRODUCER_TEMPLATE = """
import sys, time
rate, seconds = int(sys.argv[1]), float(sys.argv[2])
per_tick, n, total = max(1, int(rate * {tick})), 0, int(rate * seconds)
start = time.monotonic()
out = sys.stdout
while n < total:
    chunk = []
    for _ in range(min(per_tick, total - n)):
        kind = "ERROR disk quota exceeded" if n % 100 == 0 else "info all is well"
        chunk.append(f"{n:08d} {kind} {'.' * 40}\\n")
        n += 1
    out.write("".join(chunk))
    out.flush()
    delay = start + n / rate - time.monotonic()
    if delay > 0:
        time.sleep(delay)
"""
PRODUCER = PRODUCER_TEMPLATE.replace("{tick}", str(TICK_S))
HZ = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / HZ  # utime, stime


def hwm_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def check_log(path: Path, total: int) -> int:
    """How many of the `total` numbered lines are missing or out of place in the log."""
    bad = seen = 0
    with open(path, "rb") as f:
        for n, line in enumerate(f):
            seen += 1
            if not line.startswith(b"%08d " % n):
                bad += 1
    return bad + max(0, total - seen)


def sp(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specialists", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )


def bg_run(seconds: float, rate: int, *, associative: bool) -> dict[str, float]:
    layout = isolated_project()
    env, project = layout.env, layout.project
    script = project / "producer.py"
    script.write_text(PRODUCER)
    extra = ["--associative"] if associative else []
    t0 = time.perf_counter()
    out = sp(env, project, "bg", "run", "--owner", OWNER, "--json", "--watch", r"^\d+ ERROR",
             *extra, f"{sys.executable} {script} {rate} {seconds}")  # fmt: skip
    started_s = time.perf_counter() - t0
    job_id = json.loads(out.stdout)["job_id"]
    state = project / ".specialists"
    status_path = state / "jobs" / job_id / "status.json"
    supervisor = 0
    while not supervisor:  # the launcher's pid is there until the supervisor runs the job
        try:
            st = json.loads(status_path.read_text())
        except (OSError, ValueError):
            st = {}
        if st.get("status") == "running" and st.get("pid"):
            supervisor = st["supervisor_pid"]
        else:
            time.sleep(0.02)
    first: tuple[float, float] | None = None
    last: tuple[float, float] | None = None
    peak = 0.0
    inbox = Inbox(state, OWNER)
    while True:
        cpu, hwm = cpu_s(supervisor), hwm_mb(supervisor)
        if cpu is None:
            break
        sample = (time.perf_counter(), cpu)
        first = first or sample
        last = sample
        peak = max(peak, hwm or 0.0)
        time.sleep(0.25)
    assert first is not None and last is not None
    events = inbox.pending(max_events=100_000).events
    matches = [e for e in events if e.kind == "job_match"]
    (exit_event,) = [e for e in events if e.kind == "job_exit"]
    d = exit_event.details
    total = int(rate * seconds)
    log = state / "jobs" / job_id / "output.log"
    delivered_lines = sum(int(e.details["lines"]) for e in matches)
    return {
        "bg run returned (ms)": started_s * 1000,
        "supervisor CPU (% of one core)": 100 * (last[1] - first[1]) / (last[0] - first[0]),
        "supervisor peak RSS (MB)": peak,
        "lines logged": float(d["lines"]),
        "lines missing or misplaced": float(check_log(log, total)),
        "matching lines": float(d["matched"]),
        "job_match events": float(len(matches)),
        "matched lines delivered": float(delivered_lines),
        "suppressed (job_exit)": float(d["suppressed"]),
        "job_exit events": 1.0,
    }


def redirected(seconds: float, rate: int) -> dict[str, float]:
    """The floor: the producer's output to a file, by a shell that only waits for its exit."""
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-procs-{os.getpid()}"
    tmp.mkdir(exist_ok=True)
    script = tmp / "producer.py"
    script.write_text(PRODUCER)
    shell = subprocess.Popen(
        ["/bin/sh", "-c", f"{sys.executable} {script} {rate} {seconds} > {tmp / 'out.log'}"]
    )
    shell.wait()
    with open(tmp / "out.log", "rb") as f:
        lines = sum(1 for _ in f)
    return {"lines logged": float(lines), "job_match events": 0.0, "job_exit events": 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rate", type=int, default=10_000, help="lines per second")
    args = parser.parse_args()
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f}")
    print(f"producer: {args.rate:,} lines/s for {args.seconds:g} s, 1% matching, 58 bytes a line")
    runs = {
        "bg run --watch (rate limited)": bg_run(args.seconds, args.rate, associative=False),
        "bg run --watch --associative": bg_run(args.seconds, args.rate, associative=True),
        "sh -c producer > file (floor)": redirected(args.seconds, args.rate),
    }
    for name, figures in runs.items():
        print(f"\n{name}")
        for key, value in figures.items():
            print(f"  {key:<32} {value:>12,.1f}")


if __name__ == "__main__":
    main()
