"""Hook runtime as Claude Code sees it: a fresh process per prompt (target <= 60 ms).

    .venv/bin/python benchmarks/bench_hooks.py [--runs 30]

Scenarios: an empty project; 1,000 finished jobs (plus 3 live ones), before and after
`specialists status` built its finished-jobs index; 1,000 jobs and 50 notice events
(posted before every run, so each run delivers 10 of the waiting ones). Each is
timed for `specialists hook user-prompt-submit` and `... session-start`, and in the empty
project also the hooks of every tool call: PreToolUse and PostToolUse of a Bash call.
They run through the console script when it is installed next to this interpreter (what
settings.json runs), else `python -m specialists`. Each hook run is paired with a bare
`python -c pass` run just before it; prints median, min and p90 in ms, the median time over
the bare interpreter, and the median CPU time over the bare interpreter's.
SPECIALISTS_BENCH_SRC=<tree>/src runs that tree's code instead (a before/after pair).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOOK_INPUT = json.dumps(
    {"session_id": "bench", "hook_event_name": "UserPromptSubmit", "prompt": "x"}
)
BASH_CALL = {"session_id": "bench", "tool_name": "Bash", "tool_input": {"command": "make test"}}
TOOL_HOOKS = {  # what Claude Code sends around every Bash call
    "pre-tool-use": json.dumps({**BASH_CALL, "hook_event_name": "PreToolUse"}),
    "post-tool-use": json.dumps(
        {**BASH_CALL, "hook_event_name": "PostToolUse", "tool_response": {"stdout": "ok"}}
    ),
}


def make_jobs(state: Path, count: int, live: int = 3) -> None:
    jobs = state / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    now = time.time()
    old = now - 86_400
    for i in range(count):
        job_id = f"{i:08x}"
        d = jobs / job_id
        d.mkdir(exist_ok=True)
        active = i < live
        status = {
            "id": job_id,
            "specialist": "overthinker",
            "status": "running" if active else "done",
            "started_at_ms": int((now - 30) * 1000),
            "elapsed_s": 107.0,
        }
        path = d / "status.json"
        path.write_text(json.dumps(status))
        if not active:
            os.utime(path, (old, old))
        (d / "job.json").write_text(json.dumps({"id": job_id, "prompt": "p" * 200}))


def make_notices(state: Path, count: int) -> None:
    """`count` notice events for the session (finished jobs: ids >= 0x64 are "done")."""
    from specialists.events.inbox import Inbox
    from specialists.events.model import EventSource

    inbox = Inbox(state, "claude-bench")
    for i in range(count):
        job_id = f"{i + 100:08x}"
        inbox.append(
            "notice",
            EventSource("run", job_id, {"specialist": "overthinker"}),
            f"Specialist 'overthinker' completed (job {job_id}, 1m47s). Run: ...",
            source_id=f"job-{job_id}.{time.monotonic_ns()}",  # a fresh id every run
            seq=1,
        )


def hook_command() -> list[str]:
    script = Path(sys.executable).with_name("specialists")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "specialists"]


def _children_cpu_ms() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1000


def _once(argv: list[str], env: dict[str, str], cwd: Path, stdin: str) -> tuple[float, float]:
    """(wall ms, CPU ms) of one run."""
    t0, c0 = time.perf_counter(), _children_cpu_ms()
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, cwd=cwd)
    elapsed, cpu = (time.perf_counter() - t0) * 1000, _children_cpu_ms() - c0
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed: {proc.stderr}")
    return elapsed, cpu


Runs = list[tuple[float, float]]


def time_runs(
    argv: list[str], env: dict[str, str], cwd: Path, runs: int, before=None, stdin=HOOK_INPUT
) -> tuple[Runs, Runs]:
    """Hook runs and, paired with each, a bare interpreter start run just before it: on a
    busy machine the difference is steadier than either figure."""
    hook, base = [], []
    for i in range(runs + 2):
        if before:
            before()
        b = _once([sys.executable, "-c", "pass"], env, cwd, "")
        h = _once(argv, env, cwd, stdin)
        if i >= 2:  # the first two warm the page cache
            hook.append(h)
            base.append(b)
    return hook, base


def summary(label: str, hook: Runs, base: Runs) -> str:
    extra = [h[0] - b[0] for h, b in zip(hook, base, strict=True)]
    cpu = [h[1] - b[1] for h, b in zip(hook, base, strict=True)]
    ordered = sorted(h[0] for h in hook)
    p90 = ordered[max(0, int(len(ordered) * 0.9) - 1)]
    return (
        f"{label:<44} median {statistics.median(ordered):6.1f}  min {ordered[0]:6.1f}  "
        f"p90 {p90:6.1f}  over bare python {statistics.median(extra):6.1f} ms, "
        f"CPU {statistics.median(cpu):6.1f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-hooks-"))
    try:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(root / "home"),
            "XDG_STATE_HOME": str(root / "state"),
            "XDG_CONFIG_HOME": str(root / "config"),
            "CLAUDE_CONFIG_DIR": str(root / "claude"),
        }
        other = os.environ.get("SPECIALISTS_BENCH_SRC")
        if other:  # that tree's code (the console script imports the package by name)
            env["PYTHONPATH"] = other
        cmd = hook_command()
        print(
            f"hook command: {' '.join(cmd)} hook <event>; {args.runs} runs each; "
            f"cpus={os.cpu_count()}"
        )
        cases = []
        empty = root / "empty"
        (empty / ".git").mkdir(parents=True)
        cases.append(("0 jobs", empty, None, False))
        big = root / "big"
        (big / ".git").mkdir(parents=True)
        make_jobs(big / ".specialists", 1000)
        markers = lambda: make_notices(big / ".specialists", 50)  # noqa: E731
        cases.append(("1000 jobs, no index", big, None, False))
        cases.append(("1000 jobs (indexed)", big, None, True))
        cases.append(("1000 jobs (indexed) + 50 notices", big, markers, True))
        for label, project, before, indexed in cases:
            run_env = dict(env, SPECIALISTS_PROJECT_ROOT=str(project))
            if indexed:  # `specialists status` keeps jobs/.finished.json, as in real use
                subprocess.run([*cmd, "status"], env=run_env, cwd=project, capture_output=True)
            for event in ("user-prompt-submit", "session-start"):
                hook, base = time_runs([*cmd, "hook", event], run_env, project, args.runs, before)
                print(summary(f"{event}, {label}", hook, base))
            if project is empty:  # every tool call: a Bash one, nothing pending
                for event, stdin in TOOL_HOOKS.items():
                    argv = [*cmd, "hook", event]
                    hook, base = time_runs(argv, run_env, project, args.runs, stdin=stdin)
                    print(summary(f"{event} (Bash), {label}", hook, base))
        log = root / "state" / "specialists" / "hooks.log"
        if log.exists():
            print(f"hooks.log has {len(log.read_text().splitlines())} lines (expected none)")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
