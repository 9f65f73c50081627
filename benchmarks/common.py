"""Shared helpers for the benchmarks: an isolated project, timed child processes, figures.

Benchmarks print figures; they are never run as tests. Run them from the repository root:
    .venv/bin/python -m benchmarks.bench_status
To measure another checkout's code in the same harness (the other side of a change), point
the commands the benchmark starts at its source tree:
    SPECIALISTS_BENCH_SRC=/path/to/other/checkout/src .venv/bin/python -m benchmarks.bench_status
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from specialists.project import boot
from tests.support.agent_env import AgentEnv, build_agent_env

# A benchmark that builds the rooms by hand runs in one process of ours: it boots as one.
boot()

REPO = Path(__file__).resolve().parent.parent


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def isolated_project() -> AgentEnv:
    root = Path(tempfile.mkdtemp(prefix="sp-bench-"))
    layout = build_agent_env(root, git_init=True)
    layout.env["SPECIALISTS_PROJECT_ROOT"] = str(layout.project)
    # Measure what users get: bytecode cached (a dev shell may disable writing it).
    layout.env.pop("PYTHONDONTWRITEBYTECODE", None)
    other = os.environ.get("SPECIALISTS_BENCH_SRC")
    if other:  # the commands run that tree's code instead of this one's
        layout.env["PYTHONPATH"] = other
    return layout


def timed(
    argv: Sequence[str], *, env: dict[str, str], cwd: Path, stdin: str | None = None
) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """(wall seconds, peak RSS in MB of the child, completed process)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        text=True,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = proc.communicate(stdin)
    wall = time.perf_counter() - t0
    rss = _child_peak_rss_mb()
    return wall, rss, subprocess.CompletedProcess(argv, proc.returncode, out, err)


def cpu_s(argv: Sequence[str], *, env: dict[str, str], cwd: Path) -> float:
    """CPU seconds (user + system) one run of `argv` took: steadier than wall time on a
    machine other work shares, which is where these benchmarks often run."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _child_peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def sp_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "specialists", *args]


# What the installed `specialists` command runs (pip's and uv's console script): the entry
# point, with no `runpy` (which `-m` imports, with importlib.util and contextlib).
ENTRY = "import sys; from specialists.fronts.cli.main import entry; sys.exit(entry())"


def entry_argv(*args: str) -> list[str]:
    return [sys.executable, "-c", ENTRY, *args]


def median_ms(samples: Sequence[float]) -> float:
    return statistics.median(samples) * 1000


def p90_ms(samples: Sequence[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, int(len(ordered) * 0.9) - 1)] * 1000


def peak_rss_of(argv: Sequence[str], *, env: dict[str, str], cwd: Path) -> float:
    """Peak RSS (MB) of one fresh child, measured in a helper so children don't accumulate."""
    code = (
        "import os,resource,subprocess,sys;"
        "p=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip())
