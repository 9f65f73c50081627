"""GitSandbox on real git repositories: create, commit, diff stat, remove (R-S1..R-S4, R-S7, R-S8).

Squash and prune have their own files (test_sandbox_squash.py, test_sandbox_prune.py).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from specialists.features.sandbox.backend import Removed, RemoveRefused, SandboxError
from specialists.features.sandbox.git import GitSandbox
from specialists.features.sandbox.rules import check_id
from tests.support.gitrepo import RecordingRunner, commit_files, git, sha, status

pytestmark = pytest.mark.integration


@pytest.fixture
def repo(isolated_env) -> Path:
    project = isolated_env.project
    commit_files(project, {"README.md": "hello\n", "src/app.py": "print(1)\n"}, "base")
    return project


@pytest.fixture
def gs(repo: Path) -> GitSandbox:
    return GitSandbox(repo)


# --- create (R-S1, R-S2) ---------------------------------------------------------------------


def test_create_adds_a_worktree_on_its_branch_from_head_and_records_it(gs, repo):
    """R-S1/R-S2: worktree at .specialists/sandboxes/<id> on sandbox-<id> at HEAD, a 0600
    record, a 0700 root, and the main working copy shows nothing untracked."""
    head = sha(repo)
    sb = gs.create("t1")
    assert sb.path == repo.resolve() / ".specialists" / "sandboxes" / "t1"
    assert sb.branch == "sandbox-t1" and sb.base == "HEAD" and sb.base_sha == head
    assert sb.origin == repo.resolve() and sb.parent is None
    assert sha(repo, "sandbox-t1") == head
    assert git(sb.path, "symbolic-ref", "HEAD").strip() == "refs/heads/sandbox-t1"
    assert (sb.path / "src" / "app.py").read_text() == "print(1)\n"
    record = gs.root / "t1.json"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert stat.S_IMODE(gs.root.stat().st_mode) == 0o700
    data = json.loads(record.read_text())
    assert data["base_sha"] == head and data["origin"] == str(repo.resolve())
    assert gs.get("t1") == sb
    gs.create("t2")
    assert status(repo) == ""  # the worktrees are excluded (R-S2)
    exclude = (repo / ".git" / "info" / "exclude").read_text()
    assert exclude.splitlines().count("/.specialists/sandboxes/") == 1


def test_a_nested_sandbox_starts_from_the_parent_branch_tip(gs, repo):
    """R-S1: base is the parent's sandbox branch; the child's origin is the parent's worktree."""
    parent = gs.create("p")
    tip = commit_files(parent.path, {"p.txt": "parent\n"})
    (parent.path / "uncommitted.txt").write_text("not in the child\n")
    child = gs.create("c", base=parent)
    assert child.base == "sandbox-p" and child.base_sha == tip and child.parent == "p"
    assert child.origin == parent.path
    assert (child.path / "p.txt").exists() and not (child.path / "uncommitted.txt").exists()


def test_outside_a_repository_creation_is_refused_before_anything_exists(tmp_path):
    """R-S1: no repository, a clear error, and no .specialists directory is made."""
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(SandboxError, match="not in a git repository"):
        GitSandbox(plain).create("t1")
    assert list(plain.iterdir()) == []


def test_a_repository_without_commits_is_refused(tmp_path):
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q")
    with pytest.raises(SandboxError, match="no commit to start"):
        GitSandbox(fresh).create("t1")
    assert git(fresh, "branch", "--list").strip() == ""


@pytest.mark.parametrize(
    "bad",
    ["../x", "a/b", "a.b", ".", "..", "a b", "", "-x", "_x", "x" * 65, "x\n", "é", "a\\b", 5, None],
)
def test_hostile_ids_are_refused_before_git_runs(repo, bad):
    """Ids with slashes, dots, spaces, odd characters or the wrong type never reach git."""
    runner = RecordingRunner()
    with pytest.raises(SandboxError, match="invalid sandbox id"):
        GitSandbox(repo, runner=runner).create(bad)
    assert runner.calls == []
    assert not (repo / ".specialists").exists()


def test_an_existing_destination_is_refused_and_left_untouched(gs, repo):
    """R-S7: a directory already at <root>/<id> is not ours: refused, kept, no branch made."""
    dest = gs.root / "t1"
    dest.mkdir(parents=True)
    (dest / "keep.txt").write_text("someone else's\n")
    with pytest.raises(SandboxError, match="already exists"):
        gs.create("t1")
    assert (dest / "keep.txt").read_text() == "someone else's\n"
    assert git(repo, "branch", "--list", "sandbox-t1") == ""
    assert not (gs.root / "t1.json").exists()


