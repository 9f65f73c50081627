"""list() and prune on real git repositories: merged exactly as R-S7 says, deletion only with
proof, never a branch that moved after it was inspected, never while work is uncommitted."""

from __future__ import annotations

from pathlib import Path

import pytest

from specialists.features.sandbox.backend import Sandbox, Squashed
from specialists.features.sandbox.git import GitSandbox
from tests.support.gitrepo import RecordingRunner, commit_files, git, sha

pytestmark = pytest.mark.integration


@pytest.fixture
def repo(isolated_env) -> Path:
    project = isolated_env.project
    commit_files(project, {"README.md": "hello\n"}, "base")
    return project.resolve()


@pytest.fixture
def gs(repo: Path) -> GitSandbox:
    return GitSandbox(repo)


def squashed_to_root(gs: GitSandbox, repo: Path, sb_id: str, files: dict[str, str]) -> Sandbox:
    """A sandbox whose work was squashed into the root and committed by the user."""
    sb = gs.create(sb_id)
    commit_files(sb.path, files)
    out = gs.squash_into(repo, sb, child="finished", confirmed=True)
    assert isinstance(out, Squashed)
    git(repo, "commit", "-q", "-m", f"apply {sb_id}")
    return sb


def merged_of(gs: GitSandbox) -> dict[str, tuple[bool, str]]:
    return {row.branch: (row.merged, row.note) for row in gs.list().sandboxes}


def test_merged_is_exactly_r_s7(gs, repo):
    """Fresh: never merged. Squashed at its tip: merged. Moved after its squash: the marker is
    void. Moved past its base and an ancestor of HEAD: merged. No record: never merged."""
    gs.create("fresh")
    squashed_to_root(gs, repo, "squashed", {"s.txt": "s\n"})
    moved = squashed_to_root(gs, repo, "moved", {"m.txt": "m\n"})
    git(repo, "branch", "-f", "sandbox-moved", commit_files(repo, {"later.txt": "x\n"}))
    git(repo, "reset", "-q", "--hard", "HEAD~1")  # the branch moved; HEAD did not follow
    ff = gs.create("ff")
    tip = commit_files(ff.path, {"ff.txt": "ff\n"})
    git(repo, "merge", "-q", "--ff-only", tip)  # a real merge: the tip is in HEAD's history
    git(repo, "branch", "sandbox-norecord")
    assert merged_of(gs) == {
        "sandbox-fresh": (False, "fresh: no commits past its base"),
        "sandbox-squashed": (True, "squashed at this tip"),
        "sandbox-moved": (False, "moved after its squash"),
        "sandbox-ff": (True, "in HEAD's history"),
        "sandbox-norecord": (False, "no record of its base"),
    }
    assert moved.id == "moved"


def test_prune_deletes_merged_branches_only(gs, repo):
    """Squashed and committed: deleted (its work is provably in HEAD). Fresh, unmerged or
    checked out: kept, each with its reason. Records of deleted branches go too."""
    squashed_to_root(gs, repo, "done", {"d.txt": "d\n"})
    gs.create("fresh")
    unmerged = gs.create("unmerged")
    commit_files(unmerged.path, {"u.txt": "u\n"})
    gs.remove(unmerged)
    gs.create("busy")  # still has its worktree
    plan = gs.prune_plan()
    assert [(c.branch, c.proof) for c in plan.candidates] == [("sandbox-done", "squashed")]
    kept = {k.branch: k.reason for k in plan.kept}
    assert kept["sandbox-fresh"].startswith("checked out")
    assert kept["sandbox-unmerged"] == "unmerged"
    out = gs.prune_merged(plan)
    assert out.deleted == ("sandbox-done",)
    assert git(repo, "branch", "--list", "sandbox-done") == ""
    assert gs.get("done") is None
    assert git(repo, "branch", "--list", "sandbox-unmerged").strip() == "sandbox-unmerged"


