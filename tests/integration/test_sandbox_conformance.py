"""FakeSandbox keeps GitSandbox's promises: one scenario, both backends, same outcomes.

If this fails for the fake only, the fake has drifted and tests built on it (threads, the
tool fronts) would pass against behaviour the real backend does not have.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.features.sandbox.backend import (
    SandboxBackend,
    SandboxError,
    SquashConflict,
    Squashed,
    SquashRefused,
)
from specialists.features.sandbox.git import GitSandbox
from specialists.features.sandbox.testing import FakeSandbox
from tests.support.gitrepo import commit_files, git

pytestmark = pytest.mark.integration


class GitWorld:
    def __init__(self, repo: Path) -> None:
        self.backend: SandboxBackend = GitSandbox(repo)
        self.root = repo.resolve()

    def edit(self, path: Path, name: str) -> None:
        (path / name).write_text(f"{name}\n")

    def dirty(self, path: Path) -> None:
        (path / "README.md").write_text("an unsaved edit\n")

    def clean(self, path: Path) -> None:
        git(path, "checkout", "--", "README.md")

    def clash(self, first: Path, second: Path, second_id: str) -> None:
        commit_files(first, {"shared.txt": "first\n"})
        commit_files(second, {"shared.txt": "second\n"})


class FakeWorld:
    def __init__(self, repo: Path) -> None:
        self.fake = FakeSandbox(repo)
        self.backend: SandboxBackend = self.fake
        self.root = repo.resolve()

    def edit(self, path: Path, name: str) -> None:
        self.fake.edit(path, name)

    def dirty(self, path: Path) -> None:
        self.fake.edit(path, "README.md")

    def clean(self, path: Path) -> None:
        self.fake.pending.pop(path.resolve(), None)

    def clash(self, first: Path, second: Path, second_id: str) -> None:
        self.fake.edit(first, "shared.txt")
        self.fake.edit(second, "shared.txt")
        self.fake.conflicts[second_id] = ("shared.txt",)


@pytest.fixture(params=["git", "fake"])
def world(request, isolated_env) -> GitWorld | FakeWorld:
    repo = isolated_env.project
    commit_files(repo, {"README.md": "hello\n", "shared.txt": "base\n"}, "base")
    return GitWorld(repo) if request.param == "git" else FakeWorld(repo)


def reason(outcome: object) -> str:
    if isinstance(outcome, SquashRefused):
        return outcome.reason
    assert isinstance(outcome, Squashed | SquashConflict)
    return outcome.kind


def test_the_refusal_ladder_and_the_happy_path_agree(world):
    sb, root = world.backend, world.root
    with pytest.raises(SandboxError):
        sb.create("../escape")
    parent = sb.create("p")
    child = sb.create("c", base=parent)
    assert child.base == "sandbox-p" and child.parent == "p" and child.origin == parent.path
    world.edit(child.path, "a.txt")
    assert sb.has_pending_work(child.path)
    assert reason(sb.squash_into(parent.path, child, child="running")) == "child_running"
    assert reason(sb.squash_into(parent.path, child, child="finalizing")) == "child_finalizing"
    assert reason(sb.squash_into(root, child, child="finished")) == "wrong_target"
    assert reason(sb.squash_into(child.path, child, child="finished")) == "wrong_target"
    out = sb.squash_into(parent.path, child, child="finished", auto_commit=False)
    assert reason(out) == "dirty_sandbox" and "a.txt" in out.paths
    assert sb.commit_all(child).committed
    assert [f.path for f in sb.diff_stat(child).files] == ["a.txt"]
    world.dirty(parent.path)
    assert reason(sb.squash_into(parent.path, child, child="finished")) == "dirty_target"
    world.clean(parent.path)
    done = sb.squash_into(parent.path, child, child="finished")
    assert isinstance(done, Squashed) and (done.mode, done.files) == ("committed", ("a.txt",))
    assert done.worktree_removed and not child.path.exists()
    ask = sb.squash_into(root, parent, child="finished")
    assert reason(ask) == "needs_confirmation" and ask.paths == ("a.txt",)
    staged = sb.squash_into(root, parent, child="finished", confirmed=True)
    assert isinstance(staged, Squashed) and staged.mode == "staged"
    assert sb.has_pending_work(root)
    assert sb.prune_plan().blocked
    rows = {row.id: (row.merged, row.note) for row in sb.list().sandboxes}
    assert rows == {"p": (True, "squashed at this tip"), "c": (True, "squashed at this tip")}


def test_a_conflict_agrees(world):
    sb = world.backend
    parent = sb.create("p")
    c1, c2 = sb.create("c1", base=parent), sb.create("c2", base=parent)
    world.clash(c1.path, c2.path, "c2")
    assert reason(sb.squash_into(parent.path, c1, child="finished")) == "squashed"
    out = sb.squash_into(parent.path, c2, child="finished")
    assert isinstance(out, SquashConflict) and out.paths == ("shared.txt",)
    assert c2.path.is_dir()


def test_fresh_removal_and_unmerged_refusal_agree(world):
    sb = world.backend
    fresh = sb.create("t1")
    assert sb.remove(fresh, keep_branch=False).kind == "removed"
    worked = sb.create("t2")
    world.edit(worked.path, "w.txt")
    assert sb.remove(worked).kind == "refused"  # uncommitted work
    sb.commit_all(worked)
    assert sb.remove(worked, keep_branch=False).kind == "refused"  # unmerged commits
    assert sb.remove(worked).kind == "removed"
    assert [row.id for row in sb.list().sandboxes] == ["t2"]