def test_an_existing_branch_is_refused_and_left_untouched(gs, repo):
    old = sha(repo)
    commit_files(repo, {"x.txt": "x\n"})
    git(repo, "branch", "sandbox-t1", old)
    with pytest.raises(SandboxError, match="branch sandbox-t1 already exists"):
        gs.create("t1")
    assert sha(repo, "sandbox-t1") == old
    assert not (gs.root / "t1").exists()


def test_a_destination_made_concurrently_is_not_deleted_when_worktree_add_fails(repo):
    """R-S7: another process creates the destination between our checks and `worktree add`;
    git fails, and nothing of the other process's is removed."""
    runner = RecordingRunner()
    gs = GitSandbox(repo, runner=runner)
    dest = gs.root / "t1"

    def other_process() -> None:
        dest.mkdir(parents=True)
        (dest / "theirs.txt").write_text("theirs\n")

    runner.on(lambda a: "worktree" in a and "add" in a, other_process)
    with pytest.raises(SandboxError, match="git worktree add failed") as err:
        gs.create("t1")
    assert "left untouched" in (err.value.hint or "")
    assert (dest / "theirs.txt").read_text() == "theirs\n"
    assert not (gs.root / "t1.json").exists()


def test_a_branch_made_concurrently_is_not_deleted_when_worktree_add_fails(repo):
    runner = RecordingRunner()
    gs = GitSandbox(repo, runner=runner)
    theirs = sha(repo)
    runner.on(lambda a: "worktree" in a, lambda: git(repo, "branch", "sandbox-t1", theirs))
    with pytest.raises(SandboxError, match="git worktree add failed"):
        gs.create("t1")
    assert sha(repo, "sandbox-t1") == theirs
    assert not os.path.lexists(gs.root / "t1")


def test_a_record_that_cannot_be_written_rolls_back_only_the_new_worktree(gs, repo, monkeypatch):
    """A full disk after `worktree add` succeeded: the worktree and branch this call made are
    removed (a failed launch leaves no sandbox, R-H7a); the main working copy is untouched."""

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(gs.meta, "write", full)
    with pytest.raises(SandboxError, match="No space left"):
        gs.create("t1")
    assert not (gs.root / "t1").exists()
    assert git(repo, "branch", "--list", "sandbox-t1") == ""
    assert "sandboxes/t1" not in git(repo, "worktree", "list")
    assert status(repo) == ""