def test_a_squash_marker_alone_does_not_prune_after_the_work_was_reverted(gs, repo):
    """R-S7: the squash happened, but HEAD no longer holds its work: not pruned."""
    squashed_to_root(gs, repo, "t1", {"t.txt": "t\n"})
    git(repo, "revert", "--no-edit", "HEAD")
    assert merged_of(gs)["sandbox-t1"][0] is True  # displayed merged: its tip was squashed
    plan = gs.prune_plan()
    assert plan.candidates == ()
    assert "not in HEAD" in plan.kept[0].reason


def test_prune_refuses_while_any_worktree_has_uncommitted_changes(gs, repo):
    """R-S7 and the seed's B-6: a root squash that is only staged blocks prune, as does
    uncommitted work in any sandbox."""
    sb = gs.create("t1")
    commit_files(sb.path, {"t.txt": "t\n"})
    gs.squash_into(repo, sb, child="finished", confirmed=True)  # staged, not committed
    plan = gs.prune_plan()
    assert plan.candidates == () and plan.blocked and str(repo) in plan.blocked[0]
    assert "refused" in plan.describe()
    git(repo, "commit", "-q", "-m", "apply")
    ready = gs.prune_plan()
    assert [c.branch for c in ready.candidates] == ["sandbox-t1"]
    busy = gs.create("busy")
    (busy.path / "wip.txt").write_text("uncommitted\n")
    out = gs.prune_merged(ready)  # the plan was fine, but the world changed since
    assert out.deleted == () and out.blocked and "busy" in out.blocked[0]
    assert git(repo, "branch", "--list", "sandbox-t1").strip() == "sandbox-t1"


def test_our_own_state_directory_does_not_block_prune(gs, repo):
    squashed_to_root(gs, repo, "t1", {"t.txt": "t\n"})
    (repo / ".specialists" / "jobs").mkdir(parents=True)
    (repo / ".specialists" / "jobs" / "status.json").write_text("{}")
    assert gs.prune_plan().blocked == ()


def test_a_branch_that_moved_after_inspection_is_kept(gs, repo):
    sb = squashed_to_root(gs, repo, "t1", {"t.txt": "t\n"})
    plan = gs.prune_plan()
    assert [c.branch for c in plan.candidates] == ["sandbox-t1"]
    git(repo, "branch", "-f", sb.branch, commit_files(repo, {"more.txt": "m\n"}))
    moved = sha(repo, sb.branch)
    out = gs.prune_merged(plan)
    assert out.deleted == () and out.kept[-1].reason == "moved after it was inspected"
    assert sha(repo, sb.branch) == moved


def test_a_branch_that_moves_in_the_instant_before_deletion_is_kept(repo):
    """The race: every check passed, then another process moves the branch just before our
    delete. `update-ref -d <ref> <old>` is git's compare-and-delete, so the branch survives."""
    runner = RecordingRunner()
    gs = GitSandbox(repo, runner=runner)
    sb = squashed_to_root(gs, repo, "t1", {"t.txt": "t\n"})
    plan = gs.prune_plan()
    elsewhere = commit_files(repo, {"x.txt": "x\n"})
    git(repo, "reset", "-q", "--hard", "HEAD~1")

    def move() -> None:
        git(repo, "update-ref", f"refs/heads/{sb.branch}", elsewhere)

    runner.on(lambda a: "update-ref" in a and "-d" in a, move)
    out = gs.prune_merged(plan)
    assert out.deleted == () and out.kept[-1].reason == "moved after it was inspected"
    assert sha(repo, sb.branch) == elsewhere
    assert gs.get("t1") is not None  # the record stays with the branch


def test_a_branch_merged_for_real_is_pruned_by_ancestry(gs, repo):
    sb = gs.create("t1")
    tip = commit_files(sb.path, {"t.txt": "t\n"})
    gs.remove(sb)
    git(repo, "merge", "-q", "--ff-only", tip)
    plan = gs.prune_plan()
    assert [(c.branch, c.proof) for c in plan.candidates] == [("sandbox-t1", "ancestor")]
    assert gs.prune_merged(plan).deleted == ("sandbox-t1",)
