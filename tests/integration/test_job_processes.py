"""Nothing of an agent outlives its job (issue 7 item 1), with real supervisors, the real pi
1.6.0 against the mock LLM, real signals: `kill -9` of a supervisor, then recovery through
`specialists status`; an agent killed under a live supervisor; the native bash tool."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from specialists.store import proctree
from specialists.store.control import post_request
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.store.proctree import identify, job_mark
from specialists.supervise.actions import stop_job
from tests.integration.test_cli_pi import sp, status, wait_until
from tests.support.mock_llm import MockLLM, Reply, ToolCall
from tests.support.processes import alive, killed_after

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def no_shared_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about a fresh supervisor and its keeper (or this process's own
    server): the project's shared fork server is tested in test_shared_forks.py."""
    monkeypatch.setenv("SPECIALISTS_FORK_SERVER", "off")


# A command agent that starts a grandchild in its own session which ignores SIGTERM (what
# pi's bash tool or a daemonising script does), writes the grandchild's pid, then waits.
GRANDCHILD = "setsid sh -c 'trap \"\" TERM; echo $$ > {pid_file}; exec sleep 300' & sleep 300"
# The same grandchild, but with a cleared environment: no job mark, only the ledger knows it.
UNMARKED = (
    'env -i PATH=/usr/bin:/bin setsid sh -c \'trap "" TERM; echo $$ > {pid_file}; '
    "exec sleep 300' & sleep 300"
)


def root() -> Path:
    return Path(os.environ["SPECIALISTS_PROJECT_ROOT"])


def write_spec(name: str, execution: str) -> None:
    (root() / "specialists").mkdir(exist_ok=True)
    (root() / "specialists" / f"{name}.specialist.yaml").write_text(
        f"metadata: {{name: {name}, description: t}}\n"
        f"execution: {execution}\n"
        'prompt: {system: "Be brief.", task_template: "$prompt"}\n'
    )


def command_spec(name: str, script: str) -> None:
    args = json.dumps(["-c", script])
    write_spec(name, f"{{runner: {{type: command, command: sh, args: {args}}}}}")


def start(name: str, prompt: str = "go") -> str:
    out = sp("run", name, "--prompt", prompt, "--background")
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def pid_from(path: Path) -> int:
    wait_until(lambda: path.exists() and path.read_text().strip(), 60, f"{path.name}")
    return int(path.read_text())


def job_dir(job_id: str) -> Path:
    return root() / ".specialists" / "jobs" / job_id


def sleepers(job_id: str) -> list[int]:
    """The job's `sleep 300` processes, found by the job's mark."""
    found = []
    for proc in proctree.marked(job_mark(job_dir(job_id))):
        try:
            cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        except OSError:
            continue
        if cmdline == b"sleep\x00300\x00":
            found.append(proc.pid)
    return found


@pytest.fixture
def strays() -> Iterator[list[int]]:
    with killed_after() as pids:
        yield pids


def daemonizing_job(
    tmp_path: Path, strays: list[int], script: str = GRANDCHILD, name: str = "daemonizer"
) -> tuple[str, int]:
    """A background job whose command agent has started its grandchild: (job id, its pid)."""
    pid_file = tmp_path / "grandchild.pid"
    command_spec(name, script.format(pid_file=pid_file))
    job_id = start(name)
    grandchild = pid_from(pid_file)
    strays.append(grandchild)
    wait_until(lambda: status(job_id)["status"] == "running", 30, "running")
    return job_id, grandchild


def kill_supervisor(job_id: str) -> dict:
    st = status(job_id)
    os.kill(st["supervisor_pid"], signal.SIGKILL)
    wait_until(lambda: not alive(st["supervisor_pid"]), 20, "the supervisor's death")
    return st


def written_status(job_id: str) -> dict:
    return json.loads((job_dir(job_id) / "status.json").read_text())


def keeper_of(job_id: str) -> int:
    """The supervisor's keeper (supervise/keeper.py): its parent, named sp-keeper."""
    supervisor = status(job_id)["supervisor_pid"]
    stat = Path(f"/proc/{supervisor}/stat").read_text()
    keeper = int(stat[stat.rfind(")") + 2 :].split()[1])
    assert Path(f"/proc/{keeper}/comm").read_text().strip() == "sp-keeper"
    return keeper


