"""Worktree handoffs on real git repositories (issue 11 item 6): the manifest journaled before
children run, patches and stats captured when they end, dirty work preserved, dependency
folders linked only where safe, a dirty root refused, an owner killed with SIGKILL leaving
every path recoverable, and discard only after confirmation."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from specialists.features.sandbox import handoff
from specialists.features.sandbox.handoff import SetupHook, begin_handoff, child_ended, parse_setup
from specialists.features.sandbox.handoff_manifest import HandoffError, manifest_path, read_manifest
from tests.integration.test_cli_pi import sp
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def repo() -> Path:
    """The test's project (SPECIALISTS_PROJECT_ROOT), with a file and an ignore list."""
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / ".gitignore").write_text(".specialists/\nnode_modules\n.venv/\n")
    (root / "app.py").write_text("print('v1')\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "app")
    return root


def test_children_get_worktrees_and_their_work_is_captured_as_a_patch(repo: Path):
    started = begin_handoff(repo, "wf-1", ["feature-a", "feature-b"], owner="abcd1234")
    assert [c.ready for c in started.children] == [True, True]
    manifest = read_manifest(started.manifest)
    assert manifest.base_sha == git(repo, "rev-parse", "HEAD").strip()
    assert [c.state for c in manifest.children] == ["ready", "ready"]
    a = started.children[0]
    assert a.path.is_dir() and git(a.path, "branch", "--show-current").strip() == a.branch
    (a.path / "app.py").write_text("print('v2')\n")
    git(a.path, "commit", "-qam", "committed part")
    (a.path / "new.py").write_text("x = 1\n")  # untracked, not ignored: part of the work
    (a.path / "node_modules").mkdir()  # ignored: not part of it
    (a.path / "node_modules" / "dep.js").write_text("ignored")
    ended = child_ended(repo, "wf-1", "feature-a", job_id="j0000001")
    assert ended.state == "captured" and ended.summary == "2 files changed, +2 -1"
    assert any("uncommitted work" in w for w in ended.warnings)
    assert ended.patch is not None and oct(ended.patch.stat().st_mode & 0o777) == "0o600"
    # The patch applies to the base: the review path holds the whole work.
    check = subprocess.run(
        ["git", "apply", "--check", str(ended.patch)], cwd=repo, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr
    assert "node_modules" not in ended.patch.read_text()
    assert child_ended(repo, "wf-1", "feature-a") == ended  # idempotent
    assert child_ended(repo, "wf-1", "feature-b").summary == "no changes"
    entry = read_manifest(started.manifest).child("feature-a")
    assert entry.job_id == "j0000001" and entry.stat is not None
    assert entry.stat["files"] == ["app.py", "new.py"]
    assert (a.path / "new.py").exists()  # nothing of the child's was touched
    # A later batch of the same workflow joins the manifest; a key is never reused.
    later = begin_handoff(repo, "wf-1", ["feature-c"])
    assert len(read_manifest(later.manifest).children) == 3
    with pytest.raises(HandoffError, match="already has child 'feature-c'"):
        begin_handoff(repo, "wf-1", ["feature-c"])


def test_a_dirty_root_is_one_clear_error_and_nothing_is_created(repo: Path):
    (repo / ".specialists" / "jobs").mkdir(parents=True, exist_ok=True)
    (repo / ".specialists" / "jobs" / "state").write_text("ours: never counts")
    (repo / "app.py").write_text("edited\n")
    with pytest.raises(HandoffError) as caught:
        begin_handoff(repo, "wf-2", ["a"])
    assert caught.value.one_line() == (
        f"worktree children need a clean working copy; {repo} has changes: app.py "
        "(commit or stash them first (.specialists/ does not count))"
    )
    assert not manifest_path(repo, "wf-2").exists()
    assert "sandbox-" not in git(repo, "branch")
    git(repo, "checkout", "app.py")
    (repo / "untracked.txt").write_text("also dirty")
    with pytest.raises(HandoffError, match=r"untracked\.txt"):
        begin_handoff(repo, "wf-2", ["a"])


def test_dependency_folders_are_linked_only_where_safe(repo: Path):
    (repo / "node_modules" / "left-pad").mkdir(parents=True)
    site = repo / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (repo / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / "__editable__.app.pth").write_text(f"{repo}\n")  # pip install -e . of the root
    started = begin_handoff(repo, "wf-3", ["a"])
    (child,) = started.children
    links = {r["name"]: r for r in read_manifest(started.manifest).child("a").links}
    assert links["node_modules"]["linked"] is True
    assert os.readlink(child.path / "node_modules") == str(repo / "node_modules")
    assert links[".venv"]["linked"] is False
    assert "installs the root's own code" in links[".venv"]["why"]
    assert git(child.path, "status", "--porcelain") == ""  # the link is ignored
    child_ended(repo, "wf-3", "a")
    assert not os.path.lexists(child.path / "node_modules")  # taken back before capture
    assert (repo / "node_modules" / "left-pad").is_dir()  # the root's folder untouched


def test_a_link_that_would_not_be_ignored_is_taken_back(repo: Path):
    (repo / ".gitignore").write_text(".specialists/\nnode_modules/\n")  # directories only
    git(repo, "commit", "-qam", "dir-only pattern")
    (repo / "node_modules").mkdir()
    started = begin_handoff(repo, "wf-4", ["a"])
    links = read_manifest(started.manifest).child("a").links
    (link,) = [r for r in links if r["name"] == "node_modules"]
    assert link["linked"] is False and "would not be ignored" in link["why"]
    assert not os.path.lexists(started.children[0].path / "node_modules")


def test_a_failed_setup_hook_marks_the_child_not_ready(repo: Path):
    started = begin_handoff(
        repo, "wf-5", ["a"], setup=SetupHook("echo installing; echo 'npm ERR! nope'; exit 7")
    )
    (child,) = started.children
    assert not child.ready and "npm ERR! nope" in (child.problem or "")
    entry = read_manifest(started.manifest).child("a")
    assert entry.state == "setup_failed" and entry.setup and entry.setup["exit_code"] == 7
    hung = begin_handoff(repo, "wf-6", ["a"], setup=SetupHook("sleep 300", timeout_s=1))
    assert "timed out after 1s" in (hung.children[0].problem or "")
    with pytest.raises(HandoffError, match="non-empty command"):
        parse_setup({"command": " "})


def test_work_that_cannot_be_captured_is_committed_to_its_branch(
    repo: Path, monkeypatch: pytest.MonkeyPatch
):
    """No patch (here: one past the cap): the uncommitted work is committed to the child's
    branch with a warning; nothing is deleted."""
    started = begin_handoff(repo, "wf-7", ["a"])
    (child,) = started.children
    (child.path / "big.txt").write_text("x" * 5000)
    monkeypatch.setattr(handoff, "MAX_PATCH_BYTES", 1000)
    ended = child_ended(repo, "wf-7", "a")
    assert ended.state == "preserved" and ended.patch is None
    (warning,) = [w for w in ended.warnings if "no patch captured" in w]
    assert "larger than" in warning and f"on {child.branch}" in warning
    assert git(repo, "show", f"{child.branch}:big.txt") == "x" * 5000
    assert (child.path / "big.txt").exists()


# The owner: begins a handoff whose second child's setup hook waits until released.
OWNER = """
import sys
from pathlib import Path
from specialists.features.sandbox.handoff import SetupHook, begin_handoff
repo, marker, waiting, release = map(Path, sys.argv[1:5])
hook = SetupHook(
    f"if [ -f {marker} ]; then touch {waiting}; while [ ! -f {release} ]; do sleep 0.05; done;"
    f" else touch {marker}; fi"
)
begin_handoff(repo, "wf-kill", ["first", "second"], setup=hook)
"""


def test_an_owner_killed_mid_handoff_leaves_every_path_recoverable(repo: Path, tmp_path: Path):
    """kill -9 of the process that owns the handoff, while it sets up its second child:
    `worktree show` lists both children's paths (one still `planned` in the journal, its
    worktree already made), `worktree capture` captures them, and `discard` is refused
    headless without --yes, then removes everything with it."""
    marker, waiting, release = (tmp_path / n for n in ("marker", "waiting", "release"))
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(repo), str(marker), str(waiting), str(release)],
        cwd=repo,
    )
    try:
        wait_until(waiting.exists, what="the second child's setup hook to hang")
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
    finally:
        release.touch()  # the orphaned hook ends too
    assert _states(manifest_path(repo, "wf-kill")) == ["ready", "planned"]
    shown = sp("worktree", "show", "wf-kill", "--json")
    assert shown.returncode == 0, shown.stderr
    view = json.loads(shown.stdout)
    paths = [Path(c["worktree"]) for c in view["children"]]
    assert all(p.is_dir() for p in paths)
    assert [c["now"]["worktree_exists"] for c in view["children"]] == [True, True]
    assert all(c["now"]["tip"] for c in view["children"])
    (paths[1] / "work.txt").write_text("written by the orphaned child\n")
    text = sp("worktree", "show", "wf-kill").stdout
    assert all(str(p) in text for p in paths) and "specialists sandboxes squash" in text
    captured = sp("worktree", "capture", "wf-kill")
    assert captured.returncode == 0, captured.stderr
    assert "second: captured: 1 file changed" in captured.stdout
    refused = sp("worktree", "discard", "wf-kill")  # stdin is not a terminal
    assert refused.returncode == 2
    assert "error: no terminal to confirm on (pass --yes to confirm)" in refused.stderr
    assert all(p.is_dir() for p in paths)
    done = sp("worktree", "discard", "wf-kill", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not any(p.exists() for p in paths) and "sandbox-hw-" not in git(repo, "branch")
    assert all(
        c.state == "discarded" for c in read_manifest(manifest_path(repo, "wf-kill")).children
    )


def _states(path: Path) -> list[str]:
    try:
        return [c.state for c in read_manifest(path).children]
    except HandoffError:
        return []  # being replaced right now


@pytest.mark.parametrize("damage", ["garbage", "truncated", "symlink", "fifo", "foreign path"])
def test_a_damaged_manifest_is_one_clear_line(repo: Path, tmp_path: Path, damage: str):
    started = begin_handoff(repo, "wf-9", ["a"])
    path = started.manifest
    good = path.read_text()
    path.unlink()
    if damage == "garbage":
        path.write_bytes(b"\x00\xff not json")
    elif damage == "truncated":
        path.write_text(good[: len(good) // 2])
    elif damage == "symlink":
        (tmp_path / "elsewhere.json").write_text(good)
        path.symlink_to(tmp_path / "elsewhere.json")
    elif damage == "fifo":
        os.mkfifo(path)
    else:  # a manifest naming a worktree outside our sandboxes: never touched
        data = json.loads(good)
        data["children"][0]["worktree"] = str(tmp_path)
        path.write_text(json.dumps(data))
    out = sp("worktree", "show", "wf-9")
    if damage == "foreign path":
        assert out.returncode == 0 and "not one of this project's sandboxes" in out.stdout
        gone = sp("worktree", "discard", "wf-9", "--yes")
        assert gone.returncode == 1 and "is not one of this project's sandboxes" in gone.stdout
        assert tmp_path.is_dir() and started.children[0].path.is_dir()
        return
    assert out.returncode == 2, out.stdout
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in out.stderr
    assert started.children[0].path.is_dir()  # the paths it named are untouched


def test_two_children_ending_at_once_are_both_recorded(repo: Path):
    """child_ended from two threads at the same moment: the manifest lock serializes the
    read-modify-writes, so neither capture is lost."""
    import threading

    started = begin_handoff(repo, "wf-10", ["a", "b"])
    for child in started.children:
        (child.path / f"{child.key}.txt").write_text(child.key)
    barrier = threading.Barrier(2)
    results: dict[str, str] = {}

    def end(key: str) -> None:
        barrier.wait()
        results[key] = child_ended(repo, "wf-10", key).state

    threads = [threading.Thread(target=end, args=(k,)) for k in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {"a": "captured", "b": "captured"}
    states = {c.key: c.state for c in read_manifest(started.manifest).children}
    assert states == {"a": "captured", "b": "captured"}


def test_discard_keeps_a_branch_that_moved_after_it_was_shown(repo: Path):
    from specialists.features.sandbox.handoff_discard import discard, inspect

    started = begin_handoff(repo, "wf-11", ["a"])
    (child,) = started.children
    view = inspect(repo, "wf-11")
    (child.path / "late.txt").write_text("after the review")
    git(child.path, "add", "-A")
    git(child.path, "commit", "-qm", "moved after show")
    outcome = discard(repo, view)
    assert not outcome.complete
    assert any("moved since it was shown" in k for k in outcome.kept)
    assert f"git branch -D {child.branch}" in outcome.manual
    assert git(repo, "rev-parse", child.branch).strip()  # still there
    assert read_manifest(started.manifest).child("a").state != "discarded"


def test_worktree_settings_come_from_config_and_are_checked():
    from specialists.features.sandbox.handoff import worktree_settings

    setup, link = worktree_settings(
        {"worktree": {"setup": "npm ci", "setup_timeout_s": 90, "link": ["node_modules"]}}
    )
    assert setup == SetupHook("npm ci", 90.0) and link == ("node_modules",)
    assert worktree_settings({}) == (None, ("node_modules", ".venv"))
    for bad, message in (
        ({"worktree": {"link": ["../x"]}}, "folder names"),
        ({"worktree": {"setpu": "x"}}, "unknown key 'setpu'"),
        ({"worktree": {"setup": ""}}, "non-empty command"),
    ):
        with pytest.raises(HandoffError, match=message):
            worktree_settings(bad)


def test_a_symlinked_handoffs_folder_is_refused_before_any_worktree(repo: Path, tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / ".specialists").mkdir(exist_ok=True)
    (repo / ".specialists" / "handoffs").symlink_to(elsewhere)
    with pytest.raises(HandoffError, match=r"not written.*symbolic link"):
        begin_handoff(repo, "wf-12", ["a"])
    assert not any(elsewhere.iterdir())
    assert "sandbox-" not in git(repo, "branch")


def test_a_child_whose_worktree_has_its_own_ignored_state_dir_is_captured(repo: Path):
    """A child that ran a job of its own has `.specialists/` in its worktree, ignored by the
    project's .gitignore: git 2.39 answers an exclude pathspec naming an ignored path with
    exit 1, which turned the capture into a failure. Captured; our state is not in it."""
    started = begin_handoff(repo, "wf-9", ["nested"], owner="abcd1234")
    child = started.children[0]
    (child.path / ".specialists" / "jobs").mkdir(parents=True)
    (child.path / ".specialists" / "jobs" / "state").write_text("a nested job's state")
    (child.path / "app.py").write_text("print('v2')\n")
    ended = child_ended(repo, "wf-9", "nested", job_id="j0000009")
    assert ended.state == "captured", ended.warnings
    assert ended.summary == "1 file changed, +1 -1"
    assert ended.patch is not None and ".specialists" not in ended.patch.read_text()


def test_the_discard_command_keeps_a_branch_that_moved_while_the_person_was_asked(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """`worktree discard` runs its op twice (what would go, then what the person confirmed):
    the second run deletes a branch only at the tip the first one showed."""
    from specialists.fronts.cli import cmd_worktree
    from specialists.fronts.cli.main import main

    started = begin_handoff(repo, "wf-12", ["a"])
    (child,) = started.children

    def move_then_yes(question: str, yes: bool) -> bool:
        (child.path / "late.txt").write_text("while asked")
        git(child.path, "add", "-A")
        git(child.path, "commit", "-qm", "moved while asked")
        return True

    monkeypatch.setattr(cmd_worktree, "confirmed", move_then_yes)
    monkeypatch.chdir(repo)
    assert main(["worktree", "discard", "wf-12"]) == 1
    out = capsys.readouterr().out
    assert f"discard a: {child.path}" in out and "moved since it was shown" in out
    assert git(repo, "rev-parse", child.branch).strip()  # still there
    assert read_manifest(started.manifest).child("a").state != "discarded"
