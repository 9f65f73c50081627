"""Workflow orchestration: overhead per child, peak memory, and resume of a big receipt.

1. The runtime's own cost per child (fake children on the event loop: key checks, the input
   hash, two fsynced journal lines, bookkeeping) from 10 to 1,000 children.
2. Real workflow jobs with real command-agent children (`cat`, no model): wall time per
   child through the whole path (planning, job creation, a detached supervisor per child,
   the journal, the wait), at 10, 50 and 200 children, concurrency 8.
3. The engine's peak memory (VmHWM of the engine process) in the 200-children run.
4. Resuming a run of 1,000 finished keys: the journal folded and every key answered from it
   (nothing relaunched), and a keyed resume's read of a 1,000-key receipt.

Run: .venv/bin/python -m benchmarks.bench_workflows [--real 10,50,200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import isolated_project, machine
from specialists.features.workflows.journal import JOURNAL_FILE, Journal, fold, read_entries
from specialists.features.workflows.receipt import RECEIPT_FILE
from specialists.features.workflows.runtime import Runs
from specialists.features.workflows.testing import FakeChildren

ECHO = (
    "metadata: {name: echo, description: b}\n"
    "execution:\n  runner: {type: command, command: cat}\n"
    'prompt: {task_template: "$prompt"}\n'
)
FAN = """
async def main(runs, args):
    items = [{"key": f"k{i}", "agent": "echo", "task": f"t{i}"} for i in range(int(args["n"]))]
    return len(await runs.all(items))
"""


def fake_overhead(n: int) -> float:
    """Microseconds per child of the runtime alone."""
    with tempfile.TemporaryDirectory() as d:
        runs = Runs(FakeChildren(), Journal(Path(d)), concurrency=16)
        items = [{"key": f"k{i}", "agent": "echo", "task": f"t{i}"} for i in range(n)]
        t0 = time.perf_counter()
        asyncio.run(runs.all(items))
        return (time.perf_counter() - t0) / n * 1e6


def resume_1000() -> tuple[float, float]:
    """(ms to fold a 1,000-key journal and answer every key from it, ms to read a receipt
    of 1,000 keys and find one)."""
    with tempfile.TemporaryDirectory() as d:
        first = Path(d) / "first"
        first.mkdir()
        items = [{"key": f"k{i}", "agent": "echo", "task": f"t{i}"} for i in range(1000)]
        asyncio.run(Runs(FakeChildren(), Journal(first), concurrency=16).all(items))
        second = Path(d) / "second"
        second.mkdir()
        t0 = time.perf_counter()
        prior = fold(read_entries(first / JOURNAL_FILE))
        children = FakeChildren()
        results = asyncio.run(Runs(children, Journal(second), prior=prior).all(items))
        resumed = time.perf_counter() - t0
        assert children.launches == [] and all(r.cached for r in results)
        receipt = {
            "version": 1,
            "workflow": "00000000",
            "status": "done",
            "children": {f"k{i}": {"latest_job": f"{i:08x}", "lineage": []} for i in range(1000)},
        }
        (first / RECEIPT_FILE).write_text(json.dumps(receipt, indent=1))
        t0 = time.perf_counter()
        data = json.loads((first / RECEIPT_FILE).read_text())
        assert data["children"]["k999"]["latest_job"]
        read = time.perf_counter() - t0
        return resumed * 1000, read * 1000


def real_run(env: dict[str, str], project: Path, n: int) -> tuple[float, float, float]:
    """(seconds per child, whole wall seconds, the engine's peak RSS in MB)."""
    sp = [sys.executable, "-m", "specialists"]
    out = subprocess.run(
        [*sp, "workflow", "run", "fan", "--arg", f"n={n}", "--concurrency", "8", "--detach"],
        env=env, cwd=project, capture_output=True, text=True, check=True,
    )  # fmt: skip
    job = out.stdout.strip()
    status_path = project / ".specialists" / "jobs" / job / "status.json"
    t0 = time.perf_counter()
    peak_kb = 0
    while True:
        status = json.loads(status_path.read_text())
        pid = status.get("pid")
        if pid:
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peak_kb = max(peak_kb, int(line.split()[1]))
            except OSError:
                pass  # the engine just exited: its last reading stands
        if status["status"] in ("done", "error", "cancelled"):
            break
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    assert status["status"] == "done", status.get("error")
    return wall / n, wall, peak_kb / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--real", default="10,50,200", help="real children counts")
    args = parser.parse_args()
    print(f"machine: {machine()}; load {os.getloadavg()[0]:.1f}")
    print("runtime alone (fake children), per child:")
    for n in (10, 100, 1000):
        print(f"  {n:>5} children: {fake_overhead(n):8.0f} us")
    resumed, read = resume_1000()
    print(f"resume of 1,000 finished keys (fold + answer all, none relaunched): {resumed:.0f} ms")
    print(f"keyed resume's read of a 1,000-key receipt: {read:.1f} ms")
    layout = isolated_project()
    project = layout.project
    (project / "specialists").mkdir(exist_ok=True)
    (project / "specialists" / "echo.specialist.yaml").write_text(ECHO)
    (project / ".specialists" / "workflows").mkdir(parents=True, exist_ok=True)
    (project / ".specialists" / "workflows" / "fan.py").write_text(FAN)
    print("real workflow jobs, command-agent children, concurrency 8:")
    for n in (int(x) for x in args.real.split(",") if x):
        per, wall, rss = real_run(layout.env, project, n)
        print(f"  {n:>5} children: {per * 1000:7.0f} ms per child, {wall:6.1f} s in all, "
              f"engine peak RSS {rss:.0f} MB")  # fmt: skip


if __name__ == "__main__":
    main()
