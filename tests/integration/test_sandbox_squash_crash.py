"""`kill -9` of a squash at every step of its git sequence, then a retry (issue 21 item 8).

A wrapper in front of git (tests/support/git_pause.py) stops the squash's process just
before, or just after, one git call; the test kills it there with SIGKILL, then squashes
again. Whatever step it died at, the retry ends with the whole squash done exactly once:
the work staged (or committed into a sandboxed parent), the marker written, the worktree
gone, no journal left; and until then nothing outside the sandbox's own record says more
than what git itself shows.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from specialists.features.sandbox.backend import Squashed, SquashRefused
from specialists.features.sandbox.git import GitSandbox
from tests.support.git_pause import install, run_until_paused
from tests.support.gitrepo import commit_files, git, sha, status

pytestmark = pytest.mark.integration

DRIVER = """
import sys
from pathlib import Path
from specialists.features.sandbox.git import GitSandbox
project, target, sandbox_id, commit = sys.argv[1:5]
gs = GitSandbox(Path(project))
out = gs.squash_into(Path(target), gs.get(sandbox_id), child="finished",
                     commit=commit == "1", auto_commit=True, confirmed=True)
print(out.describe())
"""

# The git calls a squash into the root makes once it has decided to squash, in order: the
# sandbox's auto-commit (add, commit), the apply (read-tree), the worktree's removal.
ROOT_STEPS = [
    "before:add",
    "after:add",
    "before:commit",
    "after:commit",
    "before:read-tree",
    "after:read-tree",
    "before:worktree remove",
    "after:worktree remove",
]
# Into a sandboxed parent the squash also commits: commit-tree, then update-ref HEAD.
PARENT_STEPS = [
    "before:read-tree",
    "after:read-tree",
    "before:commit-tree",
    "after:commit-tree",
    "before:update-ref",
    "after:update-ref",
    "before:worktree remove",
    "after:worktree remove",
]


@pytest.fixture
def repo(isolated_env) -> Path:
    project = isolated_env.project
    commit_files(
        project,
        {"README.md": "hello\n", "shared.txt": "one\n", ".gitignore": ".specialists/\n"},
        "base",
    )
    return project.resolve()


def child_with_work(gs: GitSandbox, base=None):
    child = gs.create("c", base=base)
    commit_files(child.path, {"new.txt": "new\n", "README.md": "changed\n"})
    (child.path / "wip.txt").write_text("not committed yet\n")  # the auto-commit takes it
    return child


def killed_at(step: str, repo: Path, target: Path, commit: bool, tmp: Path) -> None:
    """Run the squash in its own process, SIGKILL it at `step`, and the paused git too."""
    env = {
        **os.environ,
        **install(tmp / "bin"),
        "GIT_PAUSE_AT": step,
        "GIT_PAUSE_DIR": str(tmp),
    }
    argv = [sys.executable, "-c", DRIVER, str(repo), str(target), "c", "1" if commit else "0"]
    proc, paused_git = run_until_paused(argv, cwd=repo, env=env, pause_dir=tmp)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    os.kill(paused_git, signal.SIGKILL)


def assert_finished(gs: GitSandbox, out: object, tip: str) -> None:
    assert isinstance(out, Squashed), out
    assert out.worktree_removed and set(out.files) == {"new.txt", "README.md", "wip.txt"}
    record = gs.get("c")
    assert record is not None and record.pending is None and record.removed_at_ms
    assert record.squashes[-1].tip == tip
    assert not record.path.exists()
    (row,) = [r for r in gs.list().sandboxes if r.id == "c"]
    assert row.merged and "interrupted" not in row.note


@pytest.mark.parametrize("step", ROOT_STEPS)
def test_a_root_squash_killed_at_any_git_step_is_finished_by_a_retry(
    repo: Path, tmp_path: Path, step: str
) -> None:
    gs = GitSandbox(repo)
    child_with_work(gs)
    head = sha(repo)
    killed_at(step, repo, repo, False, tmp_path)
    assert sha(repo) == head  # a root squash never commits (R-S8)
    out = gs.squash_into(repo, gs.get("c"), child="finished", commit=False, confirmed=True)
    tip = sha(repo, "sandbox-c")
    assert_finished(gs, out, tip)
    assert sha(repo) == head
    assert status(repo) == "M  README.md\nA  new.txt\nA  wip.txt\n"
    assert (repo / "wip.txt").read_text() == "not committed yet\n"
    assert git(repo, "show", f"{tip}:wip.txt") == "not committed yet\n"  # auto-committed once
    assert git(repo, "log", "--format=%s", f"{head}..{tip}").split("\n")[:2] == [
        "thread c",
        "edit",
    ]


@pytest.mark.parametrize("step", PARENT_STEPS)
def test_a_squash_into_a_parent_killed_at_any_git_step_commits_once_after_a_retry(
    repo: Path, tmp_path: Path, step: str
) -> None:
    gs = GitSandbox(repo)
    parent = gs.create("p")
    child_with_work(gs, base=parent)
    parent_head = sha(repo, "sandbox-p")
    killed_at(step, repo, parent.path, True, tmp_path)
    out = gs.squash_into(parent.path, gs.get("c"), child="finished", commit=True)
    assert_finished(gs, out, sha(repo, "sandbox-c"))
    assert isinstance(out, Squashed) and out.mode == "committed"
    # Exactly one commit on the parent, holding all of the child's work; nothing staged.
    assert git(repo, "log", "--format=%s", f"{parent_head}..sandbox-p") == "thread c\n"
    assert out.commit == sha(repo, "sandbox-p")
    assert status(parent.path) == ""
    assert (parent.path / "wip.txt").read_text() == "not committed yet\n"


def test_the_cli_retry_finishes_without_asking_again_and_the_listing_says_interrupted(
    repo: Path, tmp_path: Path
) -> None:
    """The person's command: killed after git wrote and staged everything; `sandboxes`
    says the squash was interrupted; `sandboxes squash` again finishes it (nothing new lands
    in the working copy, so no second confirmation), and says it did."""
    gs = GitSandbox(repo)
    child = gs.create("c")
    commit_files(child.path, {"new.txt": "new\n"})
    env = {**os.environ, **install(tmp_path / "bin"), "GIT_PAUSE_DIR": str(tmp_path)}
    env["GIT_PAUSE_AT"] = "after:read-tree"
    argv = [sys.executable, "-m", "specialists", "sandboxes", "squash", "c", "--yes"]
    proc, paused_git = run_until_paused(argv, cwd=repo, env=env, pause_dir=tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    os.kill(paused_git, signal.SIGKILL)
    assert status(repo) == "A  new.txt\n"  # what git wrote before the kill

    def sp(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "specialists", *args],
            cwd=repo, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    listing = json.loads(sp("sandboxes", "--json").stdout)["sandboxes"]
    assert "squash interrupted" in listing[0]["note"] and not listing[0]["merged"]
    retry = sp("sandboxes", "squash", "c")  # no --yes, no terminal: it need not ask
    assert retry.returncode == 0, retry.stderr
    assert "finished a squash of sandbox-c that was interrupted" in retry.stdout
    assert status(repo) == "A  new.txt\n" and not child.path.exists()
    listing = json.loads(sp("sandboxes", "--json").stdout)["sandboxes"]
    assert listing[0]["merged"] and "interrupted" not in listing[0]["note"]


def test_a_target_changed_after_the_interruption_is_refused_until_its_index_is_back(
    repo: Path, tmp_path: Path
) -> None:
    """The squash's leftovers are no longer what it wrote (the person staged more): nothing
    is guessed; once the index matches HEAD again, the squash starts afresh and refuses the
    files it left in the way rather than overwrite them."""
    gs = GitSandbox(repo)
    child = gs.create("c")
    commit_files(child.path, {"new.txt": "new\n"})
    killed_at("after:read-tree", repo, repo, False, tmp_path)
    (repo / "other.txt").write_text("the person's own work\n")
    git(repo, "add", "other.txt")
    out = gs.squash_into(repo, gs.get("c"), child="finished", commit=False, confirmed=True)
    assert isinstance(out, SquashRefused) and out.reason == "interrupted"
    assert "changed since" in out.describe() and child.path.is_dir()
    assert status(repo) == "A  new.txt\nA  other.txt\n"
    git(repo, "reset", "-q")
    out = gs.squash_into(repo, gs.get("c"), child="finished", commit=False, confirmed=True)
    assert isinstance(out, SquashRefused) and out.reason == "would_overwrite"
    os.unlink(repo / "new.txt")
    out = gs.squash_into(repo, gs.get("c"), child="finished", commit=False, confirmed=True)
    assert isinstance(out, Squashed) and out.files == ("new.txt",)
    record = gs.get("c")
    assert record is not None and record.pending is None
