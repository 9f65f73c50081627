"""Sandboxed threads in real git repositories: children write, close, and are squashed.

The children are real jobs (`sh -c` on the command runner) working in their worktrees; the
parent's side is called as every front calls it. What each test proves is in its docstring.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from specialists.store.jobs import JobStore
from specialists.store.view import current_status
from tests.support.gitrepo import commit_files, git, sha, status
from tests.support.threads import (
    call,
    job_caller,
    root_caller,
    spawn,
    thread_project,
    wait_closed,
)
from tests.support.waiting import wait_until

SCRIPTS = {
    "waiter": "sleep 30",
    "one": "printf 'one\\n' > one.txt",
    "two": "printf 'two\\n' > two.txt",
    "same1": "printf 'from one\\n' > same.txt",
    "same2": "printf 'from two\\n' > same.txt",
}


def _project() -> Path:
    project = thread_project(**SCRIPTS)
    commit_files(project, {"base.txt": "base\n", ".gitignore": ".specialists/\n"}, "base")
    return project


def _stop(project: Path, job_id: str) -> None:
    store = JobStore(project / ".specialists", news=None)

    def pid() -> int | None:
        st = current_status(store, job_id)
        found = st.supervisor_pid
        return found if st.active and found and found != os.getpid() else None

    os.kill(wait_until(pid, what="the supervisor"), signal.SIGTERM)


def _sandboxed_parent(project: Path) -> tuple[dict[str, Any], Any]:
    """A running thread in its own sandbox, and a caller acting as it."""
    reply = spawn(root_caller(project), specialist="waiter", sandbox=True)
    assert not reply.is_error, reply.text
    data = reply.data
    return data, job_caller(project, data["job_id"], cwd=Path(data["sandbox"]))


def _child(parent: dict[str, Any], caller: Any, specialist: str) -> dict[str, Any]:
    reply = spawn(caller, stack=parent["stack"], specialist=specialist, sandbox=True)
    assert not reply.is_error, reply.text
    return reply.data


def test_two_children_from_one_base_are_squashed_into_the_sandboxed_parent() -> None:
    """R-S1, R-S3, R-S4, R-S5, R-S7: both children branch from the parent's sandbox, their
    work is committed on close (`thread <id>`), child_closed lists branch and diff stat, and
    each squash is one commit in the parent's sandbox; worktrees go, branches stay."""
    project = _project()
    parent, as_parent = _sandboxed_parent(project)
    owner = f"job-{parent['job_id']}"
    c1, c2 = _child(parent, as_parent, "one"), _child(parent, as_parent, "two")
    for child in (c1, c2):
        event = wait_closed(project, child["thread_id"], owner=owner)
        assert event.details["branch"] == child["branch"]
        assert "1 file changed" in event.body and "squash_sandbox" in event.body
        assert git(project, "log", "-1", "--format=%s", child["branch"]).strip() == (
            f"thread {child['thread_id']}"
        )
    target = Path(parent["sandbox"])
    for child in (c1, c2):
        reply = call("squash_sandbox", {"thread_id": child["thread_id"]}, as_parent)
        assert not reply.is_error, reply.text
        assert reply.data["mode"] == "committed"
        assert not Path(child["sandbox"]).exists()
        assert child["branch"] in git(project, "branch", "--list", child["branch"])
    assert (target / "one.txt").read_text() == "one\n"
    assert (target / "two.txt").read_text() == "two\n"
    log = git(target, "log", "--format=%s", "-2").split("\n")
    assert log[:2] == [f"thread {c2['thread_id']}", f"thread {c1['thread_id']}"]
    assert status(target) == ""
    assert not (project / "one.txt").exists()  # the root working copy is never touched
    _stop(project, parent["job_id"])


