"""`specialists run --background` until the job id is printed (target <= 150 ms), and
100 concurrent background jobs with a fast fake agent (all terminal, no event lost)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from benchmarks.common import isolated_project, machine, median_ms, sp_argv, timed

ECHO_SPEC = """\
metadata: {name: echo, description: fast fake agent}
execution:
  runner: {type: command, command: cat}
prompt: {system: "", task_template: "$prompt"}
"""
RUNS = 20
CONCURRENT = 100


def setup() -> tuple[dict[str, str], Path]:
    layout = isolated_project()
    (layout.project / "specialists").mkdir()
    (layout.project / "specialists" / "echo.specialist.yaml").write_text(ECHO_SPEC)
    return layout.env, layout.project


def wait_all_terminal(jobs_dir: Path, ids: list[str], timeout: float = 300) -> float:
    t0 = time.perf_counter()
    pending = set(ids)
    while pending and time.perf_counter() - t0 < timeout:
        for job_id in list(pending):
            try:
                st = json.loads((jobs_dir / job_id / "status.json").read_text())
            except (FileNotFoundError, ValueError):
                continue
            if st["status"] in ("done", "error", "cancelled"):
                pending.discard(job_id)
        time.sleep(0.05)
    if pending:
        raise SystemExit(f"{len(pending)} jobs never finished")
    return time.perf_counter() - t0


def main() -> None:
    print(f"# run --background — {machine()}")
    env, project = setup()
    walls, ids = [], []
    for i in range(RUNS):
        wall, _, out = timed(
            sp_argv("run", "echo", "--prompt", f"hello {i}", "--background"), env=env, cwd=project
        )
        assert out.returncode == 0, out.stderr
        walls.append(wall)
        ids.append(out.stdout.strip())
    print(
        f"run --background until id printed: median {median_ms(walls):6.1f} ms "
        f"(min {min(walls) * 1000:.1f}, max {max(walls) * 1000:.1f})"
    )
    wait_all_terminal(project / ".specialists" / "jobs", ids)

    env, project = setup()
    jobs_dir = project / ".specialists" / "jobs"
    t0 = time.perf_counter()
    ids = []
    for i in range(CONCURRENT):
        _, _, out = timed(
            sp_argv("run", "echo", "--prompt", f"job {i}", "--background"), env=env, cwd=project
        )
        ids.append(out.stdout.strip())
    dispatched = time.perf_counter() - t0
    settle = wait_all_terminal(jobs_dir, ids)
    lost = bad = 0
    for i, job_id in enumerate(ids):
        st = json.loads((jobs_dir / job_id / "status.json").read_text())
        lines = (jobs_dir / job_id / "events.jsonl").read_text().splitlines()
        seqs = [json.loads(line)["seq"] for line in lines]
        if seqs != list(range(1, len(seqs) + 1)) or st["events"] != len(seqs):
            lost += 1
        result = (jobs_dir / job_id / "result.txt").read_text() if st["status"] == "done" else ""
        if st["status"] != "done" or f"job {i}" not in result:
            bad += 1
    print(
        f"{CONCURRENT} concurrent jobs: dispatched in {dispatched:.1f} s, all terminal "
        f"{settle:.1f} s later; {CONCURRENT - bad} done with the right result, "
        f"{lost} with lost/unordered events"
    )


if __name__ == "__main__":
    main()
