"""The operations table's commands a person waits on: `stop`, `steer`, `follow-up` and
`interrupt` of an ended job, `children`, `timer list` and `asks`, each as the installed
command starts it, beside a bare interpreter (CPU, medians of runs taken in turn).

Not an issue's target: `status` has one (bench_status.py). To set two trees side by side,
run it once as is and once with SPECIALISTS_BENCH_SRC=<other checkout>/src.
"""

from __future__ import annotations

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
    print(f"# the operations table's commands, CPU — {machine()}")
    layout = isolated_project()
    fill(str(layout.project / ".specialists" / "jobs"), 20, active=0)
    env, cwd = layout.env, layout.project
    bare: list[float] = []
    runs: dict[str, list[float]] = {" ".join(c): [] for c in COMMANDS}
    for i in range(RUNS + 1):
        if i:  # the first round writes the caches: not counted
            bare.append(cpu_s([sys.executable, "-c", "pass"], env=env, cwd=cwd))
        for command in COMMANDS:
            took = cpu_s(entry_argv(*command), env=env, cwd=cwd)
            if i:
                runs[" ".join(command)].append(took)
    floor = median_ms(bare)
    print(f"bare interpreter: median {floor:.1f} ms of CPU ({RUNS} runs)")
    for name, samples in runs.items():
        ms = median_ms(samples)
        print(f"{name:28} median {ms:6.1f} ms of CPU   {ms / floor:4.1f}x bare")


if __name__ == "__main__":
    main()
