"""The remote executor's own code (RemoteJobRunner, RemoteHost, RemoteProcess, the node core,
the code's trip there and back) on the in-process loopback node: no Ray, real processes,
real git. The same code runs under Ray in tests/integration/test_ray_executor.py."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from specialists.executors.job import EXECUTOR_FILE, RemoteJobRunner, read_executor_record
from specialists.executors.testing import LoopbackConnector, LoopbackNode
from specialists.jobs.liveness import pid_exists
from specialists.runners.base import (
    Abort,
    AgentExited,
    Kill,
    LaunchSpec,
    RunFinished,
)
from specialists.runners.command import CommandRunner
from tests.support.driving import acts, drive, exited, of
from tests.support.jobs import wait_for

PY = sys.executable
SETTINGS: dict[str, Any] = {"kind": "ray", "workspace": "bundle", "lease_s": 300.0}


def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return out.stdout


@pytest.fixture
def project() -> Path:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / "tracked.txt").write_text("committed\n")
    (root / ".gitignore").write_text(".env\n.specialists/\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


@pytest.fixture
def node(tmp_path: Path) -> Iterator[LoopbackNode]:
    n = LoopbackNode(tmp_path / "node")
    yield n
    n.close()


def job_spec(project: Path, code: str, job_id: str = "j1") -> LaunchSpec:
    job_dir = project / ".specialists" / "jobs" / job_id
    job_dir.mkdir(parents=True)
    return LaunchSpec(
        job_id=job_id,
        job_dir=job_dir,
        cwd=project,
        prompt="the task",
        system_prompt="",
        model=None,
        env={"SPECIALISTS_JOB_DIR": str(job_dir)},
        options={"command": PY, "args": ["-c", code]},
    )


def remote(node: LoopbackNode, **settings: Any) -> tuple[RemoteJobRunner, LoopbackConnector]:
    connector = LoopbackConnector(node)
    return RemoteJobRunner(CommandRunner(), {**SETTINGS, **settings}, connector), connector


def test_a_job_runs_on_the_node_in_a_copy_and_its_changes_land_as_a_sandbox(project, node):
    """The agent sees committed, uncommitted and untracked files but not ignored ones, works
    in the node's checkout (not ours), and what it changed comes back as sandbox <id>."""
    (project / "tracked.txt").write_text("uncommitted edit\n")
    (project / "new.txt").write_text("untracked\n")
    (project / ".env").write_text("SECRET=1\n")
    code = (
        "import os,sys; print(os.getcwd()); sys.stdin.read();"
        "print(open('tracked.txt').read().strip(), open('new.txt').read().strip(),"
        " os.path.exists('.env'));"
        "open('made.txt','w').write('by the agent\\n')"
    )
    runner, connector = remote(node)
    runner.start(job_spec(project, code))
    events = drive(runner, exited)
    answer = of(events, RunFinished)[0].text
    assert "uncommitted edit untracked False" in answer
    assert str(node.core.root) in answer  # it ran in the node's checkout
    assert not (project / "made.txt").exists()  # our working copy is untouched
    notices = [a.fields["message"] for a in acts(events, "notice")]
    assert any("2 uncommitted or untracked paths" in n for n in notices), notices
    landed = next(a for a in acts(events, "notice") if "sandbox" in a.fields)
    sandbox = project / ".specialists" / "sandboxes" / landed.fields["sandbox"]
    assert (sandbox / "made.txt").read_text() == "by the agent\n"
    assert (sandbox / "new.txt").read_text() == "untracked\n"
    assert connector.placements[0].released == 1
    record = read_executor_record(project / ".specialists" / "jobs" / "j1")
    assert record is not None and record["node"] == "loopback node"
    assert of(events, AgentExited)[-1].exit_code == 0
    work = node.core.workspaces.work(runner._key)
    wait_for(lambda: not work.exists(), what="the node's checkout removed")


