"""The same fan-out through Claude Code's own Workflow tool and through our workflow runner,
side by side, on the same mock LLM (issue 11 item 10).

Modes, each a parallel fan-out (one barrier, N agents) and a 2-stage pipeline (N/2 items,
N agents), every child a one-word answer from the mock:

- cc:     `claude -p` (2.1.197) whose model (the mock) calls the Workflow tool; its agents are
          in-process subagents of that one Claude Code process;
- ours-cc: `specialists workflow run` of a Python workflow whose children are Claude Code
          jobs (runner claude: one `claude -p` process per child), like for like;
- ours-native: the same workflow with native-runtime children on the same mock.

Both runners get the same concurrency: Claude Code's cap, min(16, max(2, cores - 2)).
Figures: wall time per run and per child (median of --rounds), CPU time of every process of
the run (this process is their subreaper and reaps them: RUSAGE_CHILDREN; steadier than the
wall on a shared machine), peak memory (the sum of the RSS of every process of the run,
sampled every 0.2 s), model requests the mock saw per child,
and what a kill -9 of the orchestrating process mid-run leaves (then resume).

Run: .venv/bin/python -m benchmarks.bench_workflow_vs_claude [--sizes 10,50,100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import isolated_project, machine, sp_argv
from specialists.features.workflows.journal import JOURNAL_FILE, read_entries
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.store.records import JobStatus
from specialists.store.view import current_status
from tests.support.agent_env import CLAUDE_MOCK_MODEL, AgentEnv, find_agent_bin
from tests.support.claude_workflow import (
    WorkflowMock,
    child_tag,
    claude_workflow_argv,
    fan_script,
    journaled_results,
    launch_of,
)
from tests.support.mock_llm import MockLLM, Reply, Request

CORES = os.cpu_count() or 2
CONCURRENCY = min(16, max(2, CORES - 2))  # Claude Code's cap (its Nyf), given to ours too
MODES = ("cc", "ours-cc", "ours-native")
SPECS = {
    "ccchild": f"execution: {{runner: claude, model: anthropic/{CLAUDE_MOCK_MODEL}, "
    "permission_required: READ_ONLY}",
    "natchild": "execution: {runner: native, model: openai/mock-model, "
    "permission_required: READ_ONLY}",
}
FAN = """
async def main(runs, args):
    n, agent = int(args["n"]), args["agent"]
    def child(tag):
        return {"key": tag, "agent": agent, "task": f"bench child {tag}: answer in one word"}
    if args["shape"] == "parallel":
        done = await runs.all([child(f"p{i}") for i in range(n)])
    else:
        done = await runs.pipeline(range(n // 2), lambda i, _: child(f"a{i}"),
                                   lambda i, _: child(f"b{i}"))
    return [r.output for r in done]
"""
MARK = "SP_BENCH_RUN"


@dataclass
class Figures:
    wall: float
    peak_mb: float
    child_requests: int
    other_requests: int
    cpu: float  # user + system seconds of every process of the run


def _subreaper() -> None:
    """Orphans of the run (detached supervisors) become this process's children, so that
    their CPU reaches RUSAGE_CHILDREN once they are reaped (`_reaped_cpu`)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def _reaped_cpu(timeout: float = 60) -> float:
    """Reap every child (the run's processes end with it), then the children's CPU so far."""
    import resource

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.05)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Counter:
    """The mock's rule for every mode: Claude Code's Workflow conversation (WorkflowMock)
    plus our children (any request whose task is a `bench child <tag>`). Children whose
    tag is in `hold` wait for `release` (the kill -9 runs)."""

    def __init__(self, call: dict[str, Any] | None = None) -> None:
        self.flow = WorkflowMock(call or {})
        self.tags: dict[str, int] = {}
        self.other = 0
        self.hold: set[str] = set()
        self.held: set[str] = set()
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, req: Request) -> Reply:
        tag = child_tag(req) or _our_tag(req)
        with self._lock:
            if tag:
                self.tags[tag] = self.tags.get(tag, 0) + 1
            else:
                self.other += 1
        if tag and tag in self.hold and not self.release.is_set():
            with self._lock:
                self.held.add(tag)
            self.release.wait(600)
        if tag and tag.startswith(("p", "a", "b")) and child_tag(req) is None:
            return Reply(f"ok-{tag}")
        if not self.flow.call:  # ours: no Workflow conversation to play
            return Reply("not a bench child")
        return self.flow(req)


