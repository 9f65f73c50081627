"""pi's start: spawn to the answer of its first RPC command (prints figures; not a test).

The pi a job gets (`.tools`, through the Node runners/pi.py chooses for it), and optionally
another pi to set beside it (`--compare PI --compare-node NODE`, e.g. 0.73.1 on Node 20),
run in turn, offline, in an isolated agent dir with the mock provider's models.json:

    .venv/bin/python benchmarks/bench_pi_start.py [--runs 7] [--compare PI --compare-node NODE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from specialists.runners.pi import resolve_pi_command
from tests.support.agent_env import find_agent_bin

MODELS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pi-1.6.0" / "models.json"
ARGS = ["--mode", "rpc", "--no-session", "--no-extensions", "--no-skills"]
ARGS += [
    "--no-prompt-templates",
    "--no-context-files",
    "--provider",
    "mock",
    "--model",
    "mock-model",
]


def first_answer_s(argv: list[str], env: dict[str, str], cwd: str) -> float:
    started = time.monotonic()
    proc = subprocess.Popen(
        [*argv, *ARGS],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"id": "s", "type": "get_state"}).encode() + b"\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    took = time.monotonic() - started
    proc.stdin.close()
    proc.wait(30)
    if b'"command":"get_state"' not in line:
        raise SystemExit(f"{argv}: no answer to get_state ({line[:200]!r})")
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--compare", help="another pi launcher")
    parser.add_argument("--compare-node", default="node", help="the Node that runs it")
    args = parser.parse_args()
    pi = find_agent_bin("pi")
    if pi is None:
        print("no pi: run scripts/setup", file=sys.stderr)
        return 3
    home = tempfile.mkdtemp(prefix="bench-pi-start-")
    agent = Path(home) / "agent"
    agent.mkdir()
    dead = "http://127.0.0.1:9/v1"  # nothing is asked of the model
    (agent / "models.json").write_text(
        MODELS.read_text().replace("http://127.0.0.1:18080/v1", dead)
    )
    env = {"PATH": os.defpath, "HOME": home, "PI_CODING_AGENT_DIR": str(agent)}
    env.update({"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"})
    ours = resolve_pi_command({"pi_bin": str(pi)}, {"PATH": os.environ.get("PATH", os.defpath)})
    sides = {"pi in .tools (" + " ".join(Path(p).name for p in ours) + ")": ours}
    if args.compare:
        sides[f"--compare ({args.compare_node} {args.compare})"] = [args.compare_node, args.compare]
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(args.runs):  # in turn, so both see the same load
        for name, argv in sides.items():
            times[name].append(first_answer_s(argv, env, home))
    medians = {}
    for name, values in times.items():
        medians[name] = statistics.median(values)
        print(f"{name}: median {medians[name]:.2f} s, min {min(values):.2f}, max {max(values):.2f}")
    if len(medians) == 2:
        first, second = medians.values()
        print(f"ratio (ours / compared): {first / second:.2f}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
