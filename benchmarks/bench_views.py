"""`top` and `web` over 1,000 jobs: refresh cost (median ms), peak RSS, fleet endpoint latency.

Each part runs in a fresh interpreter so its RSS is its own. 1,000 jobs, 5 of them active;
a "busy" refresh follows a rewrite of those 5 status files (what a live fleet does).
    .venv/bin/python -m benchmarks.bench_views
"""

from __future__ import annotations

import asyncio
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from benchmarks.common import isolated_project, machine
from specialists.events import notices
from specialists.store.jobs import JobStore
from tests.support.fleet import fill_fleet, write_status

JOBS = 1000
ACTIVE = 5
RUNS = 60
STARTED_MS = int(time.time() * 1000)


def _store(root: Path) -> tuple[JobStore, list[str]]:
    store = JobStore(root / ".specialists", news=notices)
    ids = fill_fleet(store.jobs_dir, JOBS, active=ACTIVE, now_ms=STARTED_MS)
    for job_id in ids[-ACTIVE:]:  # no parent links among the active: their place stays put
        write_status(
            store.jobs_dir,
            job_id,
            status="running",
            specialist="executor",
            current_tool="bash(step 0)",
            started_at_ms=STARTED_MS,
        )
    return store, ids[-ACTIVE:]


def _touch(store: JobStore, active: list[str], n: int) -> None:
    """What a live job does: a new current tool, same start, same place in the tree."""
    for job_id in active:
        write_status(
            store.jobs_dir,
            job_id,
            status="running",
            specialist="executor",
            current_tool=f"bash(step {n})",
            started_at_ms=STARTED_MS,
        )


def _ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def part_fleet() -> dict[str, float]:
    from specialists.fronts.fleet.model import job_fleet
    from specialists.fronts.web.payload import FleetDiff

    store, active = _store(Path(tempfile.mkdtemp()))
    fleet = job_fleet(store)
    t0 = time.perf_counter()
    fleet.refresh()
    fleet.tree()
    first = time.perf_counter() - t0
    idle, busy, diff_cost = [], [], []
    diff = FleetDiff()
    diff.next(fleet, 0)
    for n in range(RUNS):
        t0 = time.perf_counter()
        fleet.refresh()
        idle.append(time.perf_counter() - t0)
        _touch(store, active, n)
        t0 = time.perf_counter()
        fleet.refresh()
        fleet.tree()
        busy.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        diff.next(fleet, 0)
        diff_cost.append(time.perf_counter() - t0)
    return {
        "first": first * 1000,
        "idle": _ms(idle),
        "busy": _ms(busy),
        "diff": _ms(diff_cost),
        "rss": _rss_mb(),
    }


def part_top() -> dict[str, float]:
    from specialists.fronts.fleet.model import job_fleet
    from specialists.fronts.tui.app import TopApp

    store, active = _store(Path(tempfile.mkdtemp()))
    out: dict[str, float] = {}

    async def scenario() -> None:
        t0 = time.perf_counter()
        app = TopApp(store, job_fleet(store), root_label="bench", refresh_s=3600, feed_s=3600)
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause()
            out["first"] = (time.perf_counter() - t0) * 1000
            idle, busy = [], []
            for n in range(RUNS):
                t0 = time.perf_counter()
                app.tick()
                idle.append(time.perf_counter() - t0)
                _touch(store, active, n)
                t0 = time.perf_counter()
                app.tick()
                busy.append(time.perf_counter() - t0)
                await pilot.pause()
            out["idle"], out["busy"] = _ms(idle), _ms(busy)
            rebuild = []
            for n in range(10):
                write_status(store.jobs_dir, f"f{n:07x}", status="starting")
                t0 = time.perf_counter()
                app.tick()
                rebuild.append(time.perf_counter() - t0)
                await pilot.pause()
            out["rebuild"] = _ms(rebuild)

    asyncio.run(scenario())
    out["rss"] = _rss_mb()
    return out


def part_web() -> dict[str, float]:
    layout = isolated_project()
    store, active = _store(layout.project)
    proc = subprocess.Popen(
        [sys.executable, "-m", "specialists", "web", "--port", "0"],
        cwd=layout.project,
        env=layout.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split(": ", 1)[1].strip()
        base, token = url.split("/?token=")
        api = f"{base}/api/fleet?token={token}"

        def get() -> float:
            t0 = time.perf_counter()
            with urllib.request.urlopen(api, timeout=30) as res:
                body = res.read()
            assert json.loads(body)["totals"]["active"] == ACTIVE
            return time.perf_counter() - t0

        first = get()
        cached = [get() for _ in range(RUNS)]
        fresh = []
        for n in range(RUNS // 3):
            _touch(store, active, n)
            time.sleep(0.55)  # past the server's refresh period: the next GET re-reads
            fresh.append(get())
        size = len(urllib.request.urlopen(api, timeout=30).read())
        with open(f"/proc/{proc.pid}/status") as f:
            hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    return {
        "first": first * 1000,
        "cached": _ms(cached),
        "fresh": _ms(fresh),
        "bytes": size,
        "rss": hwm / 1024,
    }


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--part":
        print(json.dumps({"fleet": part_fleet, "top": part_top, "web": part_web}[sys.argv[2]]()))
        return
    print(f"# views over {JOBS} jobs ({ACTIVE} active) — {machine()}")
    for part in ("fleet", "top", "web"):
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_views", "--part", part],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout)
        if part == "fleet":
            print(
                f"fleet core: first read {r['first']:.1f} ms; refresh, nothing changed "
                f"{r['idle']:.2f} ms; with {ACTIVE} jobs changed {r['busy']:.2f} ms; "
                f"web diff of that change {r['diff']:.2f} ms; peak RSS {r['rss']:.1f} MB"
            )
        elif part == "top":
            print(
                f"top: start to first screen {r['first']:.0f} ms; tick, nothing changed "
                f"{r['idle']:.2f} ms; with {ACTIVE} jobs changed {r['busy']:.2f} ms; "
                f"a new job (table rebuilt) {r['rebuild']:.1f} ms; peak RSS {r['rss']:.1f} MB"
            )
        else:
            print(
                f"web GET /api/fleet: first {r['first']:.1f} ms; cached {r['cached']:.2f} ms; "
                f"after {ACTIVE} changes {r['fresh']:.2f} ms; {r['bytes'] / 1024:.0f} KiB; "
                f"server peak RSS {r['rss']:.1f} MB"
            )


if __name__ == "__main__":
    main()
