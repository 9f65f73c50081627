"""The merge queue on real git (issue 23 item 4): overlapping and disjoint siblings, an
ordered merge with rebases, a real conflict resolved by the resolver (a native specialist on
replayed model turns, started through the one start path), kill -9 mid-queue and a retry,
and nothing in the user's working copy until a person lands it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specialists.features.sandbox import merge_ops as ops
from specialists.features.sandbox.git import GitSandbox
from specialists.features.sandbox.queue import Queues
from specialists.store.jobs import JobStore
from tests.integration.test_job_processes import write_spec
from tests.support.gitrepo import commit_files, git, sha
from tests.support.gitrepo import status as git_status

pytestmark = pytest.mark.integration

LINES = "".join(f"line {n}\n" for n in range(1, 21))


@pytest.fixture
def repo(isolated_env) -> Path:
    project = isolated_env.project.resolve()
    commit_files(project, {"README.md": "hello\n", "shared.txt": LINES}, "base")
    return project


@pytest.fixture
def gs(repo: Path) -> GitSandbox:
    return GitSandbox(repo)


def status(path: Path) -> str:
    """`git status` of a working copy, our own .specialists/ aside (not ignored here)."""
    return "".join(
        line + "\n"
        for line in git_status(path).splitlines()
        if not line[3:].startswith(".specialists/")
    )


def state(repo: Path) -> Path:
    return repo / ".specialists"


def child(gs: GitSandbox, name: str, files: dict[str, str], *, base=None) -> str:
    """A finished sibling: a sandbox with its work committed (as a child's close does)."""
    sandbox = gs.create(name, base=base)
    for path, text in files.items():
        (sandbox.path / path).parent.mkdir(parents=True, exist_ok=True)
        (sandbox.path / path).write_text(text)
    gs.commit_all(sandbox)
    return name


def edit(text: str, line: int, new: str) -> str:
    rows = text.splitlines(keepends=True)
    rows[line - 1] = new + "\n"
    return "".join(rows)


def sp(repo: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 180):
    return subprocess.run(
        [sys.executable, "-m", "specialists", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def test_check_reports_each_siblings_files_and_the_overlaps(gs, repo):
    child(gs, "a", {"a.txt": "a\n", "shared.txt": edit(LINES, 2, "A")})
    child(gs, "b", {"b.txt": "b\n"})
    child(gs, "c", {"shared.txt": edit(LINES, 18, "C"), "c.txt": "c\n"})
    found = ops.check(state(repo), ["a", "b", "c"], None)
    assert {m["sandbox"]: m["files"] for m in found["members"]} == {
        "a": ["a.txt", "shared.txt"],
        "b": ["b.txt"],
        "c": ["c.txt", "shared.txt"],
    }
    assert found["overlaps"] == [{"a": "a", "b": "c", "paths": ["shared.txt"]}]
    assert found["order"][0] == "b"  # disjoint first
    out = sp(repo, "merge", "check", "a", "b", "c")
    assert out.returncode == 0, out.stderr
    assert "overlap a & c: shared.txt" in out.stdout
    assert status(repo) == ""


def test_disjoint_siblings_land_in_order_and_reach_the_users_tree_only_when_landed(gs, repo):
    for name in ("x", "y", "z"):
        child(gs, name, {f"{name}.txt": f"{name}\n"})
    head = sha(repo)
    out = sp(repo, "merge", "start", "z", "x", "y")
    assert out.returncode == 0, out.stderr
    queue_id = out.stdout.strip()
    queue = Queues(state(repo)).load(queue_id)
    assert queue.state == "merged" and [m.sandbox for m in queue.members] == ["z", "x", "y"]
    assert [m.state for m in queue.members] == ["landed"] * 3
    log = git(repo, "log", "--format=%s", f"sandbox-{queue_id}").splitlines()
    assert log[:3] == ["thread y", "thread x", "thread z"]  # the order given
    assert (sha(repo), status(repo)) == (head, "")  # nothing in the user's tree yet (R-S5)
    refused = sp(repo, "merge", "land", queue_id)  # no terminal, no --yes
    assert refused.returncode == 2 and "--yes" in refused.stderr
    landed = sp(repo, "merge", "land", queue_id, "--yes")
    assert landed.returncode == 0, landed.stderr
    assert sha(repo) == head  # staged, never committed (R-S8)
    assert sorted(git(repo, "diff", "--cached", "--name-only").split()) == [
        "x.txt",
        "y.txt",
        "z.txt",
    ]
    assert Queues(state(repo)).load(queue_id).state == "landed"
    listed = json.loads(sp(repo, "sandboxes", "--json").stdout)["sandboxes"]
    assert {s["id"] for s in listed if s["merged"]} >= {"x", "y", "z"}


def test_overlapping_siblings_are_rebased_as_each_lands(gs, repo):
    """Same file, different lines: no conflict. After the first lands, the second's branch
    is one commit on the queue's tip (its worktree brought along), then it lands too."""
    child(gs, "top", {"shared.txt": edit(LINES, 1, "TOP")})
    child(gs, "bottom", {"shared.txt": edit(LINES, 20, "BOTTOM")})
    before = sha(repo, "sandbox-bottom")
    queue = ops.start(state(repo), ["top", "bottom"], owner="cli-tester")
    assert queue.state == "merged", queue.describe()
    history = Queues(state(repo)).history(queue.id)
    assert [e["event"] for e in history] == ["created", "landed", "rebased", "landed"]
    rebased = history[2]["commit"]
    assert git(repo, "rev-parse", f"{rebased}^1").strip() == queue.members[0].landed
    assert sha(repo, "sandbox-bottom") == rebased != before
    assert before[:7] in git(repo, "reflog", "sandbox-bottom")  # the old tip is kept
    merged = git(repo, "show", f"sandbox-{queue.id}:shared.txt")
    assert merged.startswith("TOP\n") and merged.endswith("BOTTOM\n")


def test_each_overlapping_member_is_rebased_once_onto_the_tip_of_its_turn(gs, repo):
    """Three members on one file: each waiting one is checked (object store only) as each
    lands, and rebased once, just before its own squash, onto everything landed before it;
    not after every landing (N rebases, not N(N-1)/2)."""
    for n, name in ((1, "a"), (10, "b"), (20, "c")):
        child(gs, name, {"shared.txt": edit(LINES, n, name.upper())})
    queue = ops.start(state(repo), ["a", "b", "c"])
    assert [m.state for m in queue.members] == ["landed"] * 3, queue.describe()
    events = [(e["event"], e.get("member")) for e in Queues(state(repo)).history(queue.id)]
    assert events == [
        ("created", None),
        ("landed", "a"),
        ("rebased", "b"),
        ("landed", "b"),
        ("rebased", "c"),
        ("landed", "c"),
    ]
    c_parent = git(repo, "rev-parse", "sandbox-c^1").strip()
    assert c_parent == queue.member("b").landed  # onto a and b both
    merged = git(repo, "show", f"sandbox-{queue.id}:shared.txt").splitlines()
    assert (merged[0], merged[9], merged[19]) == ("A", "B", "C")


CONFLICTED = edit(LINES, 10, "FROM ONE")


def conflict_pair(gs: GitSandbox) -> None:
    child(gs, "one", {"shared.txt": CONFLICTED})
    child(gs, "two", {"shared.txt": edit(LINES, 10, "FROM TWO"), "two.txt": "2\n"})


def test_without_a_resolver_a_conflict_stays_and_the_rest_lands(gs, repo):
    conflict_pair(gs)
    child(gs, "three", {"three.txt": "3\n"})
    out = sp(repo, "merge", "start", "one", "two", "three", "--no-resolver")
    assert out.returncode == 1, out.stderr  # not everything landed
    queue = Queues(state(repo)).load(out.stdout.strip())
    assert {m.sandbox: m.state for m in queue.members} == {
        "one": "landed",
        "two": "conflict",
        "three": "landed",
    }
    assert queue.member("two").conflict == ["shared.txt"]
    assert "two (two): conflict: conflicts (no resolver)" in out.stderr
    assert queue.state == "merged"


RESOLVED = edit(LINES, 10, "FROM ONE AND TWO")


def resolver_spec(repo: Path) -> None:
    """The project's own `resolver` (it wins over the builtin): native, on replayed turns
    that rewrite the conflicted file whole, as a model would."""
    turns = [
        {"tool_calls": [{"name": "read", "arguments": {"path": "shared.txt"}}]},
        {
            "tool_calls": [
                {"name": "write", "arguments": {"path": "shared.txt", "content": RESOLVED}}
            ]
        },
        {"text": "**Resolved**: shared.txt line 10 keeps both."},
    ]
    path = repo / "resolver.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    write_spec("resolver", f"{{runner: native, model: replay/{path}, permission_required: MEDIUM}}")


def test_a_real_conflict_is_resolved_by_the_resolver_and_lands(gs, repo):
    resolver_spec(repo)
    conflict_pair(gs)
    out = sp(repo, "merge", "start", "one", "two", "--wait", "--timeout", "3m")
    assert out.returncode == 0, out.stderr
    queue = Queues(state(repo)).load(out.stdout.strip())
    assert [m.state for m in queue.members] == ["landed", "landed"], queue.describe()
    two = queue.member("two")
    assert two.rounds == 1 and two.resolver is not None
    job = JobStore(state(repo), news=None).read_record(two.resolver["job"])
    assert job.specialist == "resolver" and job.sandbox == two.resolver["sandbox"]
    assert job.runner == "native" and two.resolver["final"] == "done"
    content = git(repo, "show", f"sandbox-{queue.id}:shared.txt")
    assert content == RESOLVED and "<<<<<<<" not in content
    assert git(repo, "show", f"sandbox-{queue.id}:two.txt") == "2\n"
    events = [e["event"] for e in Queues(state(repo)).history(queue.id)]
    assert events[:6] == [
        "created",
        "landed",
        "conflict",
        "resolver_started",
        "resolved",
        "rebased",
    ]
    assert events[-1] == "landed"
    # the resolver's sandbox is retired: its commit lives on in two's branch
    assert gs.get(two.resolver["sandbox"]) is None
    assert git(repo, "show", "sandbox-two:shared.txt") == RESOLVED
    assert git(repo, "diff", "HEAD", "--name-only") == ""  # the user's tree untouched


def test_markers_left_by_the_resolver_fail_the_member_and_keep_its_sandbox(gs, repo):
    path = repo / "lazy.jsonl"
    path.write_text(json.dumps({"text": "I could not decide."}) + "\n")
    write_spec("resolver", f"{{runner: native, model: replay/{path}, permission_required: MEDIUM}}")
    conflict_pair(gs)
    out = sp(repo, "merge", "start", "one", "two", "--wait", "--timeout", "3m")
    queue = Queues(state(repo)).load(out.stdout.strip())
    two = queue.member("two")
    assert two.state == "failed" and "left conflict markers in shared.txt" in str(two.problem)
    kept = two.resolver["sandbox"]
    assert gs.get(kept) is not None  # kept for a person
    assert queue.state == "merged"  # one landed; two waits for a person
    resolver_spec(repo)  # a better resolver; the person retries
    again = sp(repo, "merge", "run", queue.id, "--retry", "--wait", "--timeout", "3m")
    assert again.returncode == 0, again.stderr
    queue = Queues(state(repo)).load(queue.id)
    two = queue.member("two")
    assert two.state == "landed" and two.resolver_runs == 2, queue.describe()
    assert two.resolver["sandbox"] != kept and gs.get(kept) is not None  # a sandbox of its own
    assert git(repo, "show", f"sandbox-{queue.id}:shared.txt") == RESOLVED


def test_a_resolver_killed_with_sigkill_fails_its_member_until_a_retry(gs, repo):
    """The resolver's supervisor dies by SIGKILL: nobody hangs. The next pass sees the job
    ended, fails the member and keeps its sandbox; `--retry` starts a new resolver."""
    from specialists.store.view import current_status
    from tests.integration.test_job_processes import command_spec
    from tests.support.waiting import wait_until

    command_spec("resolver", "sleep 60")
    conflict_pair(gs)
    queue = ops.start(state(repo), ["one", "two"])
    assert queue.state == "waiting", queue.describe()
    job = queue.member("two").resolver["job"]
    jobs = JobStore(state(repo), news=None)

    def supervisor() -> int | None:
        found = current_status(jobs, job).supervisor_pid
        return found if found and found != os.getpid() else None  # not the launcher: us

    pid = wait_until(supervisor, what="the supervisor")
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not current_status(jobs, job).active, what="the job seen dead")
    out = sp(repo, "merge", "run", queue.id)
    assert out.returncode == 1, out.stderr
    two = Queues(state(repo)).load(queue.id).member("two")
    assert two.state == "failed" and f"resolver job {job} ended" in str(two.problem)
    resolver_spec(repo)
    out = sp(repo, "merge", "run", queue.id, "--retry", "--wait", "--timeout", "3m")
    assert out.returncode == 0, out.stderr
    assert Queues(state(repo)).load(queue.id).member("two").state == "landed"


# --- kill -9 mid-queue, then a retry ----------------------------------------------------------


GIT_PAUSE = """#!/bin/sh
# Pauses the merge queue at the {n}th git command with the argument {pattern}: tells the
# test, then waits to be killed.
for a in "$@"; do
  if [ "$a" = "{pattern}" ]; then
    echo x >> {count}
    if [ "$(wc -l < {count})" -eq {n} ]; then
      echo $$ > {flag}
      while :; do sleep 1; done
    fi
  fi
done
exec {git} "$@"
"""


@pytest.mark.parametrize(
    ("pattern", "n", "killed_at"),
    [
        ("read-tree", 1, "p landing"),  # p's squash journaled, nothing staged yet
        ("update-ref", 1, "p landing"),  # p's squash staged and committed, HEAD not moved
        ("remove", 1, "p landing"),  # p's squash committed and marked, worktree still there
        ("read-tree", 2, "q rebasing"),  # q's rebased commit made, its worktree not moved
        ("update-ref", 2, "q rebasing"),  # q's worktree moved along, its branch not yet
        ("read-tree", 3, "q landing"),  # q's own squash, p landed before
    ],
)
def test_kill_9_mid_queue_then_run_finishes_it_exactly_once(
    gs, repo, tmp_path, pattern, n, killed_at
):
    child(gs, "p", {"shared.txt": edit(LINES, 1, "P"), "p.txt": "p\n"})
    child(gs, "q", {"shared.txt": edit(LINES, 20, "Q"), "q.txt": "q\n"})
    child(gs, "r", {"r.txt": "r\n"})
    real_git = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True)
    shim = tmp_path / "bin"
    shim.mkdir()
    flag = tmp_path / "paused"
    (shim / "git").write_text(
        GIT_PAUSE.format(
            pattern=pattern, n=n, count=tmp_path / "count", flag=flag, git=real_git.stdout.strip()
        )
    )
    (shim / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{shim}:{os.environ['PATH']}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "specialists", "merge", "start", "p", "q", "r"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not flag.exists():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the queue never reached the paused git command"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    # Git runs in a session of its own: the paused one outlives the queue it served (a real
    # git would finish its command); the test stops it, or it would wait forever.
    with contextlib.suppress(ProcessLookupError):
        os.kill(int(flag.read_text()), signal.SIGKILL)
    [queue_id] = Queues(state(repo)).ids()
    member, step = killed_at.split()
    assert Queues(state(repo)).load(queue_id).member(member).state == step
    out = sp(repo, "merge", "run", queue_id)
    assert out.returncode == 0, out.stderr + out.stdout
    queue = Queues(state(repo)).load(queue_id)
    assert [m.state for m in queue.members] == ["landed"] * 3, queue.describe()
    tree = {
        name: git(repo, "show", f"sandbox-{queue_id}:{name}")
        for name in ("p.txt", "q.txt", "r.txt", "shared.txt")
    }
    assert tree["shared.txt"].startswith("P\n") and tree["shared.txt"].endswith("Q\n")
    commits = git(repo, "log", "--format=%s", f"{queue.base}..sandbox-{queue_id}").splitlines()
    assert len(commits) == 3, commits  # each member landed exactly once
    assert status(repo) == ""


# --- siblings of one parent job, landing in its sandbox ---------------------------------------


def test_a_sandboxed_parents_threads_are_queued_as_siblings_and_land_in_its_sandbox():
    """Real jobs: a parent in its own sandbox spawns sandboxed threads. `merge_queue` with no
    sandboxes named takes the caller's own children: a running one refuses the queue (R-S5);
    the finished ones named land in the parent's sandbox (committed), overlapping ones
    rebased, and the user's working copy never changes."""
    from tests.support.threads import (
        call,
        job_caller,
        root_caller,
        spawn,
        thread_project,
        wait_closed,
    )

    project = thread_project(
        waiter="sleep 30",
        top="sed -i '1s/.*/TOP/' shared.txt",
        bottom="sed -i '20s/.*/BOTTOM/' shared.txt",
        one="printf 'one\\n' > one.txt",
    )
    commit_files(project, {"shared.txt": LINES, ".gitignore": ".specialists/\n"}, "base")
    head = sha(project)
    reply = spawn(root_caller(project), specialist="waiter", sandbox=True)
    assert not reply.is_error, reply.text
    parent = reply.data
    as_parent = job_caller(project, parent["job_id"], cwd=Path(parent["sandbox"]))
    kids, kid_jobs = {}, {}
    for name in ("top", "bottom", "one", "waiter"):
        made = spawn(as_parent, stack=parent["stack"], specialist=name, sandbox=True)
        assert not made.is_error, made.text
        kids[name] = made.data["thread_id"]
        kid_jobs[name] = made.data["job_id"]
    for name in ("top", "bottom", "one"):
        wait_closed(project, kids[name], owner=f"job-{parent['job_id']}")
    checked = call("merge_queue", {"action": "check"}, as_parent)
    assert not checked.is_error, checked.text
    [pair] = checked.data["overlaps"]
    assert {pair["a"], pair["b"]} == {kids["top"], kids["bottom"]}  # sandbox = thread id
    assert pair["paths"] == ["shared.txt"]
    states = {m["ref"]: m["state"] for m in checked.data["members"]}
    assert states[kids["waiter"]] == "running"
    refused = call("merge_queue", {"action": "start"}, as_parent)
    assert refused.is_error and "not finished" in refused.text and kids["waiter"] in refused.text
    named = [kids["top"], kids["bottom"], kids["one"]]
    started = call("merge_queue", {"action": "start", "sandboxes": named}, as_parent)
    assert not started.is_error, started.text
    queue = started.data
    assert queue["state"] == "landed" and queue["into_sandbox"], started.text
    assert [m["state"] for m in queue["members"]] == ["landed"] * 3
    assert [m["job"] for m in queue["members"]] == [kid_jobs[n] for n in ("top", "bottom", "one")]
    target = Path(parent["sandbox"])
    merged = (target / "shared.txt").read_text()
    assert merged.startswith("TOP\n") and merged.endswith("BOTTOM\n")
    assert (target / "one.txt").read_text() == "one\n"
    assert git(target, "log", "-1", "--format=%s").strip() == f"thread {queue['integration']}"
    assert status(target) == ""
    assert (sha(project), status(project)) == (head, "")  # the user's tree untouched
    assert not (project / "one.txt").exists()
    landed_tip = sha(target)
    again = call("merge_queue", {"action": "start", "sandboxes": [kids["one"]]}, as_parent)
    assert not again.is_error, again.text  # named again: its change is there already
    assert (target / "one.txt").read_text() == "one\n" and status(target) == ""
    assert sha(target) == landed_tip  # and no second commit
    from specialists.store.control import post_request

    jobs = JobStore(project / ".specialists", news=None)
    post_request(jobs.job_dir(parent["job_id"]), "stop", "test over")


def test_the_resolvers_end_hook_lands_the_member_without_anyone_polling(gs, repo):
    """No --wait: the queue is left waiting on its resolver; the resolver job's own end hook
    takes its commit, lands the member and tells the queue's owner."""
    from specialists.events.inbox import Inbox

    resolver_spec(repo)
    conflict_pair(gs)
    queue = ops.start(state(repo), ["one", "two"], owner="cli-hook-test")
    assert queue.state == "waiting", queue.describe()
    queues = Queues(state(repo))

    deadline = time.monotonic() + 120
    while queues.load(queue.id).state == "waiting":
        assert time.monotonic() < deadline, queues.load(queue.id).describe()
        time.sleep(0.2)
    done = queues.load(queue.id)
    assert [m.state for m in done.members] == ["landed", "landed"], done.describe()
    assert git(repo, "show", f"sandbox-{queue.id}:shared.txt") == RESOLVED
    told = list(Inbox(state(repo), "cli-hook-test").pending(max_events=100).events)
    assert any(queue.id in e.body and "merged" in e.body for e in told), told


def test_refusals_before_anything_changes_and_two_starts_racing(gs, repo):
    """An unknown resolver, siblings of different parents: refused, no queue made. Two
    `merge start` of the same sandbox at once: one queue takes it, the other is refused."""
    child(gs, "m", {"m.txt": "m\n"})
    parent = gs.create("par")
    child(gs, "n", {"n.txt": "n\n"}, base=parent)
    out = sp(repo, "merge", "start", "m", "--resolver", "nosuch")
    assert out.returncode == 2 and "unknown specialist 'nosuch'" in out.stderr, out.stderr
    out = sp(repo, "merge", "start", "m", "n")
    assert out.returncode == 2 and "different parents" in out.stderr, out.stderr
    assert Queues(state(repo)).ids() == []
    argv = [sys.executable, "-m", "specialists", "merge", "start", "m", "--no-resolver"]
    racing = [
        subprocess.Popen(argv, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in racing]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    assert any("already in merge queue" in err or "no record" in err for _, err in results)
    [queue_id] = Queues(state(repo)).ids()
    assert Queues(state(repo)).load(queue_id).member("m").state == "landed"
    again = sp(repo, "merge", "start", "m")  # its change waits in that queue, not landed yet
    assert again.returncode == 2 and f"already in merge queue {queue_id}" in again.stderr


def test_a_workflows_worktree_children_are_queued_by_its_id(gs, repo):
    """Worktree children of one workflow (a handoff manifest) are siblings: `--parent` with
    the workflow's id finds them; one left with uncommitted work its job may not commit is
    refused (R-S3), and once committed they land."""
    from specialists.features.sandbox.handoff import begin_handoff, child_ended

    started = begin_handoff(repo, "wf-merge1", ["a", "b"], owner="wf-merge1")
    a, b = started.children
    (a.path / "shared.txt").write_text(edit(LINES, 1, "A"))
    git(a.path, "commit", "-qam", "a's part")
    (b.path / "shared.txt").write_text(edit(LINES, 20, "B"))
    for key in ("a", "b"):
        child_ended(repo, "wf-merge1", key)
    found = ops.check(state(repo), [], "wf-merge1")
    assert {m["sandbox"] for m in found["members"]} == {a.sandbox_id, b.sandbox_id}
    assert found["overlaps"][0]["paths"] == ["shared.txt"]
    out = sp(repo, "merge", "start", "--parent", "wf-merge1")
    assert out.returncode == 2 and "auto-commit is off" in out.stderr, out.stderr
    git(b.path, "commit", "-qam", "b's part")
    out = sp(repo, "merge", "start", "--parent", "wf-merge1")
    assert out.returncode == 0, out.stderr
    queue = Queues(state(repo)).load(out.stdout.strip())
    assert queue.order == "auto" and queue.state == "merged"
    merged = git(repo, "show", f"sandbox-{queue.id}:shared.txt")
    assert merged.startswith("A\n") and merged.endswith("B\n")
    assert status(repo) == ""


def test_cancel_stops_the_resolver_and_keeps_every_branch(gs, repo):
    from specialists.store.view import current_status
    from tests.integration.test_job_processes import command_spec
    from tests.support.waiting import wait_until

    command_spec("resolver", "sleep 60")
    conflict_pair(gs)
    queue = ops.start(state(repo), ["one", "two"])
    job = queue.member("two").resolver["job"]
    out = sp(repo, "merge", "cancel", queue.id)
    assert out.returncode == 0 and "cancelled" in out.stdout, out.stderr
    jobs = JobStore(state(repo), news=None)
    wait_until(lambda: not current_status(jobs, job).active, what="the resolver stopped")
    after = Queues(state(repo)).load(queue.id)
    assert after.state == "cancelled" and after.member("two").state == "resolving"
    for branch in ("sandbox-one", "sandbox-two", f"sandbox-{queue.id}"):
        assert git(repo, "branch", "--list", branch).strip(), branch
    assert sp(repo, "merge", "run", queue.id).returncode == 1  # a cancelled queue stays so
    assert git(repo, "diff", "HEAD", "--name-only") == ""  # the user's tree untouched
