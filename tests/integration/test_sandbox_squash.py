"""squash_into on real git repositories: the happy paths and every refusal of R-S5..R-S7."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.features.sandbox.backend import Sandbox, SquashConflict, Squashed, SquashRefused
from specialists.features.sandbox.git import GitSandbox
from tests.support.gitrepo import RecordingRunner, commit_files, git, sha, status

pytestmark = pytest.mark.integration


@pytest.fixture
def repo(isolated_env) -> Path:
    project = isolated_env.project
    commit_files(project, {"README.md": "hello\n", "shared.txt": "one\ntwo\nthree\n"}, "base")
    return project.resolve()


@pytest.fixture
def gs(repo: Path) -> GitSandbox:
    return GitSandbox(repo)


def finished(gs: GitSandbox, target: Path, sb: Sandbox, **kw) -> object:
    return gs.squash_into(target, sb, child="finished", **kw)


def snapshot(path: Path) -> tuple[str, str, str]:
    """What must not change in a working copy: HEAD, the status and the index."""
    return sha(path), status(path), git(path, "diff", "--cached", "--name-only")


def test_two_children_from_one_base_squash_into_the_parent_sandbox(gs, repo):
    """Two children of one parent, squashed in turn: the parent gets both, one commit each
    (`thread <child>`), the children's worktrees go and their branches stay."""
    parent = gs.create("p")
    c1, c2 = gs.create("c1", base=parent), gs.create("c2", base=parent)
    (c1.path / "one.txt").write_text("from c1\n")
    (c2.path / "two.txt").write_text("from c2\n")
    gs.commit_all(c1)
    gs.commit_all(c2)
    before_root = snapshot(repo)
    first, second = finished(gs, parent.path, c1), finished(gs, parent.path, c2)
    assert isinstance(first, Squashed) and isinstance(second, Squashed)
    assert (first.mode, first.files, second.mode, second.files) == (
        "committed",
        ("one.txt",),
        "committed",
        ("two.txt",),
    )
    assert second.commit == sha(repo, "sandbox-p")
    log = git(repo, "log", "--format=%s", "sandbox-p").split("\n")
    assert log[:2] == ["thread c2", "thread c1"]
    assert (parent.path / "one.txt").read_text() == "from c1\n"
    assert (parent.path / "two.txt").read_text() == "from c2\n"
    assert status(parent.path) == ""
    assert not c1.path.exists() and not c2.path.exists()
    assert first.worktree_removed and second.worktree_removed
    assert git(repo, "branch", "--list", "sandbox-c1", "sandbox-c2").split() == [
        "sandbox-c1",
        "sandbox-c2",
    ]
    assert snapshot(repo) == before_root  # R-S8
    record = gs.get("c1")
    assert record is not None and record.squashes[-1].tip == first.tip
    assert record.squashes[-1].committed and record.squashes[-1].commit == first.commit
    assert "committed" in first.describe() and "branch sandbox-c1 kept" in first.describe()


def test_a_conflict_names_the_paths_and_leaves_target_and_branch_intact(gs, repo):
    """R-S6: nothing in the target is touched (no markers, no index entries), the child's
    branch and worktree stay, and the conflicting paths are named."""
    parent = gs.create("p")
    c1, c2 = gs.create("c1", base=parent), gs.create("c2", base=parent)
    commit_files(c1.path, {"shared.txt": "one\nTWO from c1\nthree\n", "a.txt": "a\n"})
    commit_files(c2.path, {"shared.txt": "one\nTWO from c2\nthree\n", "b.txt": "b\n"})
    assert isinstance(finished(gs, parent.path, c1), Squashed)
    before, tip = snapshot(parent.path), sha(repo, "sandbox-c2")
    out = finished(gs, parent.path, c2)
    assert isinstance(out, SquashConflict) and out.paths == ("shared.txt",)
    assert snapshot(parent.path) == before
    assert (parent.path / "shared.txt").read_text() == "one\nTWO from c1\nthree\n"
    assert not (parent.path / "b.txt").exists()
    assert sha(repo, "sandbox-c2") == tip and c2.path.is_dir()
    assert "shared.txt" in out.describe() and "unchanged" in out.describe()
    record = gs.get("c2")
    assert record is not None and record.squashes == ()


@pytest.mark.parametrize(
    ("child", "reason"), [("running", "child_running"), ("finalizing", "child_finalizing")]
)
def test_a_running_or_finalizing_child_is_refused(gs, repo, child, reason):
    """R-S5: only a child whose close completed can be squashed; nothing changes."""
    parent = gs.create("p")
    c = gs.create("c", base=parent)
    (c.path / "wip.txt").write_text("still writing\n")
    before = snapshot(parent.path)
    out = gs.squash_into(parent.path, c, child=child)
    assert isinstance(out, SquashRefused) and out.reason == reason
    assert snapshot(parent.path) == before
    assert (c.path / "wip.txt").exists() and sha(repo, "sandbox-c") == c.base_sha


