"""The operations table's commands a person waits on: `stop`, `steer`, `follow-up` and
`interrupt` of an ended job, `children`, `timer list` and `asks`, each as the installed
command starts it, beside a bare interpreter (CPU, medians of runs taken in turn).

Not an issue's target: `status` has one (bench_status.py). `--beside <other tree's src>`
runs each command from that tree too, in turn with this one's, and prints both and the
ratio (a changing load weighs on both alike).
"""

from __future__ import annotations

import argparse
import sys

from benchmarks.bench_status import fill
from benchmarks.common import cpu_s, entry_argv, isolated_project, machine, median_ms

RUNS = 15
ENDED = "00000003"  # fill() makes every job but the first `active` ones done
COMMANDS = [
    ["stop", ENDED],
    ["steer", ENDED, "go on"],
    ["follow-up", ENDED, "and then"],
    ["interrupt", ENDED],
    ["children"],
    ["timer", "list"],
    ["asks"],
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--beside", metavar="SRC", help="another tree's src/, run in turn")
    parser.add_argument("--runs", type=int, default=RUNS)
    options = parser.parse_args()
    print(f"# the operations table's commands, CPU — {machine()}")
    layout = isolated_project()
    fill(str(layout.project / ".specialists" / "jobs"), 20, active=0)
    sides = {"this tree": dict(layout.env)}
    if options.beside:
        sides = {"beside": dict(layout.env, PYTHONPATH=options.beside), **sides}
    cwd = layout.project
    bare: list[float] = []
    runs: dict[tuple[str, str], list[float]] = {}
    for i in range(options.runs + 1):
        if i:  # the first round writes the caches: not counted
            bare.append(cpu_s([sys.executable, "-c", "pass"], env=layout.env, cwd=cwd))
        for command in COMMANDS:
            for side, env in sides.items():
                took = cpu_s(entry_argv(*command), env=env, cwd=cwd)
                if i:
                    runs.setdefault((" ".join(command), side), []).append(took)
    floor = median_ms(bare)
    print(f"bare interpreter: median {floor:.1f} ms of CPU ({options.runs} runs)")
    for command in COMMANDS:
        name = " ".join(command)
        took = {side: median_ms(runs[name, side]) for side in sides}
        said = [f"{side} {ms:6.1f} ms ({ms / floor:.1f}x bare)" for side, ms in took.items()]
        if options.beside:
            said.append(f"ratio {took['this tree'] / took['beside']:.2f}")
        print(f"{name:28} " + "   ".join(said))


if __name__ == "__main__":
    main()
