"""A short job's overhead over pi alone (target <= 50 ms) and the supervisor's RSS
(target <= 30 MB), both against the mock LLM with the real pi (1.6.0; the figures in
docs/performance.md were taken on 0.73.1).

pi alone: spawn `pi --mode rpc`, send the prompt, wait for agent_end, ask for the last
assistant text, close stdin, wait for exit — what the supervisor does, minus everything else.

The two sides run in pairs, in turn first (a warm-up pair first, not counted: it writes the
project's caches). pi alone's CPU swings by 100 ms from run to run on a shared machine, so
the figure given is the median of each pair's difference, beside the difference of medians.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import cpu_s, isolated_project, machine, median_ms, sp_argv
from tests.support.agent_env import find_agent_bin
from tests.support.mock_llm import MockLLM, Reply

RUNS = 15
SPEC = """\
metadata: {name: tester}
execution: {runner: pi, model: mock/mock-model, permission_required: LOW}
prompt: {system: "Be brief.", task_template: "$prompt"}
"""


def _children_cpu() -> float:
    """CPU seconds of every waited-for child so far (user + system)."""
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def pi_alone(pi: str, env: dict[str, str], cwd: str, session: str) -> float:
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [
            pi,
            "--mode",
            "rpc",
            "--no-extensions",
            "--no-prompt-templates",
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--append-system-prompt",
            "Be brief.",
            "--tools",
            "read,bash,edit,write,grep,find,ls",
            "--session",
            session,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"id":"p","type":"prompt","message":"hello"}\n')
    proc.stdin.flush()
    for line in proc.stdout:
        if line.startswith(b'{"type":"agent_end"'):
            break
    proc.stdin.write(b'{"id":"t","type":"get_last_assistant_text"}\n')
    proc.stdin.flush()
    for line in proc.stdout:
        if b'"id":"t"' in line:
            break
    proc.stdin.close()
    proc.wait()
    return time.perf_counter() - t0


def _ours(env: dict[str, str], cwd: str, own: list[float], kids: list[float]) -> float:
    """A foreground `specialists run` of the same prompt (pi and the session are its own).
    Appends to `own` the run's own CPU and to `kids` its children's (pi, Node): read from
    /proc while the exited run is not yet reaped."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        sp_argv("run", "tester", "--prompt", "hello"),
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None
    output = proc.stdout.read()
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # a zombie: its counts stay
    with open(f"/proc/{proc.pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    tick = os.sysconf("SC_CLK_TCK")
    own.append((int(fields[11]) + int(fields[12])) / tick)
    kids.append((int(fields[13]) + int(fields[14])) / tick)
    assert proc.wait() == 0, output
    return time.perf_counter() - t0


def supervisor_hwm_mb(env: dict[str, str], cwd: str, server: MockLLM) -> float:
    """Peak RSS of a background job's supervisor, read from /proc while the job runs."""
    server.enqueue(Reply("x" * 2000, chunk_size=20, chunk_delay=0.01))
    job_id = subprocess.run(
        sp_argv("run", "tester", "--prompt", "long", "--background"),
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
    ).stdout.strip()
    status_path = f"{cwd}/.specialists/jobs/{job_id}/status.json"
    peak = 0.0
    while True:
        st = json.loads(Path(status_path).read_text())
        pid = st.get("supervisor_pid")
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]) / 1024)
        except FileNotFoundError:
            pass
        if st["status"] in ("done", "error", "cancelled"):
            return peak
        time.sleep(0.05)


def main() -> None:
    print(f"# short job overhead over pi alone — {machine()}")
    pi = find_agent_bin("pi")
    if pi is None:
        raise SystemExit("pi is not installed: scripts/setup installs it under .tools/")
    layout = isolated_project()
    (layout.project / "specialists").mkdir()
    (layout.project / "specialists" / "tester.specialist.yaml").write_text(SPEC)
    with MockLLM(default=Reply("hi")) as server:
        env = dict(layout.env)
        env.update(layout.point_at(server.base_url))
        cwd = str(layout.project)
        alone, ours, alone_cpu, ours_cpu, own, kids, bare = [], [], [], [], [], [], []
        for i in range(RUNS + 1):
            # A bare interpreter beside each pair: the yardstick of how fast the machine is
            # at the time (the target is in milliseconds, and a slow day shows as a slow bare).
            bare.append(cpu_s([sys.executable, "-c", "pass"], env=env, cwd=layout.project))
            for first in (i % 2, 1 - i % 2):  # each side first in turn
                c0 = _children_cpu()
                session = f"{layout.root}/s{i}.jsonl"
                wall = pi_alone(str(pi), env, cwd, session) if first else _ours(env, cwd, own, kids)
                cpu = _children_cpu() - c0
                if i:  # the warm-up pair is not counted
                    (alone if first else ours).append(wall)
                    (alone_cpu if first else ours_cpu).append(cpu)
        print(
            f"pi alone: median {median_ms(alone):.0f} ms; specialists run (foreground): "
            f"median {median_ms(ours):.0f} ms; overhead {median_ms(ours) - median_ms(alone):.0f}"
            f" ms ({median_ms(ours) / median_ms(alone):.2f}x)"
        )
        paired = median_ms([o - a for o, a in zip(ours_cpu, alone_cpu, strict=True)])
        print(
            f"CPU ({RUNS} pairs): pi alone median {median_ms(alone_cpu):.0f} ms; specialists run "
            f"(foreground, pi included) {median_ms(ours_cpu):.0f} ms; over pi {paired:.0f} ms "
            f"(median of the pairs; of the medians "
            f"{median_ms(ours_cpu) - median_ms(alone_cpu):.0f} ms; issue 20's target: at most "
            "150 ms)"
        )
        print(
            f"of which the specialists process itself: median {median_ms(own[1:]):.0f} ms, "
            f"lowest {min(own[1:]) * 1000:.0f} ms; its pi (and Node): median "
            f"{median_ms(kids[1:]):.0f} ms (10 ms ticks, read from /proc; the warm-up's apart)"
        )
        print(
            f"a bare interpreter beside them: median {median_ms(bare[1:]):.1f} ms; the specialists"
            f" process is {median_ms(own[1:]) / median_ms(bare[1:]):.1f}x it"
        )
        hwm = supervisor_hwm_mb(env, cwd, server)
        print(f"background supervisor peak RSS (VmHWM): {hwm:.1f} MB")


if __name__ == "__main__":
    main()
