"""`specialists threads`, `specialists sandboxes [prune | squash]` and `run --sandbox`, run
in-process as a user runs them (main(argv) -> exit code), over real jobs and real git."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from specialists.fronts.cli import cmd_sandboxes
from specialists.fronts.cli.main import main
from tests.support.gitrepo import commit_files, git, sha, status
from tests.support.threads import (
    job_caller,
    job_dirs,
    root_caller,
    shell_spec,
    spawn,
    thread_project,
    wait_closed,
    wait_finished,
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
    wait_finished(project, child)
    assert main(["sandboxes", "squash", child["thread_id"], "--yes"]) == 0
    git(project, "commit", "-q", "-m", "take it")
    branch = child["branch"]

    def move_then_yes(question: str, yes: bool) -> bool:
        git(project, "branch", "-f", branch, f"{branch}~1")  # someone moves it meanwhile
        return True

    monkeypatch.setattr(cmd_sandboxes, "confirmed", move_then_yes)
    assert main(["sandboxes", "prune"]) == 0
    out = capsys.readouterr().out
    assert "deleted 0 branch(es)" in out and branch in git(project, "branch", "--list", branch)


def test_prune_and_squash_without_a_terminal_need_yes(capsys: pytest.CaptureFixture[str]) -> None:
    """Headless, nothing is assumed: one clear error and nothing changes."""
    project = _project()
    child = spawn(root_caller(project), specialist="one", sandbox=True).data
    wait_closed(project, child["thread_id"])
    wait_finished(project, child)
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


# --- commits where git knows nobody (CI, containers): issue 21 item 14 ----------------------


def _no_git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """git as in a fresh container: no user.name/user.email, and no guessing from the host."""
    config = Path(os.environ["GIT_CONFIG_GLOBAL"])
    config.write_text("[user]\n\tuseConfigOnly = true\n[commit]\n\tgpgsign = false\n")
    for key in (
        "EMAIL",
        *(f"GIT_{r}_{f}" for r in ("AUTHOR", "COMMITTER") for f in ("NAME", "EMAIL")),
    ):
        monkeypatch.delenv(key, raising=False)
    assert subprocess.run(["git", "var", "GIT_AUTHOR_IDENT"], capture_output=True).returncode


def test_run_with_sandbox_commits_as_specialists_where_git_has_no_identity(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The work is committed with the fallback identity, and the job's feed says so."""
    project = _project()
    _no_git_identity(monkeypatch)
    assert main(["run", "one", "--sandbox", "--cwd", str(project), "-p", "write"]) == 0
    capsys.readouterr()
    assert main(["sandboxes", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["sandboxes"]
    assert git(project, "show", f"{row['branch']}:one.txt") == "one\n"
    author = git(project, "log", "-1", "--format=%an <%ae>|%cn <%ce>", row["branch"]).strip()
    assert author == "specialists <specialists@localhost>|specialists <specialists@localhost>"
    (job_id,) = job_dirs(project)
    assert main(["feed", "--job", job_id]) == 0
    feed = capsys.readouterr().out
    assert "committed as specialists <specialists@localhost> (git has no user.name" in feed


def test_a_configured_identity_is_used_as_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    project = _project()
    assert main(["run", "one", "--sandbox", "--cwd", str(project), "-p", "write"]) == 0
    capsys.readouterr()
    assert main(["sandboxes", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["sandboxes"]
    assert git(project, "log", "-1", "--format=%an", row["branch"]).strip() == "Specialists Test"


def test_a_thread_where_git_has_no_identity_is_committed_and_its_close_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = _project()
    _no_git_identity(monkeypatch)
    child = spawn(root_caller(project), specialist="one", sandbox=True).data
    closed = wait_closed(project, child["thread_id"])
    assert "as specialists <specialists@localhost>" in closed.body
    assert git(project, "show", f"{child['branch']}:one.txt") == "one\n"


def test_a_sandbox_job_whose_commit_fails_ends_error_saying_where_the_work_is(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Any other failure to commit (here git's index lock is taken) is no `done`: the
    status names the failure and the worktree that holds the work."""
    project = _project()
    locker = "printf 'one\\n' > one.txt; touch \"$(git rev-parse --git-path index.lock)\""
    (project / "specialists" / "locker.specialist.yaml").write_text(shell_spec("locker", locker))
    code = main(["run", "locker", "--sandbox", "--cwd", str(project), "-p", "write"])
    out = capsys.readouterr()
    assert code == 1, out
    (job_id,) = job_dirs(project)
    assert main(["status", "--job", job_id, "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["status"] == "error"
    assert "its work was not committed" in st["error"] and "index.lock" in st["error"]
    assert "/.specialists/sandboxes/" in st["error"]  # where the work is