def test_abort_and_kill_reach_the_whole_tree_on_the_node(project, node):
    """A stop ends the agent and a grandchild it started in a session of its own."""
    code = (
        "import subprocess,time;"
        "p=subprocess.Popen(['sleep','300'], start_new_session=True);"
        "print(p.pid, flush=True); time.sleep(300)"
    )
    runner, _ = remote(node)
    spec = job_spec(project, code)
    runner.start(spec)
    stdout = spec.job_dir / "stdout.log"
    drive(runner, lambda _: stdout.exists() and stdout.read_text().strip() != "")
    grandchild = int(stdout.read_text().split()[0])
    assert pid_exists(grandchild)
    runner.send(Abort())
    runner.send(Kill())
    drive(runner, exited)
    wait_for(lambda: not pid_exists(grandchild) or _zombie(grandchild), what="grandchild gone")


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z"
    except OSError:
        return True


def test_a_node_that_dies_ends_the_job_killed_naming_the_node(project, node):
    runner, _ = remote(node)
    runner.start(job_spec(project, "import time; print('up', flush=True); time.sleep(300)"))
    drive(runner, lambda evs: bool(acts(evs, "text")) or bool(node.core.procs))
    node.kill()
    events = drive(runner, exited)
    assert "died mid-job" in of(events, AgentExited)[-1].stderr_tail
    notices = [a.fields["message"] for a in acts(events, "notice")]
    assert any("changes and session on it are lost" in n for n in notices), notices


def test_output_is_never_lost_or_repeated_across_many_reads(project, node):
    """20,000 numbered lines arrive once each and in order (acknowledged reads)."""
    code = "import sys; sys.stdin.read(); [print(i) for i in range(20000)]"
    runner, _ = remote(node)
    runner.start(job_spec(project, code))
    events = drive(runner, exited)
    lines = (project / ".specialists" / "jobs" / "j1" / "stdout.log").read_text().split()
    assert lines == [str(i) for i in range(20000)]
    assert of(events, AgentExited)[-1].exit_code == 0


def test_the_lease_kills_an_agent_nobody_reads(project, node):
    """A supervisor that crashed stops reading: once lease_s has passed the node kills the
    agent (the lease check is called with a later time: no waiting)."""
    runner, _ = remote(node, lease_s=5.0)
    runner.start(job_spec(project, "import time; time.sleep(300)"))
    pid = next(iter(node.core.procs.values())).pid
    later = time.monotonic() + 10
    killed = asyncio.run_coroutine_threadsafe(node.core.expire(later), node._loop).result(10)
    assert killed == ["p1"]
    events = drive(runner, exited)
    assert of(events, AgentExited)[-1].signal == signal.SIGKILL
    wait_for(lambda: not pid_exists(pid) or _zombie(pid), what="agent gone")
    assert (project / ".specialists" / "jobs" / "j1" / EXECUTOR_FILE).exists()


# --- choosing the executor, and bad input -----------------------------------------------


def test_without_ray_installed_the_hint_says_how_to_install_it(monkeypatch):
    """`--executor ray` without the extra: one line naming the extra, no job planned."""
    from specialists.errors import AgentUnavailable
    from specialists.executors.settings import resolve

    monkeypatch.setitem(sys.modules, "ray", None)  # what an absent package looks like
    with pytest.raises(AgentUnavailable) as caught:
        resolve("ray", None, None)
    assert caught.value.hint == "pip install 'specialists[ray]'"


