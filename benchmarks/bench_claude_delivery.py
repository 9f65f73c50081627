"""Event written -> delivered to Claude Code by our hooks (issue 9 item 7; target p90 < 100 ms).

    .venv/bin/python -m benchmarks.bench_claude_delivery [--runs 40]

Each figure is one hook process, started as Claude Code starts it (the console script, the
recorded hook input on stdin), in an isolated project:

- post-tool-use, event pending: an event is appended to the session's inbox, then the
  PostToolUse hook runs (as after the session's next tool call); from the append to the
  hook's reply carrying the event (additionalContext).
- post-tool-use, nothing pending: what every tool call pays when there is no news.
- stop, woken while waiting: the Stop hook waits (the session has a pending timer an hour
  away); an event is appended; from the append to the hook's reply (additionalContext).
- deliver() in-process: the delivery alone, without the interpreter start.

Each hook run is paired with a bare `python -c pass` just before it (the machine is shared:
the difference is steadier than either figure). Prints median, p90 and max in ms.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import isolated_project, machine
from tests.support.agent_env import AgentEnv

INPUTS = json.loads(
    (Path(__file__).parents[1] / "tests/support/claude_hook_inputs.json").read_text()
)
SESSION = "bench-session"


def hook_argv(event: str) -> list[str]:
    script = Path(sys.executable).with_name("specialists")
    base = [str(script)] if script.exists() else [sys.executable, "-m", "specialists"]
    return [*base, "hook", event]


def hook_input(name: str, project: Path) -> str:
    return json.dumps({**INPUTS[name], "session_id": SESSION, "cwd": str(project)})


def append_event(state: Path, seq: int) -> float:
    from specialists.events.inbox import Inbox
    from specialists.events.model import EventSource

    t0 = time.perf_counter()
    Inbox(state, f"claude-{SESSION}").append(
        "job_exit",
        EventSource("bg_run", f"toolu_{seq}", {"command": "make test"}),
        f"exit 0 after 3.0 s (run {seq})",
        source_id="bg-bench.0001",
        seq=seq,
    )
    return t0


def bare(env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, cwd=cwd, check=True)
    return (time.perf_counter() - t0) * 1000


CPU_MS: list[float] = []  # CPU time of each post-tool-use hook process (steadier under load)


def _children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def post_tool_use(layout: AgentEnv, seq: int | None) -> float:
    """ms from the append (or the start, with nothing pending) to the hook's exit."""
    state = layout.project / ".specialists"
    cpu0 = _children_cpu_ms()
    t0 = append_event(state, seq) if seq is not None else time.perf_counter()
    proc = subprocess.run(
        hook_argv("post-tool-use"),
        input=hook_input("PostToolUse:Bash", layout.project),
        capture_output=True,
        text=True,
        env=layout.env,
        cwd=layout.project,
    )
    elapsed = (time.perf_counter() - t0) * 1000
    CPU_MS.append(_children_cpu_ms() - cpu0)
    delivered = f"(run {seq})" in proc.stdout
    if proc.returncode != 0 or delivered != (seq is not None):
        raise SystemExit(f"post-tool-use: rc {proc.returncode}, stdout {proc.stdout[:300]!r}")
    return elapsed


def stop_woken(layout: AgentEnv, seq: int) -> float:
    """The Stop hook is waiting; ms from the append to its reply."""
    proc = subprocess.Popen(
        hook_argv("stop"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=layout.env,
        cwd=layout.project,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(hook_input("Stop", layout.project))
    proc.stdin.close()
    time.sleep(0.5)  # past the interpreter start and its first look (a benchmark, not a test)
    t0 = append_event(layout.project / ".specialists", seq)
    out = proc.stdout.read()
    elapsed = (time.perf_counter() - t0) * 1000
    proc.wait(30)
    if f"(run {seq})" not in out:
        raise SystemExit(f"stop hook did not deliver: {out[:300]!r}")
    return elapsed


def in_process(layout: AgentEnv, seq: int) -> float:
    from specialists.fronts.hooks.delivery import deliver

    state = layout.project / ".specialists"
    t0 = append_event(state, seq)
    out = io.StringIO()
    deliver(state, (f"claude-{SESSION}",), out.write, event="bench")
    if f"(run {seq})" not in out.getvalue():
        raise SystemExit("deliver() did not deliver")
    return (time.perf_counter() - t0) * 1000


def figures(label: str, ms: list[float], base: list[float] | None = None) -> str:
    ordered = sorted(ms)
    p90 = ordered[max(0, int(len(ordered) * 0.9) - 1)]
    line = (
        f"{label:<38} median {statistics.median(ordered):6.1f}  p90 {p90:6.1f}  "
        f"max {ordered[-1]:6.1f} ms"
    )
    if base:
        extra = statistics.median(h - b for h, b in zip(ms, base, strict=True))
        line += f"  (over bare python {extra:5.1f})"
    return line


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    layout = isolated_project()
    layout.env.pop("CLAUDE_CODE_SESSION_ID", None)
    os.environ.update(layout.env)
    from specialists.events.model import EventSource
    from specialists.events.timers import TimerStore

    state = layout.project / ".specialists"
    state.mkdir(exist_ok=True)
    print(
        f"load average {os.getloadavg()[0]:.2f}; {machine()}; {args.runs} runs each; "
        f"hook: {' '.join(hook_argv('<event>'))}"
    )
    seq = 0
    for label, run in (
        ("post-tool-use, event pending", lambda n: post_tool_use(layout, n)),
        ("post-tool-use, nothing pending", lambda n: post_tool_use(layout, None)),
    ):
        hook, base = [], []
        CPU_MS.clear()
        for i in range(args.runs + 2):
            seq += 1
            b = bare(layout.env, layout.project)
            h = run(seq)
            if i >= 2:
                hook.append(h)
                base.append(b)
        print(figures(label, hook, base))
        print(figures(f"  {label.split(',')[1].strip()}: hook CPU time", CPU_MS[2:]))
    now = time.time()
    TimerStore(state, f"claude-{SESSION}").set(
        int((now + 3600) * 1000),
        now_ms=int(now * 1000),
        source=EventSource("sleep", "toolu_t", {"seconds": 3600}),
    )
    woken = []
    for _ in range(max(5, args.runs // 4)):
        seq += 1
        woken.append(stop_woken(layout, seq))
    print(figures("stop, woken while waiting", woken))
    inproc = []
    for _ in range(args.runs):
        seq += 1
        inproc.append(in_process(layout, seq))
    print(figures("deliver() in-process", inproc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