_OUR_TAG = re.compile(r"bench child (\w+):")


def _our_tag(req: Request) -> str | None:
    found = _OUR_TAG.search(req.last_user_text())
    return found.group(1) if found else None


class Sampler(threading.Thread):
    """Peak of the summed RSS of every process carrying MARK=<run id> in its environment,
    and of their descendants (a child whose environment was rebuilt still counts)."""

    def __init__(self, run_id: str) -> None:
        super().__init__(daemon=True)
        self.needle = f"{MARK}={run_id}".encode()
        self.peak_kb = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak_kb = max(self.peak_kb, self._sum_kb())
            self.stop.wait(0.2)

    def _sum_kb(self) -> int:
        parents: dict[int, int] = {}
        marked: set[int] = set()
        rss: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            pid = int(entry)
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                if self.needle in Path(f"/proc/{pid}/environ").read_bytes():
                    marked.add(pid)
            except OSError:
                continue  # the process ended while we looked: it no longer counts
            for line in status.splitlines():
                if line.startswith("PPid:"):
                    parents[pid] = int(line.split()[1])
                elif line.startswith("VmRSS:"):
                    rss[pid] = int(line.split()[1])
        counted = set(marked)
        for pid in parents:
            chain: list[int] = []
            p = pid
            while p in parents and p not in counted and p > 1 and len(chain) < 64:
                chain.append(p)
                p = parents[p]
            if p in counted:
                counted.update(chain)
        return sum(rss.get(p, 0) for p in counted)


class Bench:
    def __init__(self) -> None:
        self.layout: AgentEnv = isolated_project()
        self.mock = MockLLM().start()
        self.layout.point_at(self.mock.base_url)
        claude = find_agent_bin("claude")
        if claude is None:
            sys.exit("error: claude not found (run scripts/setup to install the agent CLIs)")
        self.claude = str(claude)
        project = self.layout.project
        (project / "specialists").mkdir(exist_ok=True)
        for name, execution in SPECS.items():
            (project / "specialists" / f"{name}.specialist.yaml").write_text(
                f"metadata: {{name: {name}, description: bench}}\n{execution}\n"
                'prompt: {task_template: "$prompt"}\n'
            )
        (project / ".specialists" / "workflows").mkdir(parents=True, exist_ok=True)
        (project / ".specialists" / "workflows" / "fan.py").write_text(FAN)
        self.env = dict(self.layout.env)
        self.env["SPECIALISTS_CLAUDE_BIN"] = self.claude
        self.store = JobStore(project / ".specialists", news=NEWS)
        _subreaper()

    def _env(self) -> tuple[str, dict[str, str]]:
        run_id = uuid.uuid4().hex[:12]
        return run_id, {**self.env, MARK: run_id}

    def measure(self, mode: str, shape: str, n: int) -> Figures:
        counter = Counter({"script": fan_script(n, shape)})  # type: ignore[arg-type]
        self.mock.set_default(counter)
        run_id, env = self._env()
        sampler = Sampler(run_id)
        sampler.start()
        cpu0 = _reaped_cpu()
        t0 = time.perf_counter()
        if mode == "cc":
            out = subprocess.run(
                claude_workflow_argv(self.claude), env=env, cwd=self.layout.project,
                capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=3600,
            )  # fmt: skip
            if out.returncode != 0 or len(counter.flow.results) != 1:
                raise SystemExit(f"error: Claude Code's workflow failed: {out.stderr[-800:]}")
        else:
            job = self._ours(env, mode, shape, n)
            status = self._wait_ended(job)
            if status.status != "done":
                raise SystemExit(f"error: our workflow {job} ended {status.status}: {status.error}")
        wall = time.perf_counter() - t0
        sampler.stop.set()
        sampler.join()
        if len(counter.tags) != n:
            raise SystemExit(f"error: the mock saw {len(counter.tags)} children, not {n}")
        cpu = _reaped_cpu() - cpu0
        return Figures(wall, sampler.peak_kb / 1024, sum(counter.tags.values()), counter.other, cpu)

    def _ours(self, env: dict[str, str], mode: str, shape: str, n: int) -> str:
        agent = "ccchild" if mode == "ours-cc" else "natchild"
        argv = sp_argv(
            "workflow", "run", "fan", "--arg", f"n={n}", "--arg", f"agent={agent}",
            "--arg", f"shape={shape}", "--concurrency", str(CONCURRENCY), "--detach",
        )  # fmt: skip
        out = subprocess.run(
            argv, env=env, cwd=self.layout.project, capture_output=True, text=True, check=True
        )
        return out.stdout.strip()

    def _wait_ended(self, job: str) -> JobStatus:
        """The job's status once it ended (a dead supervisor is recorded as such)."""
        _wait(lambda: not current_status(self.store, job).active, f"workflow {job}", 3600)
        return current_status(self.store, job)

    def journal(self, job: str) -> list[dict[str, Any]]:
        return read_entries(self.store.job_dir(job) / JOURNAL_FILE)