def test_kill_9_of_a_supervisor_kills_a_setsid_grandchild_at_once(
    tmp_path: Path, strays: list[int]
) -> None:
    """The grandchild left the agent's group and ignores SIGTERM. The supervisor's keeper
    kills it as soon as the supervisor dies, and records the crash: no reader needed."""
    job_id, grandchild = daemonizing_job(tmp_path, strays)
    keeper = keeper_of(job_id)
    st = kill_supervisor(job_id)
    wait_until(lambda: not alive(grandchild), 20, "the grandchild's death")
    wait_until(lambda: not alive(keeper), 20, "the keeper's exit")
    assert not alive(st["pid"])
    wait_until(lambda: written_status(job_id)["status"] != "running", 20, "the recorded end")
    raw = written_status(job_id)  # as the keeper wrote it: no reader recovered it
    assert raw["status"] == "error" and raw["error"] == "supervisor crashed"


def test_without_its_keeper_status_kills_the_grandchild(tmp_path: Path, strays: list[int]) -> None:
    """Keeper and supervisor both killed: the next reader (`status`) recovers the job and
    kills the grandchild by the job's mark."""
    job_id, grandchild = daemonizing_job(tmp_path, strays)
    os.kill(keeper_of(job_id), signal.SIGKILL)
    st = kill_supervisor(job_id)
    wait_until(lambda: not alive(st["pid"]), 20, "the agent's death (PDEATHSIG)")
    assert alive(grandchild), "the test proves nothing: the grandchild died by itself"
    after = status(job_id)  # recovery runs here
    assert after["status"] == "error" and after["error"] == "supervisor crashed"
    wait_until(lambda: not alive(grandchild), 20, "the grandchild's death")


def test_the_ledger_lets_recovery_kill_what_cleared_its_environment(
    tmp_path: Path, strays: list[int]
) -> None:
    """No mark survives `env -i`; the live supervisor adopted the orphan and recorded it.
    With the keeper gone too, only the ledger knows it."""
    job_id, grandchild = daemonizing_job(tmp_path, strays, UNMARKED, "unmarked")
    ident = identify(grandchild)
    wait_until(lambda: ident in proctree.read_ledger(job_dir(job_id)), 30, "the ledger")
    os.kill(keeper_of(job_id), signal.SIGKILL)
    kill_supervisor(job_id)
    assert alive(grandchild)
    assert status(job_id)["status"] == "error"
    wait_until(lambda: not alive(grandchild), 20, "the grandchild's death")


def test_the_keeper_kills_what_cleared_its_environment(tmp_path: Path, strays: list[int]) -> None:
    """No mark and (killed before the ledger was written) no record: the keeper holds it
    anyway, re-parented to it by the kernel when the supervisor died."""
    job_id, grandchild = daemonizing_job(tmp_path, strays, UNMARKED, "unmarked")
    kill_supervisor(job_id)
    wait_until(lambda: not alive(grandchild), 20, "the grandchild's death")


def test_a_live_supervisor_kills_the_grandchild_when_the_job_ends(
    tmp_path: Path, strays: list[int]
) -> None:
    """The agent is killed (`kill -9`): the supervisor ends the job and reaps its tree."""
    job_id, grandchild = daemonizing_job(tmp_path, strays)
    st = status(job_id)
    os.kill(st["pid"], signal.SIGKILL)
    wait_until(lambda: status(job_id)["status"] == "error", 30, "the job's end")
    assert "SIGKILL" in status(job_id)["error"]
    wait_until(lambda: not alive(grandchild), 20, "the grandchild's death")


def test_stop_kills_a_grandchild_that_ignores_sigterm(tmp_path: Path, strays: list[int]) -> None:
    job_id, grandchild = daemonizing_job(tmp_path, strays)
    assert sp("stop", job_id).returncode == 0
    assert status(job_id)["status"] == "cancelled"
    wait_until(lambda: not alive(grandchild), 20, "the grandchild's death")


