"""What a lone `specialists run --background` leaves running besides its job: a shared fork
server (supervise/shared_forks.py) costs an interpreter's imports and its memory until it
idles out (30 s), and serves a lone launch nothing. A person's one job and an orchestrator's
dispatch every few minutes are lone launches.

Each round is a new project, one echo job launched in the background, then, a few seconds
later (the server's imports done), the CPU and RSS of any shared server of that project,
which is then killed. Run it on both sides of a change:

    .venv/bin/python -m benchmarks.bench_lone_launch
    SPECIALISTS_BENCH_SRC=/other/checkout/src .venv/bin/python -m benchmarks.bench_lone_launch
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import isolated_project, machine, sp_argv
from tests.support.jobs import echo_project

ROUNDS = 5
SETTLE_S = 6.0  # long enough for a server's imports


def servers_of(project: Path) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue  # ended meanwhile
        if b"_forks" in cmdline and str(project).encode() in cmdline:
            found.append(int(name))
    return found


def cost_of(pid: int) -> tuple[float, float]:
    """(CPU ms, RSS MB) of `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu_ms = (int(fields[11]) + int(fields[12])) * 1000 / ticks
    rss_kb = next(
        int(line.split()[1])
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("VmRSS:")
    )
    return cpu_ms, rss_kb / 1024


def main() -> None:
    side = os.environ.get("SPECIALISTS_BENCH_SRC") or "this checkout"
    print(f"# a lone run --background ({side}) — {machine()}")
    counts, cpus, rsss = [], [], []
    for _ in range(ROUNDS):
        layout = isolated_project()
        os.environ["SPECIALISTS_PROJECT_ROOT"] = str(layout.project)
        echo_project()
        argv = [*sp_argv("run", "echo", "--prompt", "hi", "--background")]
        out = subprocess.run(argv, env=layout.env, cwd=layout.project, capture_output=True)
        assert out.returncode == 0, out.stderr
        time.sleep(SETTLE_S)
        found = servers_of(layout.project)
        costs = [cost_of(pid) for pid in found]
        for pid in found:
            os.kill(pid, signal.SIGKILL)
        counts.append(len(found))
        cpus.append(sum(c for c, _ in costs))
        rsss.append(sum(r for _, r in costs))
    print(
        f"shared servers left by a lone launch: {counts}; their CPU median "
        f"{statistics.median(cpus):.0f} ms, RSS median {statistics.median(rsss):.1f} MB "
        f"(each until it idles out, 30 s)"
    )


if __name__ == "__main__":
    sys.exit(main())