def _wait(condition: Callable[[], bool], what: str, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"error: timed out waiting for {what}")
        time.sleep(0.05)


def kill_cc(bench: Bench, n: int, *, same_session: bool) -> str:
    """kill -9 of `claude -p` while its workflow runs (p0..p2 answered, p3.. held), then
    the Workflow tool with `resumeFromRunId` from a new session or the same one (--resume)."""
    counter = Counter({"script": fan_script(n, "parallel")})
    counter.hold = {f"p{i}" for i in range(3, n)}
    bench.mock.set_default(counter)
    _, env = bench._env()
    config = bench.layout.claude_config_dir
    finished = journaled_results(config)
    proc = subprocess.Popen(
        claude_workflow_argv(bench.claude), env=env, cwd=bench.layout.project,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    _wait(lambda: journaled_results(config) - finished >= 3, "p0..p2 journaled")
    os.killpg(proc.pid, signal.SIGKILL)
    out, _ = proc.communicate()
    counter.release.set()
    launch = launch_of(out)
    again = Counter(launch.resume_call())
    bench.mock.set_default(again)
    argv = claude_workflow_argv(bench.claude)
    if same_session:
        argv += ["--resume", launch.session]
    t0 = time.perf_counter()
    subprocess.run(
        argv, env=env, cwd=bench.layout.project, capture_output=True,
        stdin=subprocess.DEVNULL, timeout=600, check=True,
    )  # fmt: skip
    complete = bool(again.flow.results and again.flow.results[-1].count("ok-p") == n)
    rerun = sorted(again.tags, key=lambda t: int(t[1:]))
    return (
        f"re-ran {len(rerun)} of {n} ({', '.join(rerun)}) in {time.perf_counter() - t0:.1f} s, "
        f"{'complete result' if complete else 'no complete result'}"
    )


def kill_ours(bench: Bench, mode: str, n: int) -> str:
    """kill -9 of our workflow's supervisor and engine with p0..p2 done and p3.. running or
    queued, the running children released after the kill, then `workflow resume`."""
    counter = Counter()
    counter.hold = {f"p{i}" for i in range(3, n)}
    bench.mock.set_default(counter)
    _, env = bench._env()
    job = bench._ours(env, mode, "parallel", n)

    def ended_keys() -> set[str]:
        return {e["key"] for e in bench.journal(job) if e.get("e") == "end"}

    _wait(lambda: {"p0", "p1", "p2"} <= ended_keys() and bool(counter.held), "p0..p2 ended")
    status = bench.store.read_status(job)
    assert status is not None and status.pid and status.supervisor_pid
    os.kill(status.supervisor_pid, signal.SIGKILL)
    os.kill(status.pid, signal.SIGKILL)
    before = bench.journal(job)
    ended = {e["key"] for e in before if e.get("e") == "end"}
    in_flight = sorted({e["key"] for e in before if e.get("e") == "launch"} - ended)
    counter.release.set()  # the children in flight live on: let them finish
    bench._wait_ended(job)
    t0 = time.perf_counter()
    out = subprocess.run(
        sp_argv("workflow", "resume", job, "--detach"), env=env, cwd=bench.layout.project,
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    final = bench._wait_ended(out.stdout.strip())
    wall = time.perf_counter() - t0
    launched = [e["key"] for e in bench.journal(out.stdout.strip()) if e.get("e") == "launch"]
    adopted = [k for k in in_flight if k not in launched]
    return (
        f"{final.status}: {len(ended)} from the journal, {len(adopted)} in flight at the kill "
        f"adopted ({', '.join(adopted)}), {len(launched)} never launched, run now "
        f"({wall:.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,50,100")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rounds-big", type=int, help="rounds of ours at N >= 50 (slow)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--shapes", default="parallel,pipeline")
    parser.add_argument("--no-kill", action="store_true")
    args = parser.parse_args()
    bench = Bench()
    modes = [m for m in args.modes.split(",") if m]
    loads = [os.getloadavg()[0]]
    print(f"machine: {machine()}; concurrency {CONCURRENCY} for both; load {loads[0]:.1f}")
    print(f"{'mode':<12} {'shape':<9} {'N':>4} {'wall s':>8} {'ms/child':>9} {'cpu s':>6} "
          f"{'peak MB':>8} {'req/child':>9} {'other req':>9} {'rounds':>6}")  # fmt: skip
    base: dict[tuple[str, int], tuple[float, float]] = {}  # cc's (wall, cpu) per shape and N
    for n in (int(x) for x in args.sizes.split(",") if x):
        for shape in args.shapes.split(","):
            for mode in modes:
                big = n >= 50 and mode != "cc" and args.rounds_big is not None
                runs = [
                    bench.measure(mode, shape, n)
                    for _ in range(args.rounds_big if big else args.rounds)
                ]
                loads.append(os.getloadavg()[0])
                wall = statistics.median(r.wall for r in runs)
                cpu = statistics.median(r.cpu for r in runs)
                if mode == "cc":
                    base[shape, n] = (wall, cpu)
                cc = base.get((shape, n))
                versus = (
                    f" ({wall / cc[0]:.1f}x cc's wall, {cpu / cc[1]:.1f}x its cpu)" if cc else ""
                )
                print(
                    f"{mode:<12} {shape:<9} {n:>4} {wall:8.1f} {wall / n * 1000:9.0f} {cpu:6.1f} "
                    f"{statistics.median(r.peak_mb for r in runs):8.0f} "
                    f"{statistics.median(r.child_requests for r in runs) / n:9.2f} "
                    f"{statistics.median(r.other_requests for r in runs):9.0f} {len(runs):>6}"
                    + ("" if mode == "cc" else versus),
                    flush=True,
                )
    if not args.no_kill:
        print("kill -9 of the orchestrating process mid-run (10 children, 3 done), then resume:")
        for same, how in ((False, "a new session"), (True, "the same session (--resume)")):
            print(f"  cc, resumeFromRunId from {how}: {kill_cc(bench, 10, same_session=same)}")
        for mode in (m for m in modes if m != "cc"):
            print(f"  {mode}, workflow resume: {kill_ours(bench, mode, 10)}", flush=True)
    print(f"load average during the run: {min(loads):.1f} to {max(loads):.1f}")
    bench.mock.stop()


if __name__ == "__main__":
    main()