def test_the_cli_says_the_install_line_when_ray_is_missing(monkeypatch, capsys):
    from specialists.cli.main import main
    from tests.support.jobs import echo_project

    echo_project()
    monkeypatch.setitem(sys.modules, "ray", None)
    code = main(["run", "echo", "--prompt", "x", "--executor", "ray"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0
    assert err[-1].startswith("error: ") and "pip install 'specialists[ray]'" in err[-1]
    assert not (
        Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists" / "jobs"
    ).exists() or not any(
        (Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists" / "jobs").iterdir()
    )


def test_the_choice_order_is_run_then_specialist_then_config():
    from specialists.executors.settings import resolve

    assert resolve(None, None, None) is None
    assert resolve("local", {"kind": "ray"}, {"kind": "ray"}) is None
    chosen = resolve(None, {"kind": "ray", "namespace": "mine"}, {"address": "h:1"})
    assert chosen is not None
    assert (chosen["namespace"], chosen["address"], chosen["lease_s"]) == ("mine", "h:1", 60.0)
    assert resolve(None, None, {"kind": "local", "address": "h:1"}) is None
    assert chosen["connection"] == "shared"  # one Ray driver per machine unless told
    direct = resolve("ray", {"connection": "direct"}, {"bridge_idle_s": 5})
    assert direct is not None and (direct["connection"], direct["bridge_idle_s"]) == ("direct", 5)


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ({"kind": "kubernetes"}, "[executor].kind"),
        ({"resources": {"CPU": -1}}, "[executor].resources.CPU"),
        ({"lease_s": 0}, "[executor].lease_s"),
        ({"workspace": "nfs"}, "[executor].workspace"),
        ({"connection": "gateway"}, "[executor].connection"),
        ({"bridge_idle_s": 0}, "[executor].bridge_idle_s"),
        ({"adress": "x"}, "adress"),
    ],
)
def test_a_bad_executor_table_names_the_field(table, problem):
    from specialists.errors import ConfigError
    from specialists.executors.settings import resolve

    with pytest.raises(ConfigError) as caught:
        resolve("ray", None, table)
    assert problem in str(caught.value)


# --- hostile input from the other side ----------------------------------------------------


def test_a_node_refuses_file_names_and_keys_that_leave_its_root(tmp_path):
    """A supervisor (or anything that can call the actor) cannot make the node write outside
    its root: '..', absolute names and odd keys are refused."""
    from specialists.executors.nodework import WorkspaceError, Workspaces

    spaces = Workspaces(tmp_path / "root")
    for name in ("../evil", "/etc/evil", "a/../../evil", "nul\x00"):
        with pytest.raises(WorkspaceError):
            spaces.write_files("job1", {name: b"x"})
    for key in ("../up", "", "a/b", "x" * 200):
        with pytest.raises(WorkspaceError):
            spaces.job_dir(key)
    assert not (tmp_path / "evil").exists()


def test_an_oversized_line_arrives_as_its_head_and_size(project, node):
    """A line longer than max_line is cut on the node (bounded memory there and here)."""
    from specialists.executors.remote import RemoteHost
    from specialists.executors.travel import PathMap
    from specialists.process.lines import OVERSIZED_HEAD, OversizedLine

    host = RemoteHost(node, paths=PathMap(), forward_env=[], job_dir=None, job_key="j1", lease_s=60)
    code = "import sys; sys.stdout.write('x' * 100000 + '\\nshort\\n')"
    proc = host.spawn([PY, "-c", code], cwd=project, stdin_pipe=False, max_line=1024)
    lines: list[Any] = []
    while not proc.done:
        lines += proc.read(1.0)
    proc.release()
    assert (
        isinstance(lines[0], OversizedLine) and lines[0].size == 100000
    )  # as LineSplitter counts it here
    assert len(lines[0].head) == OVERSIZED_HEAD
    assert lines[1:] == [b"short"] or lines[1:] == [b"short\n"]
    assert proc.returncode == 0


def test_an_agent_working_in_a_copy_is_told_so_and_gets_no_agent_tool_table(project, node):
    """With workspace "bundle" the job's store stays on this machine, so a tool that keeps
    its state there (bg_*, timers, threads, asks, missions) would write to nothing anyone
    reads: the agent's environment says it works in a copy and the table is then empty."""
    from specialists.toolset.registry import offered
    from specialists.vocab import NODE_COPY_ENV

    code = (
        f"import os,sys; sys.stdin.read(); print('copy=' + os.environ.get({NODE_COPY_ENV!r}, ''))"
    )
    runner, _ = remote(node)
    runner.start(job_spec(project, code))
    assert "copy=1" in of(drive(runner, exited), RunFinished)[0].text
    assert offered(thread=True, env={NODE_COPY_ENV: "1"}) == ()
    assert offered(thread=True, env={}) != ()