def test_kill_9_of_a_foreground_run_then_status_kills_the_grandchild(
    tmp_path: Path, strays: list[int]
) -> None:
    """An in-process supervisor (the foreground CLI) marks its agent the same way."""
    pid_file = tmp_path / "grandchild.pid"
    command_spec("daemonizer", GRANDCHILD.format(pid_file=pid_file))
    fg = subprocess.Popen(
        [sys.executable, "-m", "specialists", "run", "daemonizer", "--prompt", "go"],
        cwd=root(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    grandchild = pid_from(pid_file)
    strays.extend([grandchild, fg.pid])
    jobs = root() / ".specialists" / "jobs"
    (job_id,) = [j for j in os.listdir(jobs) if not j.startswith(".")]
    fg.kill()
    fg.wait(20)
    assert alive(grandchild)
    assert status(job_id)["status"] == "error"
    wait_until(lambda: not alive(grandchild), 20, "the grandchild's death")


# --- the real pi 1.6.0 -------------------------------------------------------------------


@pytest.fixture
def pi_spec(pi_bin: Path, mock_llm: MockLLM) -> None:
    write_spec("tester", "{runner: pi, model: mock/mock-model, permission_required: LOW}")


@pytest.mark.parametrize("run", range(20))
def test_kill_9_of_a_pi_supervisor_kills_the_bash_tool_with_it(
    pi_spec: None, mock_llm: MockLLM, strays: list[int], run: int
) -> None:
    """pi runs its bash tool in a new session: after `kill -9` of the supervisor, pi dies
    with it (PDEATHSIG) and the keeper kills `sleep 300` at once, without any reader;
    twenty times over, since a race would show only now and then."""
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("bash", {"command": "sleep 300"}),)), "DONE")
    job_id = start("tester", "sleep a while")
    wait_until(lambda: sleepers(job_id), 60, "pi's bash tool running sleep 300")
    (sleeper,) = sleepers(job_id)
    strays.append(sleeper)
    assert os.getsid(sleeper) != os.getsid(status(job_id)["pid"])  # it left pi's session
    st = kill_supervisor(job_id)
    wait_until(lambda: not alive(sleeper), 20, "the bash tool's death")
    wait_until(lambda: not alive(st["pid"]), 20, "pi's death")  # SIGKILLed in the same pass
    wait_until(lambda: written_status(job_id)["status"] != "running", 20, "the recorded end")
    raw = written_status(job_id)  # as the keeper wrote it: no reader recovered it
    assert raw["status"] == "error" and raw["error"] == "supervisor crashed"


def test_a_pi_job_that_is_stopped_leaves_no_bash_tool_behind(
    pi_spec: None, mock_llm: MockLLM, strays: list[int]
) -> None:
    command = "trap '' TERM; setsid sleep 300 & sleep 300"
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("bash", {"command": command}),)), "DONE")
    job_id = start("tester", "sleep a while")
    wait_until(lambda: len(sleepers(job_id)) == 2, 60, "both sleeps")
    strays.extend(sleepers(job_id))
    assert sp("stop", job_id).returncode == 0
    assert status(job_id)["status"] == "cancelled"
    wait_until(lambda: not any(alive(p) for p in strays), 20, "the sleeps' death")


# --- the native runtime's bash tool -------------------------------------------------------


def test_the_native_bash_tool_dies_with_its_job(mock_llm: MockLLM, strays: list[int]) -> None:
    """A background command the model started (in its own session, ignoring SIGTERM) runs
    while the job runs and does not outlive the native job that answered."""
    write_spec("native", "{runner: native, model: openai/mock-model, permission_required: LOW}")
    command = "setsid sh -c 'trap \"\" TERM; exec sleep 300' > /dev/null 2>&1 & echo started"
    mock_llm.enqueue(
        Reply(tool_calls=(ToolCall("bash", {"command": command}),)),
        Reply("DONE", hang_after=1),  # the answer waits until we have seen the command run
    )
    job_id = start("native", "start a server")
    wait_until(lambda: sleepers(job_id), 60, "the model's background command")
    found = sleepers(job_id)
    strays.extend(found)
    mock_llm.wait_until_hanging(1, timeout=30)
    mock_llm.release()
    wait_until(lambda: status(job_id)["status"] == "done", 60, "done")
    wait_until(lambda: not any(alive(p) for p in found), 20, "the background command's death")


# --- stop, whatever state the supervisor is in (issue 21 item 10) --------------------------