def test_a_dirty_target_is_refused(gs):
    """R-S5: uncommitted tracked changes (staged or not) in the target refuse the squash."""
    parent = gs.create("p")
    c = gs.create("c", base=parent)
    commit_files(c.path, {"new.txt": "n\n"})
    (parent.path / "README.md").write_text("parent's unsaved edit\n")
    out = finished(gs, parent.path, c)
    assert isinstance(out, SquashRefused) and out.reason == "dirty_target"
    assert out.paths == ("README.md",)
    git(parent.path, "add", "README.md")
    out = finished(gs, parent.path, c)
    assert isinstance(out, SquashRefused) and out.reason == "dirty_target"
    assert (parent.path / "README.md").read_text() == "parent's unsaved edit\n"
    assert not (parent.path / "new.txt").exists()


def test_an_unrelated_untracked_file_does_not_block_but_one_in_the_way_does(gs):
    parent = gs.create("p")
    c1, c2 = gs.create("c1", base=parent), gs.create("c2", base=parent)
    commit_files(c1.path, {"made.txt": "c1\n"})
    commit_files(c2.path, {"notes/todo.txt": "c2\n"})
    (parent.path / "scratch.txt").write_text("parent's scratch\n")
    assert isinstance(finished(gs, parent.path, c1), Squashed)
    assert (parent.path / "scratch.txt").read_text() == "parent's scratch\n"
    assert "scratch.txt" not in git(parent.path, "show", "--name-only", "HEAD")
    (parent.path / "notes").write_text("a file where the squash needs a directory\n")
    out = finished(gs, parent.path, c2)
    assert isinstance(out, SquashRefused) and out.reason == "would_overwrite"
    assert out.paths == ("notes/todo.txt",)


def test_ignored_files_that_would_be_overwritten_are_refused(gs, repo):
    """R-S5: git's read-tree silently overwrites ignored files; we refuse first."""
    (repo / ".gitignore").write_text("secret.env\n")  # the user's own, untracked
    (repo / "secret.env").write_text("API_KEY=precious\n")
    sb = gs.create("t1")
    commit_files(sb.path, {"secret.env": "API_KEY=placeholder\n", "ok.txt": "ok\n"})
    before = snapshot(repo)
    out = finished(gs, repo, sb, confirmed=True)
    assert isinstance(out, SquashRefused) and out.reason == "would_overwrite"
    assert out.paths == ("secret.env",)
    assert (repo / "secret.env").read_text() == "API_KEY=precious\n"
    assert snapshot(repo) == before and not (repo / "ok.txt").exists()


def test_a_dirty_sandbox_with_auto_commit_off_is_refused_and_with_it_on_committed_first(gs):
    """R-S5: never delete a sandbox's uncommitted work; with auto-commit it is kept by a
    `thread <id>` commit before the squash."""
    parent = gs.create("p")
    c = gs.create("c", base=parent)
    (c.path / "late.txt").write_text("written after the last commit\n")
    out = finished(gs, parent.path, c, auto_commit=False)
    assert isinstance(out, SquashRefused) and out.reason == "dirty_sandbox"
    assert out.paths == ("late.txt",) and (c.path / "late.txt").exists()
    out = finished(gs, parent.path, c)
    assert isinstance(out, Squashed) and out.auto_commit is not None
    assert (parent.path / "late.txt").read_text() == "written after the last commit\n"


def test_a_root_squash_stages_only_and_needs_confirmation(gs, repo):
    """R-S5/R-S8: into the root working copy: refused until confirmed, then staged, never
    committed (commit=True is ignored), HEAD and branch unchanged."""
    sb = gs.create("t1")
    commit_files(sb.path, {"feature.py": "x = 1\n", "README.md": "hello, edited\n"})
    head, branch = sha(repo), git(repo, "symbolic-ref", "HEAD")
    out = finished(gs, repo, sb)
    assert isinstance(out, SquashRefused) and out.reason == "needs_confirmation"
    assert set(out.paths) == {"feature.py", "README.md"} and "confirm" in out.describe()
    assert status(repo) == "" and sb.path.is_dir()
    out = finished(gs, repo, sb, confirmed=True, commit=True)
    assert isinstance(out, Squashed) and out.mode == "staged" and out.commit is None
    assert git(repo, "diff", "--cached", "--name-only").split() == ["README.md", "feature.py"]
    assert git(repo, "diff", "--name-only") == ""  # the working tree matches the index
    assert (sha(repo), git(repo, "symbolic-ref", "HEAD")) == (head, branch)
    assert "not committed" in out.describe()
    record = gs.get("t1")
    assert record is not None and not record.squashes[-1].committed