def test_a_conflicting_squash_names_the_paths_and_changes_nothing() -> None:
    """R-S6: the second child's squash conflicts; the parent's tree and HEAD are exactly as
    they were, the child's branch is kept, and the reply names the conflicting path."""
    project = _project()
    parent, as_parent = _sandboxed_parent(project)
    owner = f"job-{parent['job_id']}"
    c1, c2 = _child(parent, as_parent, "same1"), _child(parent, as_parent, "same2")
    wait_closed(project, c1["thread_id"], owner=owner)
    wait_closed(project, c2["thread_id"], owner=owner)
    target = Path(parent["sandbox"])
    assert not call("squash_sandbox", {"thread_id": c1["thread_id"]}, as_parent).is_error
    head = sha(target)
    reply = call("squash_sandbox", {"thread_id": c2["thread_id"]}, as_parent)
    assert reply.is_error and reply.data["outcome"] == "conflict"
    assert reply.data["paths"] == ["same.txt"] and "same.txt" in reply.text
    assert sha(target) == head and status(target) == ""
    assert (target / "same.txt").read_text() == "from one\n"
    assert c2["branch"] in git(project, "branch", "--list", c2["branch"])
    _stop(project, parent["job_id"])


def test_squash_refusals_running_child_dirty_target_no_sandbox_unknown() -> None:
    """R-S5: a running child, a target with uncommitted changes, a thread without a sandbox
    and an unknown id are each refused with one clear line; nothing changes."""
    project = _project()
    parent, as_parent = _sandboxed_parent(project)
    owner = f"job-{parent['job_id']}"
    running = _child(parent, as_parent, "waiter")
    reply = call("squash_sandbox", {"thread_id": running["thread_id"]}, as_parent)
    assert reply.is_error and reply.data["reason"] == "child_running"
    done = _child(parent, as_parent, "one")
    wait_closed(project, done["thread_id"], owner=owner)
    target = Path(parent["sandbox"])
    (target / "base.txt").write_text("edited by the parent\n")
    reply = call("squash_sandbox", {"thread_id": done["thread_id"]}, as_parent)
    assert reply.is_error and reply.data["reason"] == "dirty_target"
    assert Path(done["sandbox"]).exists()  # nothing was removed
    plain = spawn(as_parent, stack=parent["stack"])
    wait_closed(project, plain.data["thread_id"], owner=owner)
    reply = call("squash_sandbox", {"thread_id": plain.data["thread_id"]}, as_parent)
    assert reply.is_error and "has no sandbox" in reply.text
    reply = call("squash_sandbox", {"thread_id": "t-" + "0" * 32}, as_parent)
    assert reply.is_error and "unknown thread" in reply.text
    _stop(project, running["job_id"])
    _stop(project, parent["job_id"])


def test_into_the_root_working_copy_a_squash_needs_confirmation_and_only_stages() -> None:
    """R-S5, R-S8: the root's squash is refused until confirmed, then staged only: HEAD and
    the branch of the user's working copy never move."""
    project = _project()
    root = root_caller(project)
    child = spawn(root, specialist="one", sandbox=True).data
    wait_closed(project, child["thread_id"])
    head = sha(project)
    reply = call("squash_sandbox", {"thread_id": child["thread_id"]}, root)
    assert reply.is_error and reply.data["reason"] == "needs_confirmation"
    assert status(project) == "" and sha(project) == head
    reply = call("squash_sandbox", {"thread_id": child["thread_id"], "confirm": True}, root)
    assert not reply.is_error, reply.text
    assert reply.data["mode"] == "staged" and sha(project) == head
    assert git(project, "diff", "--cached", "--name-only").split() == ["one.txt"]


def test_an_untracked_file_in_the_way_is_never_overwritten() -> None:
    """R-S5: the root has an untracked one.txt where the squash would write: refused, the
    file is intact."""
    project = _project()
    root = root_caller(project)
    child = spawn(root, specialist="one", sandbox=True).data
    wait_closed(project, child["thread_id"])
    (project / "one.txt").write_text("mine\n")
    reply = call("squash_sandbox", {"thread_id": child["thread_id"], "confirm": True}, root)
    assert reply.is_error and reply.data["reason"] == "would_overwrite"
    assert (project / "one.txt").read_text() == "mine\n"


