"""Missions: `specialists mission show` with 500 linked runs (each one's status read live),
the show core alone, `mission list` over 200 missions, the `run` launch hunk (an automatic
mission created and linked), a `state set` under the lock, and the goal step a linked job's
news costs its supervisor. Target: `mission show` with 500 runs well under a second."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.common import isolated_project, machine, peak_rss_of, sp_argv, timed
from specialists.features.missions import model, ops
from specialists.features.missions.driver import idle_turn
from specialists.features.missions.launch import Launched, choose, link_after_launch
from specialists.features.missions.state import state_set
from specialists.features.missions.store import MissionStore
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.store.records import JobStatus
from specialists.store.writer import JobWriter
from specialists.supervise.launch import create_job
from tests.support.jobs import make_record


def build(project: Path, runs: int = 500, missions: int = 1) -> tuple[MissionStore, JobStore]:
    """`runs` finished jobs (real job directories made by the launcher) linked to mission
    m0; `missions - 1` more small missions beside it."""
    root = project / ".specialists"
    jobs = JobStore(root, news=None)
    store = MissionStore(root, index_dir=project / "index")
    ops.create(store, title="the big one", mission_id="m0", goal_budget=10**9)
    ids = []
    for _ in range(runs):
        record, lock = create_job(jobs, make_record(project, owner=[]))
        writer = JobWriter(jobs, record.id)
        writer.write_status(
            JobStatus(id=record.id, specialist="w", status="done", tokens={"input": 100})
        )
        writer.close()
        lock.release()
        ids.append(record.id)

    def link_all(m: model.Mission) -> tuple[model.Mission, None]:
        for job_id in ids:
            m = model.link_run(m, job_id, "w", 1)
        return m, None

    store.update("m0", link_all)
    for n in range(1, missions):
        ops.create(store, title=f"mission {n}", mission_id=f"m{n}")
    return store, jobs


def show_core(rounds: int = 9) -> None:
    store, _ = build(Path(tempfile.mkdtemp(prefix="sp-bench-missions-")))
    jobs = JobStore(store.root.parent, news=NEWS)
    t0 = time.perf_counter()
    ops.show(store, jobs, "m0")  # the runs were linked while starting: all 500 read and saved
    first = (time.perf_counter() - t0) * 1000
    print(f"show core, first (500 statuses read live, saved back): {first:.1f} ms")
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        shown = ops.show(store, jobs, "m0")
        times.append((time.perf_counter() - t0) * 1000)
        assert len(shown.runs) == 500 and not shown.warnings, shown.warnings
    print(
        f"show core, 500 linked runs last seen finished: median {statistics.median(times):.1f} ms"
    )
    times = []
    for n in range(rounds):
        t0 = time.perf_counter()
        state_set(store.root.parent, "m0", f"k{n}", {"n": n}, store=store)
        times.append((time.perf_counter() - t0) * 1000)
    print(
        f"state set (locked merge), a mission with 500 runs:"
        f" median {statistics.median(times):.2f} ms"
    )
    first = store.load("m0").runs[0].job_id
    JobWriter(jobs, first).write_status(JobStatus(id=first, specialist="w", status="waiting"))
    times = []
    for n in range(rounds):  # each answer is a new idle turn of a waiting job
        answers = store.root.parent / "jobs" / first / "answers"
        answers.mkdir(exist_ok=True)
        (answers / f"{n}.txt").write_text("x")
        t0 = time.perf_counter()
        idle_turn(store.root.parent, first, store=store)
        times.append((time.perf_counter() - t0) * 1000)
    print(
        f"goal step for one idle turn (sums 500 linked jobs' tokens, posts a notice):"
        f" median {statistics.median(times):.1f} ms"
    )


def launch_hunk(rounds: int = 30) -> None:
    root = Path(tempfile.mkdtemp(prefix="sp-bench-missions-")) / ".specialists"
    root.mkdir()
    times = []
    for n in range(rounds):
        job = Launched(f"{n:08x}", "echo", f"task {n}\nmore", ("claude-bench",))
        t0 = time.perf_counter()
        assert link_after_launch(root, choose(), job, []) is not None
        times.append((time.perf_counter() - t0) * 1000)
    print(
        f"a launch's automatic mission (create + link + user index):"
        f" median {statistics.median(times):.2f} ms"
    )


def cli(rounds: int = 7) -> None:
    layout = isolated_project()
    build(layout.project, runs=500, missions=200)
    env = layout.env
    for label, argv in (
        ("mission show, 500 linked runs", sp_argv("mission", "show", "m0", "--json")),
        ("mission list, 200 missions", sp_argv("mission", "list", "--json")),
    ):
        walls = []
        for _ in range(rounds):
            wall, _, out = timed(argv, env=env, cwd=layout.project)
            assert out.returncode == 0, out.stderr
            walls.append(wall)
        rss = peak_rss_of(argv, env=env, cwd=layout.project)
        print(
            f"{label}, as a command: median {statistics.median(walls) * 1000:.0f} ms"
            f" (min {min(walls) * 1000:.0f}), peak RSS {rss:.1f} MB"
        )


def main() -> None:
    print(f"# missions — {machine()}")
    show_core()
    launch_hunk()
    cli()


if __name__ == "__main__":
    main()
