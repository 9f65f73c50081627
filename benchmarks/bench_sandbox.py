"""Sandboxes on a repository of 10,000 files: creation (git worktree add, the record, the
exclusion) and squash (a child that changed 20 files, into a parent sandbox with a commit,
and into the root working copy, staged). Prints medians. Checking out and deleting 10,000
files is most of the cost and depends on the disk, so the time git spends in `worktree add`
and `worktree remove` is measured apart and our own overhead printed beside it."""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from pathlib import Path

from benchmarks.common import isolated_project, machine
from specialists.features.sandbox.backend import Squashed
from specialists.features.sandbox.cmd import GitResult, run_command
from specialists.features.sandbox.git import GitSandbox

FILES = 10_000
ROUNDS = 7
CHANGED = 20


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def make_repo(project: Path) -> None:
    for i in range(FILES):
        folder = project / f"pkg{i % 100:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{i}.py").write_text(f"VALUE_{i} = {i}\n" * 5)
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "10k files")


class TimedRunner:
    """run_command that adds up the time spent in `git worktree add|remove`."""

    def __init__(self) -> None:
        self.checkout = 0.0

    def __call__(self, argv, **kw) -> GitResult:  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        result = run_command(argv, **kw)
        if "worktree" in argv and ("add" in argv or "remove" in argv):
            self.checkout += time.perf_counter() - t0
        return result

    def take(self) -> float:
        spent, self.checkout = self.checkout, 0.0
        return spent


def median_ms(samples: list[float]) -> str:
    return f"median {statistics.median(samples) * 1000:.0f} ms (min {min(samples) * 1000:.0f})"


def main() -> None:
    print(f"# sandboxes — {machine()}, {FILES:,} files, {ROUNDS} rounds")
    layout = isolated_project()
    os.environ.update(layout.env)
    project = layout.project
    make_repo(project)
    timer = TimedRunner()
    gs = GitSandbox(project, runner=timer)

    bare_add = []
    for n in range(ROUNDS):
        dest = project.parent / f"plain{n}"
        t0 = time.perf_counter()
        git(project, "worktree", "add", "-q", "-b", f"plain{n}", str(dest), "HEAD")
        bare_add.append(time.perf_counter() - t0)

    create, into_parent, into_root = [], [], []
    own = {"create": [], "parent": [], "root": []}  # minus git's worktree add/remove
    for n in range(ROUNDS):
        timer.take()
        t0 = time.perf_counter()
        parent = gs.create(f"p{n}")
        child = gs.create(f"c{n}", base=parent)
        create.append((time.perf_counter() - t0) / 2)
        own["create"].append(create[-1] - timer.take() / 2)
        for i in range(CHANGED):
            (child.path / f"pkg{i:02d}" / f"mod{i}.py").write_text(f"VALUE_{i} = 'changed'\n")
        gs.commit_all(child)
        timer.take()
        t0 = time.perf_counter()
        out = gs.squash_into(parent.path, child, child="finished")
        into_parent.append(time.perf_counter() - t0)
        own["parent"].append(into_parent[-1] - timer.take())
        assert isinstance(out, Squashed) and out.mode == "committed", out
        t0 = time.perf_counter()
        out = gs.squash_into(project, parent, child="finished", confirmed=True)
        into_root.append(time.perf_counter() - t0)
        own["root"].append(into_root[-1] - timer.take())
        assert isinstance(out, Squashed) and out.mode == "staged", out
        git(project, "reset", "-q", "--hard")  # undo the staged result for the next round

    print(f"git worktree add alone: {median_ms(bare_add)}")
    print(
        f"create a sandbox: {median_ms(create)}; "
        f"ours beyond worktree add: {median_ms(own['create'])}"
    )
    print(
        f"squash {CHANGED} files into a parent sandbox, committed: {median_ms(into_parent)}; "
        f"ours beyond worktree remove: {median_ms(own['parent'])}"
    )
    print(
        f"squash into the root working copy, staged: {median_ms(into_root)}; "
        f"ours beyond worktree remove: {median_ms(own['root'])}"
    )


if __name__ == "__main__":
    main()