def test_a_job_at_the_root_cannot_confirm_for_the_user() -> None:
    """R-S5: without a person to ask (a job of ours that is not in a sandbox), a squash into
    the root working copy is refused even with confirm: true."""
    project = _project()
    root = root_caller(project)
    top = spawn(root, specialist="waiter").data  # a thread with no sandbox: works in the root
    as_top = job_caller(project, top["job_id"])
    child = spawn(as_top, stack=top["stack"], specialist="one", sandbox=True).data
    wait_closed(project, child["thread_id"], owner=f"job-{top['job_id']}")
    reply = call("squash_sandbox", {"thread_id": child["thread_id"], "confirm": True}, as_top)
    assert reply.is_error and "a job cannot confirm" in reply.text
    assert status(project) == ""
    _stop(project, top["job_id"])


def _definition(project: Path, name: str, script: str, extra: str) -> None:
    (project / "specialists" / f"{name}.specialist.yaml").write_text(
        f"metadata: {{name: {name}, description: t}}\n"
        f"execution: {{runner: {{type: command, command: sh, args: [-c, {script!r}]}}, {extra}}}\n"
        'prompt: {task_template: "$prompt"}\n'
    )


def test_requires_worktree_puts_a_child_in_a_sandbox_without_asking() -> None:
    """The definition field `requires_worktree: true` means what it says: the child runs in a
    sandbox (R-S1) even though spawn_thread did not ask for one, and is committed at its end."""
    project = _project()
    _definition(project, "isolated", "printf 'x\\n' > x.txt", "requires_worktree: true")
    reply = spawn(root_caller(project), specialist="isolated")
    assert not reply.is_error, reply.text
    record = JobStore(project / ".specialists", news=None).read_record(reply.data["job_id"])
    assert record.sandbox == reply.data["thread_id"] and record.requires_worktree
    event = wait_closed(project, reply.data["thread_id"])
    assert event.details["branch"] == f"sandbox-{reply.data['thread_id']}"
    assert git(project, "show", f"{event.details['branch']}:x.txt") == "x\n"
    assert not (project / "x.txt").exists()


def test_auto_commit_false_leaves_the_work_uncommitted_and_a_squash_refuses_it() -> None:
    """`auto_commit: false`: nothing is committed at the end (the stat says so), and a squash
    refuses the dirty sandbox rather than committing or deleting its changes (R-S3, R-S5)."""
    project = _project()
    _definition(project, "manual", "printf 'y\\n' > y.txt", "auto_commit: false")
    child = spawn(root_caller(project), specialist="manual", sandbox=True).data
    event = wait_closed(project, child["thread_id"])
    assert event.details["commit"] is None and "auto_commit is off" in event.body
    assert (Path(child["sandbox"]) / "y.txt").exists()
    reply = call(
        "squash_sandbox", {"thread_id": child["thread_id"], "confirm": True}, root_caller(project)
    )
    assert reply.is_error and reply.data["reason"] == "dirty_sandbox"
    assert (Path(child["sandbox"]) / "y.txt").read_text() == "y\n"


def test_a_child_works_in_the_same_directory_inside_its_sandbox() -> None:
    """Spawned from a subdirectory, the child's cwd is that subdirectory of its worktree; an
    untracked directory (not in the branch) falls back to the worktree's top."""
    project = _project()
    commit_files(project, {"pkg/mod.py": "x = 1\n"}, "a package")
    (project / "scratch").mkdir()
    store = JobStore(project / ".specialists", news=None)
    tracked = spawn(root_caller(project, cwd=project / "pkg"), sandbox=True).data
    assert store.read_record(tracked["job_id"]).cwd == str(Path(tracked["sandbox"]) / "pkg")
    untracked = spawn(root_caller(project, cwd=project / "scratch"), sandbox=True).data
    assert store.read_record(untracked["job_id"]).cwd == untracked["sandbox"]
    wait_closed(project, tracked["thread_id"])
    wait_closed(project, untracked["thread_id"])
