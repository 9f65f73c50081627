"""Background commands end to end: the bg_* tools and `specialists bg` over real detached
supervisors, real `sh -c` processes and real signals (issue 9 items 2, 6 and 8).

Each test waits on what the job writes (its inbox, its log, its status), never on a fixed
sleep. The one real wait is the 3 s SIGTERM grace of a cancel, which R-J8 fixes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from specialists.events.inbox import Inbox
from specialists.events.model import Event
from specialists.native.agent_table import tool_named
from specialists.native.agent_tools import AgentTool, Caller, Reply, ToolCall, call_tool
from specialists.native.tool_settings import JobsSettings, Settings
from specialists.store.jobs import JobStore
from tests.integration.test_cli_pi import sp, status
from tests.support.processes import alive, killed_after, wait_dead
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

OWNER = "cli-bgtests"


def root() -> Path:
    return Path(os.environ["SPECIALISTS_PROJECT_ROOT"])


def caller(**settings: object) -> Caller:
    jobs = JobsSettings()._replace(**settings)
    return Caller(
        state_root=root() / ".specialists",
        owner=OWNER,
        cwd=root(),
        settings=Settings(jobs=jobs),
    )


def tool(name: str, args: dict[str, object], who: Caller | None = None) -> Reply:
    found = tool_named(name)
    assert isinstance(found, AgentTool)
    return call_tool(found, ToolCall(args, who or caller(), call_id="call-7"))


def started(args: dict[str, object], who: Caller | None = None) -> str:
    reply = tool("bg_run", args, who)
    assert not reply.is_error, reply.text
    return str(reply.data["job_id"])


def inbox_events(kind: str) -> list[Event]:
    return [e for e in Inbox(root() / ".specialists", OWNER).pending().events if e.kind == kind]


def job_exit_of(job_id: str) -> Event:
    def one() -> list[Event]:
        return [e for e in inbox_events("job_exit") if e.details.get("job_id") == job_id]

    (event,) = wait_until(one, what=f"the job_exit of {job_id}")
    return event


def raw_job_exits(job_id: str) -> int:
    """job_exit lines in the inbox file for `job_id`, duplicates included."""
    path = root() / ".specialists" / "owners" / OWNER / "events.jsonl"
    lines = path.read_bytes().splitlines() if path.exists() else []
    return sum(1 for line in lines if f"bg-{job_id}." in line.decode() and b"job_exit" in line)


def pid_in(path: Path) -> int:
    wait_until(lambda: path.exists() and path.read_text().strip(), what=path.name)
    return int(path.read_text())


def job_count() -> int:
    return len(JobStore(root() / ".specialists", news=None).list_ids())


@pytest.fixture
def strays() -> Iterator[list[int]]:
    with killed_after() as pids:
        yield pids


# --- run and exit ----------------------------------------------------------------------------


def test_bg_run_returns_before_any_output_and_one_job_exit_follows(tmp_path: Path) -> None:
    """R-J1, R-J4: the command blocks on a FIFO the test holds, so the reply provably came
    before its first byte; once released, the owner gets exactly one job_exit."""
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    job_id = started({"command": f"read x < {gate}; echo got $x; echo oops >&2; exit 3"})
    log = root() / ".specialists" / "jobs" / job_id / "output.log"
    assert not log.exists() or log.read_bytes() == b""
    assert tool("bg_list", {}).data["jobs"][0]["id"] == job_id
    with open(gate, "w") as f:
        f.write("go\n")
    event = job_exit_of(job_id)
    assert event.id == f"{event.id.split(':')[0]}:job_exit:1"
    assert event.source.tool == "bg_run" and event.source.call_id == "call-7"
    first, counts, *rest = event.body.splitlines()
    assert first.startswith(f"job {job_id} (read x < ") and " exited with code 3 after " in first
    assert counts.startswith("2 lines, 12 bytes of output; log: ") and counts.endswith(str(log))
    assert rest[-2:] == ["got go", "oops"]
    assert event.details["status"] == "exited" and event.details["exit_code"] == 3
    assert raw_job_exits(job_id) == 1
    assert status(job_id)["status"] == "error"  # the store's view: `status` covers proc jobs
    out = tool("bg_output", {"id": job_id, "since": 4})
    assert out.text.endswith("---\ngo\noops\n") and out.data["next_offset"] == 12


def test_a_shell_that_exits_while_its_child_holds_the_pipe_ends_at_once(
    tmp_path: Path, strays: list[int]
) -> None:
    """R-J4: the shell exits 0 leaving `sleep 300` on the inherited pipe. The job ends as the
    shell's (exited 0), and what it left behind is killed with the job."""
    pid_file = tmp_path / "child.pid"
    job_id = started({"command": f"sleep 300 & echo $! > {pid_file}; echo bye"})
    child = pid_in(pid_file)
    strays.append(child)
    event = job_exit_of(job_id)
    assert event.details["status"] == "exited" and event.details["exit_code"] == 0
    assert event.body.splitlines()[-1] == "bye"
    wait_dead(child)


