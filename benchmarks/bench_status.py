"""`specialists status` over 10 / 100 / 1,000 jobs: wall time (median) and peak RSS.

Targets: <= 50 ms at 1,000 jobs on 2 cores, CPU <= 3x a bare interpreter's (issue 20, each
status run taken in turn with a bare one, so a changing load weighs on both alike), peak
RSS <= 25 MB. Measured as `python -m specialists status`, and at 1,000 jobs also as the
installed command starts it (its console script imports no `runpy`), with the other read
verbs a person waits on: `result` of a done job and `feed --job` of it.
"""

from __future__ import annotations

import json
import os
import sys
import time

from benchmarks.common import (
    cpu_s,
    entry_argv,
    isolated_project,
    machine,
    median_ms,
    peak_rss_of,
    sp_argv,
    timed,
)
from specialists.store.records import JobStatus

RUNS = 25
PROGRESS = {
    "total": 8,
    "done": 3,
    "failed": 0,
    "running": 4,
    "queued": 1,
    "phase": "review",
    "concurrency": 8,
    "children": {
        "tokens": {"input": 9000, "output": 700, "cache_read": 0, "cache_write": 0},
        "cost_usd": 0.05,
        "jobs": 7,
    },
}


def fill(jobs_dir: str, count: int, active: int = 5) -> None:
    now = int(time.time() * 1000)
    for i in range(count):
        job_id = f"{i:08x}"
        os.makedirs(os.path.join(jobs_dir, job_id), exist_ok=True)
        st = JobStatus(
            id=job_id,
            specialist="reviewer",
            status="running" if i < active else "done",
            started_at_ms=now - i * 1000,
            elapsed_s=12.5,
            model="anthropic/claude-sonnet",
            runner="pi",
            supervisor_pid=os.getpid(),
            current_event="tool_execution",
            current_tool="bash(grep -r pattern src/)",
            # What the views show (issue 22): an older `status` ignores these fields.
            title=f"Review the change to module {i}",
            workflow_key=f"review-{i}" if 0 < i < active else None,
            parent_id=f"{0:08x}" if 0 < i < active else None,
            last_text="I'll read the diff first, then the tests.",
            progress=PROGRESS if i == 0 else {},
        )
        with open(os.path.join(jobs_dir, job_id, "status.json"), "w") as f:
            json.dump(st.to_dict(), f)


def main() -> None:
    print(f"# specialists status — {machine()}")
    base = isolated_project()
    bare = [sys.executable, "-c", "pass"]
    py = [timed(bare, env=base.env, cwd=base.project)[0] for _ in range(RUNS)]
    floors: list[float] = []
    for count in (10, 100, 1000):
        layout = isolated_project()
        fill(str(layout.project / ".specialists" / "jobs"), count)
        argv = sp_argv("status")
        timed(argv, env=layout.env, cwd=layout.project)  # warm the index and caches
        walls = [timed(argv, env=layout.env, cwd=layout.project)[0] for _ in range(RUNS)]
        # CPU of status and of a bare interpreter taken in turns: a load that changes while
        # the benchmark runs weighs on both sides of the ratio alike.
        cpu, floor = [], []
        for _ in range(RUNS):
            cpu.append(cpu_s(argv, env=layout.env, cwd=layout.project))
            floor.append(cpu_s(bare, env=base.env, cwd=base.project))
        floors += floor
        py_cpu = median_ms(floor)
        rss = peak_rss_of(argv, env=layout.env, cwd=layout.project)
        index = layout.project / ".specialists" / "jobs" / ".finished.json"
        cold = []
        for _ in range(5):  # without the finished-jobs index: every status.json is read
            index.unlink()
            cold.append(timed(argv, env=layout.env, cwd=layout.project)[0])
        print(
            f"status, {count:>5} jobs: median {median_ms(walls):6.1f} ms (CPU "
            f"{median_ms(cpu):5.1f} ms, {median_ms(cpu) / py_cpu:.2f}x a bare interpreter's),"
            f" peak RSS {rss:5.1f} MB"
            f" (first run after the index is lost: {median_ms(cold):6.1f} ms)"
        )
    # The same 1,000 jobs, started as the installed command starts it (no runpy).
    done = layout.project / ".specialists" / "jobs" / f"{count - 1:08x}"
    (done / "result.txt").write_text("the answer\n")
    for args in (["status"], ["result", done.name], ["feed", "--job", done.name]):
        label, command, cpu, floor = " ".join(args), entry_argv(*args), [], []
        for _ in range(RUNS):
            cpu.append(cpu_s(command, env=layout.env, cwd=layout.project))
            floor.append(cpu_s(bare, env=base.env, cwd=base.project))
        print(
            f"{label}, 1000 jobs, as the installed `specialists` command: CPU "
            f"{median_ms(cpu):5.1f} ms, {median_ms(cpu) / median_ms(floor):.2f}x a bare "
            "interpreter's"
        )
    print(
        f"python -c pass (interpreter floor): median {median_ms(py):6.1f} ms, "
        f"CPU {median_ms(floors):5.1f} ms"
    )


if __name__ == "__main__":
    main()
