"""Gate memo lookup against running the gate, on repositories of 1,000 and 10,000 files.

A memo hit costs the workspace state key (git rev-parse, ls-tree, status, and hashing the
files that differ from HEAD) plus one small file read; a miss runs the command. The gate here
is a stand-in for a test suite (`sleep 2`, then a pass) so the figures show what a hit saves
against a short real suite; the key's own cost is printed apart, with a clean tree and with
50 changed and 50 untracked files. Prints medians.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from pathlib import Path

from benchmarks.common import isolated_project, machine
from specialists.features.gates.run import run_gate
from specialists.features.gates.spec import GateSpec
from specialists.features.gates.state import workspace_state
from specialists.process.short import run_short

ROUNDS = 7
GATE_S = 2


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def make_repo(root: Path, files: int) -> None:
    (root / ".gitignore").write_text(".specialists/\n")
    for i in range(files):
        folder = root / f"pkg{i % 100:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{i}.py").write_text(f"VALUE_{i} = {i}\n" * 20)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "files")


def dirty(root: Path, n: int) -> None:
    for i in range(n):
        (root / f"pkg{i % 100:02d}" / f"mod{i}.py").write_text(f"CHANGED_{i} = {i}\n")
        (root / f"pkg{i % 100:02d}" / f"new{i}.py").write_text(f"NEW_{i} = {i}\n")


def median_ms(fn, rounds: int = ROUNDS) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def _git_alone(root: Path) -> None:
    """The git calls of a clean state key, without our parsing and hashing."""
    for args in (
        ("rev-parse", "--show-toplevel", "HEAD^{tree}"),
        ("ls-tree", "-r", "-z", "--full-tree", "HEAD"),
        ("status", "--porcelain=v2", "-z", "--no-renames", "--untracked-files=all"),
    ):
        run_short(("git", *args), cwd=root)


def main() -> None:
    print(f"gate memo, {machine()}; the gate: sleep {GATE_S} (a short suite); medians")
    for files in (1_000, 10_000):
        print(measure(files))


def measure(files: int) -> str:
    layout = isolated_project()
    root = layout.project
    make_repo(root, files)
    spec = GateSpec(f"sleep {GATE_S}")
    key_clean = median_ms(lambda: workspace_state(root))
    git_only = median_ms(lambda: _git_alone(root))
    t0 = time.perf_counter()
    first = run_gate(spec, root, project=root)
    run_ms = (time.perf_counter() - t0) * 1000
    assert first.memo == "miss" and first.passed
    hit_ms = median_ms(lambda: run_gate(spec, root, project=root))
    assert run_gate(spec, root, project=root).memo == "hit"
    dirty(root, 50)
    key_dirty = median_ms(lambda: workspace_state(root))
    return (
        f"{files:>6} files: state key {key_clean:6.1f} ms clean (its three git calls alone "
        f"{git_only:6.1f} ms), {key_dirty:6.1f} ms with 100 changed paths; "
        f"memo hit {hit_ms:6.1f} ms; run (miss) {run_ms:7.1f} ms"
    )


if __name__ == "__main__":
    main()