# --- cancel ------------------------------------------------------------------------------------


def test_cancel_reaches_a_grandchild_that_ignores_sigterm_and_a_second_cancel_sends_nothing(
    tmp_path: Path, strays: list[int]
) -> None:
    """R-J8: SIGTERM to the group, 3 s, SIGKILL to the group; the reply never waits; the
    second cancel reports the state and asks nothing; one job_exit says cancelled."""
    pid_file = tmp_path / "grandchild.pid"
    script = f"sh -c 'trap \"\" TERM; echo $$ > {pid_file}; exec sleep 300' & echo up; wait"
    job_id = started({"command": script, "name": "stubborn"})
    grandchild = pid_in(pid_file)
    strays.append(grandchild)
    first = tool("bg_cancel", {"id": job_id})
    assert first.data["asked"] is True and "cancelling" in first.text
    second = tool("bg_cancel", {"id": job_id})
    assert second.data["asked"] is False and "nothing" in second.text
    assert alive(grandchild)  # the reply did not wait for the 3 s grace
    event = job_exit_of(job_id)
    assert event.details["status"] == "cancelled"
    assert f"job {job_id} (stubborn) was cancelled after " in event.body
    wait_dead(grandchild)
    third = tool("bg_cancel", {"id": job_id})
    assert third.data["asked"] is False and "already ended (cancelled)" in third.text
    assert raw_job_exits(job_id) == 1


@pytest.mark.parametrize("looker", ["bg_list", "specialists status"])
def test_kill_9_of_the_supervisor_then_recovery_writes_the_one_job_exit(
    tmp_path: Path, strays: list[int], looker: str
) -> None:
    """The supervisor dies by SIGKILL: its command dies with it (PDEATHSIG) or is killed by
    recovery, which whoever looks runs (bg_list, or `specialists status` through the news
    seam), and which posts the job_exit the supervisor could not. Looking again posts
    nothing more."""
    pid_file = tmp_path / "cmd.pid"
    job_id = started({"command": f"echo $$ > {pid_file}; echo working; exec sleep 300"})
    command = pid_in(pid_file)
    strays.append(command)
    wait_until(lambda: status(job_id)["status"] == "running", what="running")
    supervisor = status(job_id)["supervisor_pid"]
    os.kill(supervisor, signal.SIGKILL)
    wait_until(lambda: not alive(supervisor), what="the supervisor's death")
    if looker == "bg_list":
        listed = tool("bg_list", {})  # recovery happens here
        assert listed.data["jobs"][0]["state"] == "error"
    else:
        assert status(job_id)["status"] == "error"  # and here
    event = job_exit_of(job_id)
    assert event.details["status"] == "error"
    assert "supervisor crashed; the command was killed" in event.body
    assert "working" in event.body and "1 line" in event.body  # counted from the log
    tool("bg_list", {})
    assert status(job_id)["status"] == "error"
    assert raw_job_exits(job_id) == 1
    wait_dead(command)


