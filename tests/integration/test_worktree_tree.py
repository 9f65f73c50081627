"""sandbox/worktree_tree.py on real git 2.39: the tree a working copy would commit, our
`.specialists/` left out whether git ignores it or not (issue 21 item 13)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specialists.features.sandbox.worktree_tree import TreeFailed, worktree_tree
from tests.support.gitrepo import commit_files, git

pytestmark = pytest.mark.integration


def tree(repo: Path, tmp_path: Path) -> str:
    return worktree_tree(repo, tmp_path / "index", env=dict(os.environ), timeout_s=60)


def names(repo: Path, tree_id: str) -> list[str]:
    return git(repo, "ls-tree", "-r", "--name-only", tree_id).split()


@pytest.fixture
def repo(isolated_env) -> Path:
    project = isolated_env.project
    commit_files(project, {"a.txt": "a\n"}, "base")
    return project


@pytest.mark.parametrize("ignored", [True, False])
def test_our_state_is_left_out_whether_ignored_or_not(
    repo: Path, tmp_path: Path, ignored: bool
) -> None:
    if ignored:
        commit_files(repo, {".gitignore": ".specialists/\n"}, "ignore our state")
    (repo / ".specialists" / "jobs").mkdir(parents=True)
    (repo / ".specialists" / "jobs" / "x").write_text("state")
    (repo / "new.txt").write_text("new\n")
    found = names(repo, tree(repo, tmp_path))
    assert "new.txt" in found and not any(n.startswith(".specialists") for n in found)
    assert git(repo, "status", "--porcelain").count("new.txt") == 1  # the real index untouched
    assert "A " not in git(repo, "status", "--porcelain")


def test_a_tracked_file_under_an_ignored_state_dir_keeps_what_the_index_had(
    repo: Path, tmp_path: Path
) -> None:
    """A project that force-added its config: our own writes there never change the tree;
    a deleted one is not dropped either."""
    commit_files(repo, {".gitignore": ".specialists/\n"}, "ignore our state")
    (repo / ".specialists").mkdir()
    (repo / ".specialists" / "config.toml").write_text("[watchdog]\n")
    (repo / ".specialists" / "team.toml").write_text("x = 1\n")
    git(repo, "add", "-f", ".specialists/config.toml", ".specialists/team.toml")
    git(repo, "commit", "-qm", "config")
    before = tree(repo, tmp_path)
    (repo / ".specialists" / "config.toml").write_text("[watchdog]\nreviewer = 'x'\n")
    os.unlink(repo / ".specialists" / "team.toml")
    assert tree(repo, tmp_path) == before
    (repo / "a.txt").write_text("changed\n")
    after = tree(repo, tmp_path)
    assert after != before and ".specialists/team.toml" in names(repo, after)


def test_a_planted_link_at_the_scratch_index_is_not_written_through(
    repo: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (tmp_path / "index").symlink_to(victim)
    assert "a.txt" in names(repo, tree(repo, tmp_path))
    assert victim.read_text() == "keep me"


def test_outside_a_repository_is_one_clear_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(TreeFailed, match=r"git rev-parse in .* failed"):
        tree(plain, tmp_path)
