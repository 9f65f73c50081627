"""Memory of 100 concurrent jobs (issue 20: at most 800 MB of PSS in all).

Each job is a command job whose agent is `sleep 600`: a runner that only waits, so what is
measured is our own cost per job (its keeper and its supervisor, and what starts them), not
an agent runtime's; the `sleep` processes are summed apart. PSS (proportional set size,
/proc/PID/smaps_rollup) divides a page shared by several processes among them, so the sum
over processes is the memory they take together: forked supervisors share the pages of the
fork server they came from.

Ways to start the jobs (all 100 running at once, then measured):

- fresh:    this process starts them one by one through the one start (supervise/start.py),
            each supervisor a fresh `python -m specialists _supervise` (what `specialists run
            --background` does);
- forked:   the same, with this process's fork server (supervise/forks.py) forking them;
- shared:   the same, without a fork server of its own: the project's shared one
            (supervise/shared_forks.py), which the second launch starts, forks the rest (the
            few launched while it imports start fresh); "fresh" turns it off
            (SPECIALISTS_FORK_SERVER=off);
- workflow: `specialists workflow run` of all its children at once (at most 64 a workflow:
            100 jobs are two workflows of 50); each engine's fork server forks them, and
            the workflows' own supervisors, engines and servers count.

Beside the sum it prints the PSS of a process in each role: a keeper (a fresh supervisor's
parent, named sp-keeper), a supervisor, a fork server (the keeper of what it forked).

Every process of the run carries SP_BENCH_RUN=<id> in its start-up environment (set before
anything is started), which is how they are found; at the end every job is stopped and any
process of the run still alive is killed and reported.

Run: .venv/bin/python -m benchmarks.bench_memory [--jobs 100] [--modes fresh,forked,shared,workflow]
     SPECIALISTS_BENCH_SRC=/other/src ... --modes fresh   (the other tree's supervisors)
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import isolated_project, machine, sp_argv
from specialists.base.errors import StoreError
from specialists.features.workflows.options import MAX_CONCURRENCY
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.store.view import current_status
from specialists.supervise import shared_forks
from specialists.supervise.actions import stop_job
from specialists.supervise.plan import JobRequest, plan_job
from specialists.supervise.start import start

MARK = "SP_BENCH_RUN"
TARGET_MB = 800.0
SPEC = (
    "metadata: {name: waiter, description: bench}\n"
    'execution: {runner: {type: command, command: sleep, args: ["600"]}}\n'
    'prompt: {task_template: "$prompt"}\n'
)
WORKFLOW = """
async def main(runs, args):
    n = int(args["n"])
    return [r.output for r in await runs.all(
        [{"key": f"w{i}", "agent": "waiter", "task": f"wait {i}"} for i in range(n)])]
"""


def pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass  # it ended while we looked: it no longer counts
    return 0


def ours(run_id: str) -> dict[int, bytes]:
    """Every live process whose start-up environment carries this run's mark: pid -> argv[0]."""
    needle = f"{MARK}={run_id}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if needle in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                found[int(entry)] = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
    return found