def test_stop_of_a_frozen_supervisor_ends_the_job_cancelled_and_kills_its_tree(
    tmp_path: Path, strays: list[int]
) -> None:
    """A supervisor held by SIGSTOP reads no inbox and handles no SIGTERM: `stop` SIGKILLs
    it at once instead of waiting out its grace, and the job ends as the person asked,
    `cancelled` (not `error: supervisor crashed`), with nothing of it left running."""
    job_id, grandchild = daemonizing_job(tmp_path, strays)
    st = status(job_id)
    strays.append(st["supervisor_pid"])
    os.kill(st["supervisor_pid"], signal.SIGSTOP)
    began = time.monotonic()
    out = sp("stop", job_id)
    took = time.monotonic() - began
    print(f"stop of a frozen supervisor took {took:.1f} s")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"stopped: job {job_id} cancelled"
    after = status(job_id)
    assert after["status"] == "cancelled" and after["error"] is None
    assert not alive(st["supervisor_pid"]) and not alive(st["pid"])
    wait_until(lambda: not alive(grandchild), 20, "the grandchild's death")


def test_stop_does_not_wait_out_its_grace_for_a_frozen_supervisor(
    tmp_path: Path, strays: list[int]
) -> None:
    """With a grace far past the test's timeout, the stop still returns: a frozen
    supervisor is never waited for."""
    job_id, _ = daemonizing_job(tmp_path, strays)
    st = status(job_id)
    strays.append(st["supervisor_pid"])
    os.kill(st["supervisor_pid"], signal.SIGSTOP)
    store = JobStore(root() / ".specialists", news=NEWS)
    outcome = stop_job(store, job_id, ack_timeout=600, stop_timeout=600)
    assert outcome.kind == "cancelled"


def test_a_stop_asked_before_the_supervisor_died_is_recorded_as_cancelled(
    tmp_path: Path, strays: list[int]
) -> None:
    """Whoever recovers the job (here `status`) records what was asked: the stop request
    waits in the inbox of the supervisor that froze and then died."""
    job_id, grandchild = daemonizing_job(tmp_path, strays)
    st = status(job_id)
    os.kill(st["supervisor_pid"], signal.SIGSTOP)
    post_request(job_dir(job_id), "stop")
    os.kill(st["supervisor_pid"], signal.SIGKILL)
    wait_until(lambda: not alive(st["supervisor_pid"]), 20, "the supervisor's death")
    after = status(job_id)
    assert after["status"] == "cancelled" and after["error"] is None
    wait_until(lambda: not alive(grandchild), 20, "the grandchild's death")
    feed = sp("feed", "--job", job_id, "--json").stdout.splitlines()
    assert json.loads(feed[-1])["event"] == "cancelled"


def test_a_crash_nobody_asked_for_is_still_a_crash(tmp_path: Path, strays: list[int]) -> None:
    """A steer waiting in the inbox is no stop: the job ends `error: supervisor crashed`."""
    job_id, _ = daemonizing_job(tmp_path, strays)
    st = status(job_id)
    os.kill(st["supervisor_pid"], signal.SIGSTOP)
    post_request(job_dir(job_id), "steer", "look at x")
    os.kill(st["supervisor_pid"], signal.SIGKILL)
    wait_until(lambda: not alive(st["supervisor_pid"]), 20, "the supervisor's death")
    after = status(job_id)
    assert after["status"] == "error" and after["error"] == "supervisor crashed"


def test_stop_of_a_healthy_supervisor_still_stops_gracefully(
    tmp_path: Path, strays: list[int]
) -> None:
    """The usual path is unchanged: the supervisor takes the request and ends the job."""
    job_id, _ = daemonizing_job(tmp_path, strays)
    out = sp("stop", job_id)
    assert out.returncode == 0, out.stderr
    kinds = [
        json.loads(x)["event"] for x in sp("feed", "--job", job_id, "--json").stdout.splitlines()
    ]
    assert "stopping" in kinds and kinds[-1] == "cancelled"
    assert "recovered" not in sp("feed", "--job", job_id, "--json").stdout


def test_stop_right_after_the_launch_waits_for_the_starting_supervisor(
    tmp_path: Path, strays: list[int]
) -> None:
    """Until its supervisor runs, a job's status names its launcher (gone already): that
    is no frozen or dead supervisor to SIGKILL, and the stop is still taken and done."""
    command_spec("sleeper", "sleep 300")
    for _ in range(3):
        job_id = start("sleeper")
        out = sp("stop", job_id)
        assert out.returncode == 0, out.stderr
        assert status(job_id)["status"] == "cancelled"