# --- limits and watch -----------------------------------------------------------------------------


def test_too_many_jobs_is_refused_with_the_running_ones_listed(tmp_path: Path) -> None:
    """R-J10: at jobs.max the call fails, names the running job, and creates nothing."""
    who = caller(max=1)
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    job_id = started({"command": f"cat {gate}", "name": "holder"}, who)
    before = job_count()
    refused = tool("bg_run", {"command": "echo never"}, who)
    assert refused.is_error
    assert refused.text.startswith("error: too many background jobs: 1 of jobs.max 1")
    assert f"{job_id} (holder, " in refused.text
    assert job_count() == before
    with open(gate, "w") as f:
        f.write("x")
    job_exit_of(job_id)
    assert not tool("bg_run", {"command": "true"}, who).is_error  # the slot is free again


def test_concurrent_bg_runs_cannot_both_take_the_last_slot(tmp_path: Path) -> None:
    """Four `specialists bg run` at once against jobs.max = 1 (config.toml): the count and
    the creation are one step under the owner's lock, so exactly one starts."""
    import subprocess
    import sys

    state = root() / ".specialists"
    state.mkdir(exist_ok=True)
    (state / "config.toml").write_text("[jobs]\nmax = 1\n")
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    argv = [sys.executable, "-m", "specialists", "bg", "run", "--owner", OWNER, f"cat {gate}"]
    racers = [
        subprocess.Popen(argv, cwd=root(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
        for _ in range(4)
    ]  # fmt: skip
    results = [(p.wait(60), p.stderr.read() if p.stderr else "") for p in racers]
    assert sorted(code for code, _ in results) == [0, 2, 2, 2], results
    refusals = [err for code, err in results if code]
    assert all(e.startswith("error: too many background jobs: 1 of jobs.max 1") for e in refusals)
    assert job_count() == 1
    with open(gate, "w") as f:
        f.write("x")
    (job_id,) = JobStore(state, news=None).list_ids()
    job_exit_of(job_id)


def test_watched_lines_arrive_as_one_job_match_before_the_job_exit(tmp_path: Path) -> None:
    """R-J6 with the real supervisor: two matches in one burst become one batch."""
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    job_id = started({"command": f"printf 'ok\\nERROR a\\nfine\\nERROR b\\n'; cat {gate}",
                      "watch": ["^ERROR"]})  # fmt: skip
    (match,) = wait_until(lambda: inbox_events("job_match"), what="the job_match")
    assert match.body.splitlines()[1:] == ["ERROR a", "ERROR b"]
    assert match.details == {"job_id": job_id, "first_line": 2, "last_line": 4, "lines": 2}
    with open(gate, "w") as f:
        f.write("x")
    assert job_exit_of(job_id).details["matched"] == 2


# --- bad input: one clear error, nothing started ----------------------------------------------


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            {"command": "true", "watch": ["("]},
            "error: watch pattern 1 '(' does not compile: missing )",
        ),
        (
            {"command": "true", "watch": ["a" * 201]},
            "error: argument 'watch[0]' is too long (201 > 200 characters)",
        ),
        ({"command": "true", "cwd": "no/such/dir"}, "does not exist"),
        ({"command": "  "}, "error: argument 'command' must be a non-empty string"),
        ({"command": "true", "timeout_seconds": 0}, "timeout_seconds"),
        ({"command": "true", "isolate": True}, "error: isolate needs cwd"),
        ({"command": "true", "bogus": 1}, "bogus"),
    ],
)
def test_bad_bg_run_input_is_one_error_and_starts_nothing(
    args: dict[str, object], error: str
) -> None:
    before = job_count()
    reply = tool("bg_run", args)
    assert reply.is_error and error in reply.text, reply.text
    assert "\n" not in reply.text
    assert job_count() == before