def _stat(pid: int) -> tuple[str, int]:
    """(its name, its parent's pid), or ("", 0) once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "", 0
    return text[text.find("(") + 1 : text.rfind(")")], int(text[text.rfind(")") + 2 :].split()[1])


def roles(procs: dict[int, bytes]) -> dict[str, list[int]]:
    """Our processes by role: agents (`sleep`), keepers (named sp-keeper), fork servers,
    supervisors (a keeper's or a fork server's other child) and the rest (workflows' engines)."""
    stats = {pid: _stat(pid) for pid in procs}
    servers = {p for p, cmd in procs.items() if b"_forks" in cmd and not _forked(p, procs, stats)}
    found: dict[str, list[int]] = {r: [] for r in ("agent", "keeper", "server", "supervisor")}
    found["other"] = []
    for pid, cmd in procs.items():
        name, parent = stats[pid]
        if os.path.basename(cmd.split(b"\0")[0]) == b"sleep":
            found["agent"].append(pid)
        elif name == "sp-keeper":
            found["keeper"].append(pid)
        elif pid in servers:
            found["server"].append(pid)
        elif parent in servers or stats.get(parent, ("", 0))[0] == "sp-keeper":
            found["supervisor"].append(pid)
        else:
            found["other"].append(pid)
    return found


def _forked(pid: int, procs: dict[int, bytes], stats: dict[int, tuple[str, int]]) -> bool:
    """Whether `pid` was forked by a fork server (it shows the server's command line)."""
    parent = stats[pid][1]
    return parent in procs and b"_forks" in procs[parent]


def measure(run_id: str) -> dict[str, tuple[float, int]]:
    """Role (and "ours": all but the agents) -> (PSS MB, processes)."""
    found = roles(ours(run_id))
    sizes = {role: (sum(pss_kb(p) for p in pids) / 1024, len(pids)) for role, pids in found.items()}
    mine = [sizes[r] for r in ("keeper", "supervisor", "server", "other")]
    sizes["ours"] = (sum(mb for mb, _ in mine), sum(n for _, n in mine))
    return sizes


class Bench:
    def __init__(self) -> None:
        self.layout = isolated_project()
        project = self.layout.project
        (project / "specialists").mkdir(exist_ok=True)
        (project / "specialists" / "waiter.specialist.yaml").write_text(SPEC)
        (project / ".specialists" / "workflows").mkdir(parents=True, exist_ok=True)
        (project / ".specialists" / "workflows" / "wait.py").write_text(WORKFLOW)
        os.environ.update(self.layout.env)  # the supervisors this process starts inherit it
        # Measure what users get: bytecode cached. A tree never run with it written compiles
        # every module in every fresh supervisor, which costs CPU and leaves a bigger heap.
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.chdir(project)
        self.store = JobStore(project / ".specialists", news=NEWS)

    def run(self, mode: str, n: int) -> tuple[dict[str, tuple[float, int]], float]:
        run_id = uuid.uuid4().hex[:12]
        os.environ[MARK] = run_id
        # Only `shared` has the shared server; it exits soon after the run's last job.
        os.environ[shared_forks.OFF_ENV] = "on" if mode == "shared" else "off"
        os.environ[shared_forks.IDLE_ENV] = "2"
        t0 = time.perf_counter()
        server = None
        jobs: list[str] = []
        try:
            if mode == "workflow":  # a workflow runs at most 64 children at once: several
                count = -(-n // MAX_CONCURRENCY)
                jobs = [self._workflow(n // count + (i < n % count)) for i in range(count)]
                running = lambda: self._children_running(jobs, n)  # noqa: E731
            else:
                if mode == "forked":
                    from specialists.supervise import forks

                    server = forks.serve_here()
                    if server is None:
                        raise SystemExit("error: no fork server here (Linux only)")
                request = JobRequest("waiter", "wait", cwd=self.layout.project)
                for _ in range(n):
                    record = plan_job(self.store, request)
                    jobs.append(start(self.store, record, check=False).id)
                running = lambda: all(self._running(j) for j in jobs)  # noqa: E731
            _wait(running, f"{n} jobs running")
            started = time.perf_counter() - t0
            time.sleep(2.0)  # let every supervisor reach its steady loop
            samples = []
            for _ in range(3):
                samples.append(measure(run_id))
                time.sleep(1.0)
            medians = {
                role: (statistics.median(s[role][0] for s in samples), samples[-1][role][1])
                for role in samples[-1]
            }
            return medians, started
        finally:
            if server is not None:  # what it forked lives on
                from specialists.supervise import forks

                forks.stop_serving()
            self._clean(run_id, jobs)

    def _workflow(self, n: int) -> str:
        argv = sp_argv(
            "workflow", "run", "wait", "--arg", f"n={n}", "--concurrency", str(n), "--detach"
        )
        out = subprocess.run(argv, capture_output=True, text=True, check=True)
        return out.stdout.strip()

    def _running(self, job: str) -> bool:
        st = self.store.read_status(job)
        return st is not None and st.status == "running" and bool(st.pid)

    def _children_running(self, workflows: list[str], n: int) -> bool:
        children = [j for j in self.store.list_ids() if self._parent(j) in workflows]
        return len(children) >= n and all(self._running(j) for j in children)

    def _parent(self, job: str) -> str | None:
        try:
            return self.store.read_record(job).parent_id
        except StoreError:  # being created: its job.json is not written yet
            return None

    def _clean(self, run_id: str, jobs: list[str]) -> None:
        """Stop every job; then nothing of the run may be left (killed and reported if so)."""
        every = [j for j in self.store.list_ids() if current_status(self.store, j).active]
        for job in [*jobs, *(j for j in every if j not in jobs)]:
            if current_status(self.store, job).active:
                stop_job(self.store, job)
        deadline = time.monotonic() + 60
        while ours(run_id) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = ours(run_id)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
        if left:
            print(f"  warning: {len(left)} process(es) of the run outlived their jobs: killed")


def _wait(condition: Callable[[], bool], what: str, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"error: timed out waiting for {what}")
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--modes", default="fresh,forked,shared,workflow")
    args = parser.parse_args()
    bench = Bench()
    print(f"machine: {machine()}; load {os.getloadavg()[0]:.1f}; {args.jobs} jobs, agent sleep")
    print(f"{'mode':<9} {'ours MB':>8} {'per job':>8} {'target':>7} {'ratio':>6} "
          f"{'agents MB':>9} {'procs':>6} {'start s':>8}   MB a process (count): keeper, "
          "supervisor, server, other")  # fmt: skip
    for mode in (m for m in args.modes.split(",") if m):
        sizes, started = bench.run(mode, args.jobs)
        (mine, procs), agents = sizes["ours"], sizes["agent"][0]
        each = ", ".join(
            f"{mb / max(count, 1):.1f} ({count})"
            for mb, count in (sizes[r] for r in ("keeper", "supervisor", "server", "other"))
        )
        print(
            f"{mode:<9} {mine:8.0f} {mine / args.jobs:8.1f} {TARGET_MB:7.0f} "
            f"{mine / TARGET_MB:6.2f} {agents:9.1f} {procs:>6} {started:8.1f}   {each}",
            flush=True,
        )
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