def test_a_symlinked_sandboxes_directory_is_refused(repo, tmp_path):
    """A planted .specialists/sandboxes link would put worktrees wherever it points."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / ".specialists").mkdir()
    (repo / ".specialists" / "sandboxes").symlink_to(elsewhere)
    gs = GitSandbox(repo)
    with pytest.raises(SandboxError, match="is a symlink"):
        gs.create("t1")
    assert list(elsewhere.iterdir()) == []
    assert git(repo, "branch", "--list", "sandbox-t1") == ""
    listing = gs.list()
    assert listing.sandboxes == () and "symlink" in listing.problems[0].what


def test_a_symlinked_record_is_not_followed(gs, tmp_path):
    gs.create("t1")
    target = tmp_path / "secret.json"
    target.write_text("{}")
    (gs.root / "t2.json").symlink_to(target)
    listing = gs.list()
    assert [p.what for p in listing.problems] == ["is a symbolic link; not followed"]
    assert [row.id for row in listing.sandboxes] == ["t1"]


def test_a_damaged_record_is_a_problem_not_a_crash(gs):
    gs.create("t1")
    (gs.root / "t1.json").write_text('{"schema": 1, "id": "t1", "branch": "sandbox-t1"')
    listing = gs.list()
    assert "damaged" in listing.problems[0].what
    row = next(r for r in listing.sandboxes if r.branch == "sandbox-t1")
    assert row.sandbox is None and not row.merged  # no record of its base: never merged
    with pytest.raises(SandboxError, match="damaged"):
        gs.get("t1")


def test_hooks_and_repository_config_never_run_programs(gs, repo):
    """Hooks (in .git/hooks and in a configured core.hooksPath) never run for our commands."""
    marker = repo.parent / "hook-ran"
    hooks = repo / ".git" / "hooks"
    other = repo.parent / "other-hooks"
    other.mkdir()
    for folder in (hooks, other):
        for name in ("post-checkout", "pre-commit", "commit-msg", "reference-transaction"):
            hook = folder / name
            hook.write_text(f"#!/bin/sh\necho {name} >> {marker}\nexit 1\n")
            hook.chmod(0o755)
    git(repo, "config", "core.hooksPath", str(other))
    sb = gs.create("t1")
    (sb.path / "new.txt").write_text("new\n")
    assert gs.commit_all(sb).committed
    assert not marker.exists()


def test_git_variables_inherited_from_a_hook_do_not_redirect_git(repo, tmp_path, monkeypatch):
    """Run from inside someone's git hook, GIT_DIR/GIT_INDEX_FILE would point elsewhere."""
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    git(decoy, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(decoy / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(decoy / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(decoy))
    sb = GitSandbox(repo).create("t1")
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    monkeypatch.delenv("GIT_WORK_TREE")
    assert sha(repo, sb.branch) == sha(repo)
    assert git(decoy, "branch", "--list") == ""


def test_the_root_working_copy_is_never_moved(gs, repo):
    """R-S8: whatever happens to sandboxes, the root's branch, HEAD and files stay."""
    before = (git(repo, "symbolic-ref", "HEAD"), sha(repo), status(repo))
    cwd = os.getcwd()
    sb = gs.create("t1")
    commit_files(sb.path, {"README.md": "changed in the sandbox\n"})
    gs.commit_all(sb)
    gs.diff_stat(sb)
    gs.list()
    gs.remove(sb)
    assert (git(repo, "symbolic-ref", "HEAD"), sha(repo), status(repo)) == before
    assert (repo / "README.md").read_text() == "hello\n"
    assert os.getcwd() == cwd


# --- commit_all, diff_stat (R-S3, R-S4) --------------------------------------------------------


def test_commit_all_commits_everything_but_ignored_files_as_thread_id(gs, repo):
    commit_files(repo, {".gitignore": "*.log\n"})
    sb = gs.create("t1")
    (sb.path / "README.md").write_text("edited\n")
    (sb.path / "new" / "deep").mkdir(parents=True)
    (sb.path / "new" / "deep" / "file.txt").write_text("new\n")
    (sb.path / "debug.log").write_text("ignored\n")
    (sb.path / "src" / "app.py").unlink()
    out = gs.commit_all(sb)
    assert out.committed and out.sha == sha(repo, "sandbox-t1") and out.message == "thread t1"
    assert git(repo, "log", "-1", "--format=%s", "sandbox-t1").strip() == "thread t1"
    files = git(repo, "show", "--name-status", "--format=", "sandbox-t1").split("\n")
    assert set(filter(None, files)) == {"M\tREADME.md", "A\tnew/deep/file.txt", "D\tsrc/app.py"}
    assert (sb.path / "debug.log").exists()
    assert gs.commit_all(sb).committed is False  # nothing left
    assert gs.has_pending_work(sb.path) is False


def test_commit_all_refuses_a_worktree_switched_off_its_branch(gs):
    sb = gs.create("t1")
    git(sb.path, "checkout", "-q", "-b", "elsewhere")
    (sb.path / "x.txt").write_text("x\n")
    with pytest.raises(SandboxError, match="not on sandbox-t1"):
        gs.commit_all(sb)


def test_diff_stat_lists_the_branch_work_against_its_base_only(gs, repo):
    """R-S4: main moving after creation does not show up; renames and binaries are listed."""
    sb = gs.create("t1")
    commit_files(repo, {"main-only.txt": "moved on\n"})
    git(sb.path, "mv", "src/app.py", "src/main.py")
    (sb.path / "blob.bin").write_bytes(b"\0\1\2" * 100)
    commit_files(sb.path, {"README.md": "hello\nworld\nagain\n"})
    stat_ = gs.diff_stat(sb)
    rows = {f.path: (f.added, f.deleted) for f in stat_.files}
    assert rows == {"README.md": (2, 0), "blob.bin": (None, None), "src/main.py": (0, 0)}
    assert stat_.tip == sha(repo, "sandbox-t1") and stat_.branch == "sandbox-t1"
    assert "3 files changed" in stat_.text and "main-only" not in stat_.text
    assert stat_.summary() == "sandbox-t1: 3 files changed, +2 -0"


def test_diff_stat_of_a_fresh_sandbox_is_empty(gs):
    stat_ = gs.diff_stat(gs.create("t1"))
    assert stat_.files == () and stat_.text == "" and stat_.summary() == "sandbox-t1: no changes"


def test_detect_tells_the_main_working_copy_from_a_sandbox(gs, repo, tmp_path):
    sb = gs.create("t1")
    main, linked = gs.detect(repo / "src"), gs.detect(sb.path)
    assert main is not None and linked is not None
    assert main.toplevel == repo.resolve() and not main.linked
    assert linked.toplevel == sb.path and linked.linked
    assert main.common_dir == linked.common_dir
    assert gs.detect(tmp_path) is None
    assert gs.detect(tmp_path / "missing") is None


# --- remove (R-S7) -----------------------------------------------------------------------------


def test_remove_refuses_uncommitted_or_ignored_files_then_removes_keeping_the_branch(gs, repo):
    """R-S5/R-S7: removal never discards uncommitted or ignored files; the branch stays."""
    commit_files(repo, {".gitignore": "*.log\n"})
    sb = gs.create("t1")
    (sb.path / "work.txt").write_text("unsaved\n")
    out = gs.remove(sb)
    assert isinstance(out, RemoveRefused) and out.paths == ("work.txt",)
    gs.commit_all(sb)
    (sb.path / "trace.log").write_text("ignored but maybe precious\n")
    out = gs.remove(sb)
    assert isinstance(out, RemoveRefused) and "ignored" in out.message
    assert out.paths == ("trace.log",) and (sb.path / "trace.log").exists()
    (sb.path / "trace.log").unlink()
    assert gs.remove(sb) == Removed("t1", branch_deleted=False)
    assert not sb.path.exists()
    assert git(repo, "branch", "--list", "sandbox-t1").strip() == "sandbox-t1"
    record = gs.get("t1")
    assert record is not None and record.removed_at_ms is not None


def test_remove_without_keeping_the_branch_deletes_only_a_fresh_one(gs, repo):
    """A failed launch cleans up its fresh sandbox entirely; work is never deleted this way."""
    fresh = gs.create("t1")
    assert gs.remove(fresh, keep_branch=False) == Removed("t1", branch_deleted=True)
    assert git(repo, "branch", "--list", "sandbox-t1") == ""
    assert gs.get("t1") is None
    worked = gs.create("t2")
    commit_files(worked.path, {"w.txt": "work\n"})
    out = gs.remove(worked, keep_branch=False)
    assert isinstance(out, RemoveRefused) and "unmerged" in out.message
    assert worked.path.exists() and git(repo, "branch", "--list", "sandbox-t2").strip()


def test_remove_leaves_a_directory_that_is_not_the_sandbox_worktree(gs, repo):
    sb = gs.create("t1")
    git(repo, "worktree", "remove", str(sb.path))
    sb.path.mkdir()
    (sb.path / "stranger.txt").write_text("not a worktree\n")
    out = gs.remove(sb)
    assert isinstance(out, RemoveRefused) and "left intact" in out.message
    assert (sb.path / "stranger.txt").exists()


def test_remove_of_a_worktree_whose_directory_vanished_prunes_the_registration(gs, repo):
    import shutil

    sb = gs.create("t1")
    shutil.rmtree(sb.path)
    assert isinstance(gs.remove(sb), Removed)
    assert "sandboxes/t1" not in git(repo, "worktree", "list")


def test_check_id_accepts_thread_and_job_ids():
    for good in ("t-" + "0" * 32, "0123abcd", "A_b-9"):
        assert check_id(good) == good


def test_a_project_in_an_oddly_named_subdirectory_is_excluded_exactly(tmp_path):
    """R-S2 with gitignore syntax in the path: the escaped pattern hides only our root."""
    top = tmp_path / "repo"
    project = top / "#team [1] *x*"
    project.mkdir(parents=True)
    git(top, "init", "-q")
    commit_files(top, {"#team [1] *x*/code.txt": "c\n", "other.txt": "o\n"})
    sb = GitSandbox(project).create("t1")
    assert sb.path.is_dir()
    assert status(top) == ""
    (project / ".specialists" / "notes.txt").write_text("not under sandboxes/\n")
    assert status(top) == '?? "#team [1] *x*/.specialists/notes.txt"\n'


def test_a_missing_git_is_one_clear_error(repo, tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(SandboxError, match="git not found") as err:
        GitSandbox(repo).create("t1")
    assert "install git" in (err.value.hint or "")


def test_a_git_that_times_out_is_an_error_never_a_negative_answer(repo, tmp_path, monkeypatch):
    """A timed-out `rev-parse` must not read as "not a repository" or "no such branch".
    The git on PATH hangs (a real process that outlives any timeout), so the race between a
    fast git and a tiny timeout cannot decide the test."""
    slow = tmp_path / "slow-bin"
    slow.mkdir()
    (slow / "git").write_text("#!/bin/sh\nexec sleep 30\n")
    (slow / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{slow}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(SandboxError, match="timed out"):
        GitSandbox(repo, timeout_s=0.5).create("t1")
    assert not (repo / ".specialists").exists()


@pytest.fixture
def tiny_root(repo):
    """`.specialists/sandboxes` on a 256 KiB tmpfs (we are root here; skipped elsewhere)."""
    root = repo / ".specialists" / "sandboxes"
    root.mkdir(parents=True)
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield root
    finally:
        subprocess.run(["umount", "-l", str(root)], check=False)


def test_a_full_disk_during_worktree_add_leaves_what_git_left_and_says_so(repo, tiny_root):
    """git fails mid-checkout (ENOSPC); it removes its half worktree but keeps the branch it
    made. R-S7: a failed add establishes no ownership, so nothing is deleted by us, no record
    is written, and the error names what was left."""
    commit_files(repo, {"big.bin": "x" * 400_000})
    with pytest.raises(SandboxError, match="git worktree add failed") as err:
        GitSandbox(repo).create("t1")
    assert "branch sandbox-t1" in (err.value.hint or "")
    assert not (tiny_root / "t1.json").exists()
    assert status(repo) == ""


def test_a_full_disk_after_worktree_add_rolls_back_the_new_worktree(repo, tiny_root):
    """The worktree fits, then the disk fills before the record is written: the record write
    fails with ENOSPC and the worktree and branch this call made are removed again."""
    runner = RecordingRunner()
    gs = GitSandbox(repo, runner=runner)

    def fill() -> None:
        with contextlib.suppress(OSError), open(tiny_root / "filler", "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()

    runner.on(lambda a: "worktree" in a and "add" in a, fill, after=True)
    with pytest.raises(SandboxError, match="No space left"):
        gs.create("t1")
    assert not (tiny_root / "t1").exists()
    assert git(repo, "branch", "--list", "sandbox-t1") == ""
    assert not (tiny_root / "t1.json").exists()


def test_concurrent_creators_and_squashers_interleave_safely(repo):
    """Six writers at once (separate backends, so separate lock descriptors): every sandbox
    is created and squashed once, the exclusion line is written once, no record is torn."""
    from concurrent.futures import ThreadPoolExecutor

    parent = GitSandbox(repo).create("p")

    def child(n: int) -> str:
        gs = GitSandbox(repo)
        sb = gs.create(f"c{n}", base=parent)
        commit_files(sb.path, {f"c{n}.txt": f"{n}\n"})
        out = gs.squash_into(parent.path, sb, child="finished")
        assert out.kind == "squashed", out
        return sb.id

    with ThreadPoolExecutor(6) as pool:
        done = sorted(pool.map(child, range(6)))
    assert done == [f"c{n}" for n in range(6)]
    assert sorted(p.name for p in parent.path.glob("c*.txt")) == [f"c{n}.txt" for n in range(6)]
    exclude = (repo / ".git" / "info" / "exclude").read_text()
    assert exclude.count("/.specialists/sandboxes/") == 1
    listing = GitSandbox(repo).list()
    assert listing.problems == () and len(listing.sandboxes) == 7


def test_pending_work_counts_untracked_files_but_not_our_state(gs, repo):
    assert gs.has_pending_work(repo) is False
    (repo / ".specialists" / "jobs").mkdir(parents=True)
    (repo / ".specialists" / "jobs" / "x.json").write_text("{}")
    assert gs.has_pending_work(repo / "src") is False
    (repo / "src" / "new.py").write_text("new\n")
    assert gs.has_pending_work(repo) is True
    with pytest.raises(SandboxError, match="not in a git repository"):
        gs.has_pending_work(repo.parent)