def test_isolate_without_bubblewrap_fails_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap here
    before = job_count()
    reply = tool("bg_run", {"command": "touch made", "cwd": str(tmp_path), "isolate": True})
    assert reply.is_error and "bubblewrap (bwrap), which is not installed" in reply.text
    assert job_count() == before and not (tmp_path / "made").exists()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_isolate_lets_the_command_write_only_inside_its_cwd(tmp_path: Path) -> None:
    """R-J13 through bg_run and the supervisor: the probe passes, the command runs under
    bwrap, its write outside cwd fails, its write inside lands."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    script = f"echo in > inside.txt; (echo out > {outside}/x.txt) 2>/dev/null || echo blocked"
    job_id = started({"command": script, "cwd": str(work), "isolate": True})
    event = job_exit_of(job_id)
    assert event.details["exit_code"] == 0 and event.body.splitlines()[-1] == "blocked"
    assert (work / "inside.txt").read_text() == "in\n"
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "args", "error"),
    [
        ("bg_output", {"id": "deadbeef"}, "error: no background job 'deadbeef' of yours"),
        ("bg_cancel", {"id": "deadbeef"}, "error: no background job 'deadbeef' of yours"),
        (
            "bg_output",
            {"id": "deadbeef", "since": -1},
            "error: argument 'since' must be at least 0",
        ),
        (
            "bg_output",
            {"id": "deadbeef", "tail": 0},
            "error: argument 'tail' must be between 1 and",
        ),
        ("bg_cancel", {}, "error: give a job id or --all"),
    ],
)
def test_bad_ids_and_offsets_are_one_error(name: str, args: dict[str, object], error: str) -> None:
    reply = tool(name, args)
    assert reply.is_error and reply.text.startswith(error), reply.text


def test_another_owners_job_is_not_yours() -> None:
    """bg_output and bg_cancel see only the caller's jobs."""
    job_id = started({"command": "echo mine"})
    other = caller().replace(owner="cli-someoneelse")
    assert tool("bg_cancel", {"id": job_id}, other).is_error
    assert tool("bg_list", {}, other).text == "No background jobs."
    job_exit_of(job_id)


# --- the CLI ------------------------------------------------------------------------------------


def test_the_cli_runs_lists_reads_and_cancels(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    run = sp("bg", "run", "--owner", OWNER, "--json", "--watch", "never", f"echo hi; cat {gate}")
    assert run.returncode == 0, run.stderr
    job_id = json.loads(run.stdout)["id"]
    listed = sp("bg", "list", "--owner", OWNER)
    assert listed.stdout.startswith(job_id)
    assert "running" in listed.stdout or "starting" in listed.stdout
    wait_until(lambda: sp("bg", "output", job_id).stdout == "hi\n", what="hi in the output")
    assert sp("bg", "cancel", job_id).returncode == 0
    again = sp("bg", "cancel", job_id)
    assert again.returncode == 0 and "nothing" in again.stdout
    assert job_exit_of(job_id).details["status"] == "cancelled"


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (
            ["bg", "run", "--watch", "(", "true"],
            "error: watch pattern 1 '(' does not compile: missing )",
        ),
        (["bg", "run", "--cwd", "/no/such", "true"], "error: cwd /no/such does not exist"),
        (["bg", "output", "deadbeef"], "error: no background job 'deadbeef'"),
        (["bg", "cancel", "deadbeef"], "error: no background job 'deadbeef'"),
        (["bg", "cancel"], "error: give a job id or --all"),
    ],
)
def test_cli_bad_input_is_one_line_and_a_non_zero_exit(argv: list[str], error: str) -> None:
    before = job_count()
    out = sp(*argv)
    assert out.returncode != 0
    assert out.stderr.startswith(error) and out.stderr.count("\n") == 1, out.stderr
    assert "Traceback" not in out.stderr and job_count() == before
