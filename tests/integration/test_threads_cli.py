"""`specialists threads`, `specialists sandboxes [prune | squash]` and `run --sandbox`, run
in-process as a user runs them (main(argv) -> exit code), over real jobs and real git."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specialists.fronts.cli import cmd_sandboxes
from specialists.fronts.cli.main import main
from tests.support.gitrepo import commit_files, git, sha, status
from tests.support.threads import (
    job_caller,
    job_dirs,
    root_caller,
    spawn,
    thread_project,
    wait_closed,
)

SCRIPTS = {"one": "printf 'one\\n' > one.txt", "waiter": "sleep 30"}


def _project() -> Path:
    project = thread_project(**SCRIPTS)
    commit_files(project, {".gitignore": ".specialists/\n"}, "the specialists, state ignored")
    return project


def test_threads_lists_each_child_with_its_phase_and_transport(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--json has the stack, phase and what the runner's transport supports; --tree puts a
    nested child under its parent."""
    project = _project()
    top = spawn(root_caller(project)).data
    wait_closed(project, top["thread_id"])
    nested = spawn(job_caller(project, top["job_id"]), stack=top["stack"]).data
    wait_closed(project, nested["thread_id"], owner=f"job-{top['job_id']}")
    assert main(["threads", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["threads"]
    assert [r["id"] for r in rows] == [top["thread_id"], nested["thread_id"]]
    assert rows[1]["stack"] == nested["stack"] and rows[0]["phase"] == "closed"
    assert rows[0]["transport"].startswith("none (its final output is its close)")
    assert main(["threads", "--tree"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(top["thread_id"]) and lines[1].startswith("  " + nested["thread_id"])
    assert "command: none (its final output is its close)" in lines[-1]


def test_sandboxes_squash_stages_into_the_root_after_yes_and_prune_deletes_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The person's squash: staged only (HEAD never moves, R-S8); once committed by the
    person, the branch is merged and prune deletes it."""
    project = _project()
    child = spawn(root_caller(project), specialist="one", sandbox=True).data
    wait_closed(project, child["thread_id"])
    assert main(["sandboxes"]) == 0
    assert "unmerged" in capsys.readouterr().out
    head = sha(project)
    assert main(["sandboxes", "squash", child["thread_id"], "--yes"]) == 0
    assert "staged, not committed" in capsys.readouterr().out
    assert sha(project) == head and status(project) == "A  one.txt\n"
    git(project, "commit", "-q", "-m", "take the child's work")
    assert main(["sandboxes", "prune", "--yes"]) == 0
    out = capsys.readouterr().out
    assert f"delete {child['branch']}" in out and "deleted 1 branch(es)" in out
    assert git(project, "branch", "--list", child["branch"]) == ""


def test_prune_keeps_a_branch_that_moved_while_the_person_was_asked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """R-S7: the branch moves between the listing and the deletion; it is kept."""
    project = _project()
    child = spawn(root_caller(project), specialist="one", sandbox=True).data
    wait_closed(project, child["thread_id"])
    assert main(["sandboxes", "squash", child["thread_id"], "--yes"]) == 0
    git(project, "commit", "-q", "-m", "take it")
    branch = child["branch"]

    def move_then_yes(question: str, yes: bool) -> bool:
        git(project, "branch", "-f", branch, f"{branch}~1")  # someone moves it meanwhile
        return True

    monkeypatch.setattr(cmd_sandboxes, "_confirmed", move_then_yes)
    assert main(["sandboxes", "prune"]) == 0
    out = capsys.readouterr().out
    assert "deleted 0 branch(es)" in out and branch in git(project, "branch", "--list", branch)


def test_prune_and_squash_without_a_terminal_need_yes(capsys: pytest.CaptureFixture[str]) -> None:
    """Headless, nothing is assumed: one clear error and nothing changes."""
    project = _project()
    child = spawn(root_caller(project), specialist="one", sandbox=True).data
    wait_closed(project, child["thread_id"])
    assert main(["sandboxes", "squash", child["thread_id"]]) == 2
    err = capsys.readouterr().err
    assert "no terminal to confirm on" in err and "--yes" in err
    assert status(project) == ""
    assert main(["sandboxes", "squash", "t-" + "0" * 32, "--yes"]) == 2
    assert "unknown thread" in capsys.readouterr().err


def test_run_with_sandbox_works_in_a_worktree_and_commits_at_the_end(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`run --sandbox`: the job's cwd is a new worktree; its work is committed when it ends;
    the root working copy is untouched."""
    project = _project()
    assert main(["run", "one", "--sandbox", "--cwd", str(project), "-p", "write"]) == 0
    capsys.readouterr()
    assert not (project / "one.txt").exists() and status(project) == ""
    assert main(["sandboxes", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["sandboxes"]
    assert git(project, "show", f"{row['branch']}:one.txt") == "one\n"


def test_run_with_sandbox_outside_a_repository_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project()
    outside = tmp_path / "plain"
    outside.mkdir()
    code = main(["run", "one", "--sandbox", "--cwd", str(outside), "-p", "x"])
    assert code == 2
    assert "needs a git repository" in capsys.readouterr().err
    assert job_dirs(project) == [] and not (project / ".specialists" / "sandboxes").exists()
