"""The merge queue's throughput: N finished sibling sandboxes (default 20) on a repository of
1,000 files, merged by `merge_ops.start` (journal, overlap check, the queue's own sandbox,
each member squashed and committed, the overlapping ones rebased as each lands) beside the
same members squashed one after another straight into a parent sandbox with `squash_into`
(what a parent calling `squash_sandbox` N times does, without overlap check, order, rebase
or crash recovery). Two shapes: disjoint (each changes its own file) and overlapping (each
also changes its own line of one shared file, so every landing rebases all the members
still waiting: N(N-1)/2 rebases). Prints the totals, per member, and the ratio.

    .venv/bin/python -m benchmarks.bench_merge_queue [N]
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import isolated_project, machine
from specialists.features.sandbox import merge_ops
from specialists.features.sandbox.git import GitSandbox

FILES = 1_000


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def make_repo(project: Path, n: int) -> None:
    for i in range(FILES):
        folder = project / f"pkg{i % 20:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{i}.py").write_text(f"VALUE_{i} = {i}\n" * 5)
    (project / "shared.txt").write_text("".join(f"line {i}\n" for i in range(3 * n)))
    (project / ".gitignore").write_text(".specialists/\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "base")


def siblings(gs: GitSandbox, prefix: str, n: int, *, overlap: bool, base=None) -> list[str]:
    made = []
    for i in range(n):
        sandbox = gs.create(f"{prefix}{i}", base=base)
        (sandbox.path / f"pkg{i % 20:02d}" / f"new_{prefix}{i}.py").write_text(f"X = {i}\n")
        if overlap:
            shared = sandbox.path / "shared.txt"
            rows = shared.read_text().splitlines(keepends=True)
            rows[3 * i] = f"changed by {prefix}{i}\n"
            shared.write_text("".join(rows))
        gs.commit_all(sandbox)
        made.append(sandbox.id)
    return made


def one_shape(gs: GitSandbox, state_root: Path, n: int, *, overlap: bool) -> tuple[float, float]:
    tag = "o" if overlap else "d"
    parent = gs.create(f"parent{tag}")
    direct = siblings(gs, f"{tag}s", n, overlap=overlap, base=parent)
    t0 = time.perf_counter()
    for sandbox_id in direct:
        sb = gs.get(sandbox_id)
        assert sb is not None
        outcome = gs.squash_into(parent.path, sb, child="finished", commit=True)
        assert outcome.kind == "squashed", outcome.describe()
    squashes = time.perf_counter() - t0
    queued = siblings(gs, f"{tag}q", n, overlap=overlap)
    t0 = time.perf_counter()
    queue = merge_ops.start(state_root, queued)  # the default resolver (none is needed)
    queue_s = time.perf_counter() - t0
    assert [m.state for m in queue.members] == ["landed"] * n, queue.describe()
    return squashes, queue_s


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    print(f"# merge queue — {machine()}, {FILES:,} files, {n} siblings, load {os.getloadavg()}")
    layout = isolated_project()
    os.environ.update(layout.env)
    project = layout.project
    make_repo(project, n)
    gs = GitSandbox(project)
    print("| shape | N squash_into, one by one | merge queue | per member (queue) | ratio |")
    print("|---|---|---|---|---|")
    for overlap in (False, True):
        squashes, queue_s = one_shape(gs, project / ".specialists", n, overlap=overlap)
        shape = "overlapping (one shared file)" if overlap else "disjoint"
        print(
            f"| {shape} | {squashes:.2f} s | {queue_s:.2f} s | {queue_s / n * 1000:.0f} ms "
            f"| {queue_s / squashes:.2f}x |"
        )


if __name__ == "__main__":
    main()
