"""Where a command finds its project: the nearest directory above the start holding
`.specialists/` or `.git` (store/paths.py). Found as text: `status` never imports `pathlib`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specialists.project import Project
from specialists.store.paths import find_project_root


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SPECIALISTS_PROJECT_ROOT", raising=False)
    deep = tmp_path / "outer" / "inner" / "src" / "pkg"
    deep.mkdir(parents=True)
    return tmp_path


def test_the_nearest_marker_wins_and_a_git_file_counts(tree: Path) -> None:
    (tree / "outer" / ".git").mkdir()
    start = tree / "outer" / "inner" / "src" / "pkg"
    assert find_project_root(start) == str(tree / "outer")
    (tree / "outer" / "inner" / ".git").write_text("gitdir: /elsewhere\n")  # a worktree
    assert find_project_root(start) == str(tree / "outer" / "inner")
    (tree / "outer" / "inner" / "src" / ".specialists").mkdir()
    assert find_project_root(str(start)) == str(tree / "outer" / "inner" / "src")


def test_a_file_named_like_the_state_directory_or_a_dangling_git_link_is_no_marker(
    tree: Path,
) -> None:
    (tree / "outer" / ".git").mkdir()
    (tree / "outer" / "inner" / ".specialists").write_text("not a directory")
    (tree / "outer" / "inner" / ".git").symlink_to(tree / "nowhere")
    assert find_project_root(tree / "outer" / "inner") == str(tree / "outer")


def test_without_a_marker_the_start_itself_resolved(tree: Path) -> None:
    (tree / "link").symlink_to(tree / "outer" / "inner")
    assert find_project_root(tree / "link") == str(tree / "outer" / "inner")
    assert find_project_root("/") == "/"


def test_the_environment_names_the_root_and_the_cwd_is_the_default_start(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tree / "outer" / ".git").mkdir()
    monkeypatch.chdir(tree / "outer" / "inner")
    assert find_project_root() == str(tree / "outer")
    (tree / "named").symlink_to(tree / "outer" / "inner" / "src")
    monkeypatch.setenv("SPECIALISTS_PROJECT_ROOT", str(tree / "named"))
    assert find_project_root(tree) == str(tree / "outer" / "inner" / "src")


def test_a_project_keeps_its_root_as_text_and_makes_a_path_only_when_asked(tree: Path) -> None:
    project = Project(tree / "outer", lazy=True)
    assert project.root_dir == str(tree / "outer")
    assert project.store.root_str == os.path.join(str(tree / "outer"), ".specialists")
    assert project.store.jobs_str == os.path.join(project.store.root_str, "jobs")
    assert project.store.jobs_dir == tree / "outer" / ".specialists" / "jobs"
    assert project.root == tree / "outer"
    found = Project(start=tree / "outer" / "inner", lazy=True)
    (tree / "outer" / ".git").mkdir()
    assert found.root == tree / "outer"


def test_a_working_directory_removed_under_the_shell_is_one_clear_line(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from specialists.fronts.cli.main import main

    def gone() -> str:
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(os, "getcwd", gone)
    assert main(["status"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the working directory no longer exists (cd to")
    assert err.count("\n") == 1