def test_a_root_squash_into_another_working_copy_is_refused(gs, repo, tmp_path):
    """R-S5: a root squash must target the working copy the sandbox was created from."""
    sb = gs.create("t1")
    commit_files(sb.path, {"f.txt": "f\n"})
    other = tmp_path / "users-other-worktree"
    git(repo, "worktree", "add", "-q", "-b", "users-branch", str(other))
    for target in (other, tmp_path, sb.path):
        out = finished(gs, target, sb, confirmed=True)
        assert isinstance(out, SquashRefused) and out.reason == "wrong_target", target
    assert status(other) == "" and not (other / "f.txt").exists()


def test_commit_false_into_a_sandboxed_parent_stages(gs, repo):
    parent = gs.create("p")
    c = gs.create("c", base=parent)
    commit_files(c.path, {"c.txt": "c\n"})
    head = sha(parent.path)
    out = finished(gs, parent.path, c, commit=False)
    assert isinstance(out, Squashed) and out.mode == "staged"
    assert sha(parent.path) == head
    assert git(parent.path, "diff", "--cached", "--name-only").split() == ["c.txt"]


def test_a_worktree_holding_ignored_files_is_kept_after_the_squash(gs, repo):
    """R-S5: removal refuses to discard ignored files; the squash still succeeds and says so."""
    commit_files(repo, {".gitignore": "*.log\n"})
    parent = gs.create("p")
    c = gs.create("c", base=parent)
    commit_files(c.path, {"c.txt": "c\n"})
    (c.path / "run.log").write_text("ignored\n")
    out = finished(gs, parent.path, c)
    assert isinstance(out, Squashed) and out.mode == "committed"
    assert not out.worktree_removed and (c.path / "run.log").exists()
    assert "ignored" in out.warnings[0]


def test_a_target_head_that_moves_during_the_commit_leaves_the_result_staged(gs, repo):
    """The commit is a compare-and-swap on HEAD: a concurrent commit is never overwritten."""
    runner = RecordingRunner()
    racy = GitSandbox(repo, runner=runner)
    parent = racy.create("p")
    c = racy.create("c", base=parent)
    commit_files(c.path, {"c.txt": "c\n"})

    def concurrent_commit() -> None:  # another process commits without using our index
        made = git(parent.path, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "concurrent")
        git(parent.path, "update-ref", "HEAD", made.strip())

    runner.on(lambda a: "update-ref" in a and "HEAD" in a, concurrent_commit)
    out = racy.squash_into(parent.path, c, child="finished")
    assert isinstance(out, Squashed) and out.mode == "staged" and "moved" in out.warnings[0]
    assert git(parent.path, "log", "-1", "--format=%s").strip() == "concurrent"
    assert git(parent.path, "diff", "--cached", "--name-only").split() == ["c.txt"]


def test_a_sandbox_with_nothing_new_squashes_to_nothing(gs):
    parent = gs.create("p")
    c = gs.create("c", base=parent)
    before = snapshot(parent.path)
    out = finished(gs, parent.path, c)
    assert isinstance(out, Squashed) and out.mode == "nothing" and out.files == ()
    assert snapshot(parent.path) == before and out.worktree_removed


def test_a_gone_branch_is_refused(gs, repo):
    parent = gs.create("p")
    c = gs.create("c", base=parent)
    git(repo, "worktree", "remove", str(c.path))
    git(repo, "branch", "-D", "sandbox-c")
    out = finished(gs, parent.path, c)
    assert isinstance(out, SquashRefused) and out.reason == "no_branch"


def test_squash_into_an_unrecorded_directory_under_the_root_is_refused(gs, repo):
    sb = gs.create("t1")
    commit_files(sb.path, {"f.txt": "f\n"})
    stray = gs.root / "stray"
    git(repo, "worktree", "add", "-q", "-b", "stray-branch", str(stray))
    out = finished(gs, stray, sb)
    assert isinstance(out, SquashRefused) and out.reason == "wrong_target"


def test_a_child_that_committed_into_the_state_dir_is_refused_and_nothing_is_written(gs, repo):
    """`.specialists/` is our state (the project's local config, job and sandbox records): a
    child that forced it into its branch (`git add -f`) must not have a squash write it into
    the project; it was staged there, `.specialists/config.toml` and all."""
    sb = gs.create("c1")
    (sb.path / ".specialists").mkdir(exist_ok=True)
    (sb.path / ".specialists" / "config.toml").write_text('default_runner = "command"\n')
    (sb.path / "work.txt").write_text("work\n")
    git(sb.path, "add", "-f", ".specialists/config.toml", "work.txt")
    git(sb.path, "commit", "-q", "-m", "child")
    before = snapshot(repo)
    out = finished(gs, repo, sb, confirmed=True)
    assert isinstance(out, SquashRefused) and out.reason == "writes_state"
    assert out.paths == (".specialists/config.toml",)
    assert not (repo / ".specialists" / "config.toml").exists()
    assert not (repo / "work.txt").exists()
    assert snapshot(repo) == before and sb.path.is_dir()
