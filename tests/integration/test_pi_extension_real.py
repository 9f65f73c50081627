"""The real pi 1.6.0 with our extension (`-e pi_extension/index.ts`) against the mock LLM.

No network: the model is tests/support/mock_llm.py; the sidecar is this checkout's Python.
Each test proves one rule end to end, through pi's own tool loop:
- a yielding tool ends the turn without another model call, and its event wakes pi with a
  steer message that is the model's next request (R-T1, R-E3); the inbox is acknowledged;
- the bash guard blocks (naming bg_run), warns (a UI notice, the command runs), and sets
  the default timeout (R-B1, R-B4);
- an oversized result is spilled to a file (R-O1);
- the status line and /specialists answer in RPC mode, and print mode waits in place for
  the wake-up (R-U1..R-U3).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from specialists.cli.main import main
from specialists.events.inbox import Inbox
from specialists.pi_extension import EXTENSION_FILE
from tests.support.agent_env import AgentEnv
from tests.support.mock_llm import MockLLM, Reply, Request, ToolCall
from tests.support.pi_rpc import PiSession, eventually, extension_env

pytestmark = pytest.mark.integration


@pytest.fixture
def pi_session(
    pi_bin: Path, mock_llm: MockLLM, isolated_env: AgentEnv, tmp_path: Path
) -> Iterator[Callable[..., PiSession]]:
    sessions: list[PiSession] = []

    def start(**kw: Any) -> PiSession:
        session = PiSession(pi_bin, isolated_env.project, tmp_path / "pi-extension.log", **kw)
        sessions.append(session)
        return session

    yield start
    for session in sessions:
        session.close()


def state_root(env: AgentEnv) -> Path:
    return env.project / ".specialists"


def wakes_with_event(
    session: PiSession, mock_llm: MockLLM, calls: list[ToolCall], kind: str, tool: str
) -> Request:
    """The model makes `calls` (the last one yields); the `kind` event from `tool` must then
    arrive as a steer message that is the model's next request, with no model call between.

    One helper for every yielding path: sleep, and bg_run + sleep_until_event.
    """
    mock_llm.enqueue(*(Reply(tool_calls=[c]) for c in calls), Reply("Woke up. DONE."))
    session.prompt("Start the work, then yield until it reports back.")
    session.wait_agent_end(1)  # the yield ended the run without another model call
    assert len(mock_llm.model_requests) == len(calls)
    requests = mock_llm.wait_for_requests(len(calls) + 1, timeout=60)
    woken = requests[-1]
    text = woken.last_user_text()
    assert text.startswith(f"[specialists event] {kind} from {tool} ("), text
    assert "original_args: " in text and "\n---\n" in text
    session.wait_agent_end(2)
    return woken


def test_sleep_yields_and_the_timer_wakes_pi_with_a_steer_message(
    pi_session: Callable[..., PiSession], mock_llm: MockLLM, isolated_env: AgentEnv
) -> None:
    session = pi_session()
    woken = wakes_with_event(
        session, mock_llm, [ToolCall("sleep", {"seconds": 1, "note": "nap"})], "timer", "sleep"
    )
    assert "nap" in woken.last_user_text()
    tool_results = woken.tool_results()
    assert tool_results and tool_results[-1].startswith("Timer tm-")
    assert woken.ts - mock_llm.model_requests[0].ts >= 1.0  # woken by the timer, not at once
    # The status line showed the timer while it was pending, and cleared after.
    session.ui("setStatus", lambda ln: ln.get("statusText") == "jobs 0, timers 1, threads 0")
    # pi accepted the message, so the sidecar acknowledged it: nothing left to deliver.
    owners = list((state_root(isolated_env) / "owners").iterdir())
    assert [o.name.startswith("pi-") for o in owners] == [True]
    inbox = Inbox(state_root(isolated_env), owners[0].name)
    eventually(lambda: not inbox.has_pending(), what="the sidecar's ack")
    # The tools and the shared guidance reached the model.
    first = mock_llm.model_requests[0]
    assert {"sleep", "sleep_until", "sleep_until_event", "timer_cancel"} <= set(first.tool_names())
    assert "Never poll or sleep in a loop" in first.system_text()


def test_bg_run_then_sleep_until_event_wakes_pi_with_the_job_exit(
    pi_session: Callable[..., PiSession], mock_llm: MockLLM, isolated_env: AgentEnv
) -> None:
    """bg_run returns at once (a proc job under its own supervisor); sleep_until_event
    yields; the command's job_exit arrives as the steer message of pi's next request."""
    session = pi_session()
    calls = [
        ToolCall("bg_run", {"command": "sleep 1; echo built it", "name": "build"}),
        ToolCall("sleep_until_event", {"note": "waiting for the build"}),
    ]
    woken = wakes_with_event(session, mock_llm, calls, "job_exit", "bg_run")
    text = woken.last_user_text()
    assert "(build) exited with code 0 after " in text and text.endswith("built it")
    assert woken.tool_results()[0].startswith("Started background job ")
    assert {"bg_run", "bg_output", "bg_cancel", "bg_list"} <= set(
        mock_llm.model_requests[0].tool_names()
    )


def test_an_event_during_a_turn_is_steered_into_the_next_model_call(
    pi_session: Callable[..., PiSession], mock_llm: MockLLM
) -> None:
    """sleep beside a 3 s bash call: no yield (not every result terminates); the timer fires
    while bash runs, and its event joins the very next model request, same run (R-E3)."""
    mock_llm.enqueue(
        Reply(
            tool_calls=[
                ToolCall("sleep", {"seconds": 1}),
                ToolCall("bash", {"command": "sleep 3; echo slept"}),
            ]
        ),
        Reply("DONE."),
    )
    session = pi_session()
    session.prompt("Sleep and work at once.")
    session.wait_agent_end(1)
    assert len(mock_llm.model_requests) == 2  # one run: the event did not start a second
    after = mock_llm.model_requests[1]
    assert after.tool_results()[-1] == "slept\n"
    assert after.last_user_text().startswith("[specialists event] timer from sleep (")


def test_a_blocking_bash_command_is_refused_with_a_reason_naming_bg_run(
    pi_session: Callable[..., PiSession], mock_llm: MockLLM
) -> None:
    mock_llm.enqueue(Reply(tool_calls=[ToolCall("bash", {"command": "sleep 600"})]), Reply("OK."))
    session = pi_session()
    session.prompt("Wait ten minutes.")
    session.wait_agent_end(1)
    [result] = mock_llm.model_requests[1].tool_results()
    assert result.startswith("Blocked: `sleep 600` would hold this turn")
    assert "bg_run" in result and 'guard = "warn"' in result


def test_warn_mode_runs_the_command_with_a_notice_and_the_default_timeout_applies(
    pi_session: Callable[..., PiSession], mock_llm: MockLLM, isolated_env: AgentEnv
) -> None:
    """warn: the UI hears of it and the command runs; no timeout given -> the default (1 s)."""
    state_root(isolated_env).mkdir(exist_ok=True)
    (state_root(isolated_env) / "config.toml").write_text(
        '[bash]\nguard = "warn"\nsleepLimitSec = 1\ndefaultTimeoutSec = 1\n'
    )
    mock_llm.enqueue(
        Reply(tool_calls=[ToolCall("bash", {"command": "echo start; sleep 30; echo never"})]),
        Reply("OK."),
    )
    session = pi_session()
    session.prompt("Run it.")
    notice = session.ui("notify", lambda ln: "may hold this turn" in ln.get("message", ""))
    assert notice["notifyType"] == "warning" and "`sleep 30`" in notice["message"]
    session.wait_agent_end(1)
    [result] = mock_llm.model_requests[1].tool_results()
    assert "start" in result and "never" not in result
    assert result.endswith("Command timed out after 1 seconds"), result


def test_an_oversized_tool_result_is_spilled_to_a_file(
    pi_session: Callable[..., PiSession], mock_llm: MockLLM, isolated_env: AgentEnv
) -> None:
    """45,000 characters (under pi's own 50 KB cut, over our 40,000) -> head, path, tail."""
    command = "head -c 45000 /dev/zero | tr '\\0' x; echo; echo THE-END"
    mock_llm.enqueue(Reply(tool_calls=[ToolCall("bash", {"command": command})]), Reply("OK."))
    session = pi_session()
    session.prompt("Print a lot.")
    session.wait_agent_end(1)
    [result] = mock_llm.model_requests[1].tool_results()
    assert len(result) < 10_000 and result.startswith("x" * 6000) and "THE-END" in result
    assert "characters omitted; the full text is in " in result
    path = Path(result.split("the full text is in ", 1)[1].split(". Use the read tool", 1)[0])
    assert path.is_file() and path.read_text().count("x") == 45_000
    assert path.is_relative_to(state_root(isolated_env) / "owners")


def test_the_specialists_command_answers_in_rpc_mode(
    pi_session: Callable[..., PiSession], mock_llm: MockLLM
) -> None:
    session = pi_session()
    session.prompt("/specialists")
    overview = session.ui("notify", lambda ln: "specialists for pi-" in ln.get("message", ""))
    assert "timers: 0 pending" in overview["message"] and "bash guard: block" in overview["message"]
    mark = len(session.lines)
    session.prompt("/specialists frobnicate")
    error = session.ui(
        "notify", lambda ln: "usage: /specialists" in ln.get("message", ""), after=mark
    )
    assert error["notifyType"] == "error"
    assert mock_llm.model_requests == []  # commands never reach the model


def test_install_pi_makes_plain_pi_load_the_extension(
    pi_session: Callable[..., PiSession],
    mock_llm: MockLLM,
    isolated_env: AgentEnv,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """After `specialists install --pi`, pi without -e has our tools and command, in a
    project pi trusts (pi 1.x skips an untrusted project's settings in RPC mode, silently;
    install says so), started from a shell whose PATH lacks our virtualenv and without
    SPECIALISTS_CMD: the extension starts its sidecar with the interpreter install recorded."""
    assert main(["install", "--pi"]) == 0
    assert "only in a trusted project" in capsys.readouterr().out
    mock_llm.enqueue(Reply("Untrusted."), Reply("Hello."))
    untrusted = pi_session(installed=True)
    untrusted.prompt("Hi.")
    untrusted.wait_agent_end(1)
    assert "sleep_until_event" not in mock_llm.model_requests[0].tool_names()
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin)
    env = {k: v for k, v in os.environ.items() if k != "SPECIALISTS_CMD"} | {"PATH": path}
    session = pi_session(installed=True, extra_args=["--approve"], env=env)
    session.prompt("Hi.")
    session.wait_agent_end(1)
    assert "sleep_until_event" in mock_llm.model_requests[1].tool_names()
    assert main(["uninstall", "--pi"]) == 0
    assert not (isolated_env.project / ".pi" / "settings.json").exists()


def test_install_pi_user_loads_the_extension_in_any_project(
    pi_session: Callable[..., PiSession], mock_llm: MockLLM
) -> None:
    assert main(["install", "--pi", "--user"]) == 0
    mock_llm.enqueue(Reply("Hello."))
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != venv_bin)
    env = {k: v for k, v in os.environ.items() if k != "SPECIALISTS_CMD"} | {"PATH": path}
    session = pi_session(installed=True, env=env)
    session.prompt("Hi.")
    session.wait_agent_end(1)
    assert "sleep_until_event" in mock_llm.model_requests[0].tool_names()
    assert main(["uninstall", "--pi", "--user"]) == 0


def test_print_mode_waits_in_place_for_the_wake_up(
    pi_bin: Path, mock_llm: MockLLM, isolated_env: AgentEnv, tmp_path: Path
) -> None:
    """`pi -p` has no later: the yielding tool waits (bounded) and the event still arrives."""
    mock_llm.enqueue(Reply(tool_calls=[ToolCall("sleep", {"seconds": 1})]), Reply("Woke. DONE."))
    env = extension_env(dict(os.environ), tmp_path / "pi-extension.log")
    argv = [str(pi_bin), "-p", "--no-extensions", "-e", str(EXTENSION_FILE)]
    argv += ["--provider", "mock", "--model", "mock-model", "Sleep a second, then say DONE."]
    proc = subprocess.run(
        argv,
        cwd=isolated_env.project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Woke. DONE."
    [first, woken] = mock_llm.model_requests
    assert woken.last_user_text().startswith("[specialists event] timer from sleep (")
    assert woken.ts - first.ts >= 1.0


JOB_SPEC = """\
metadata:
  name: waiter
  description: a pi specialist with the specialists tools
execution:
  runner: {type: pi, specialists_extension: true}
  model: mock/mock-model
  permission_required: LOW
prompt:
  system: You are a careful tester.
  task_template: "$prompt"
"""


def test_a_pi_job_loads_the_extension_and_its_owner_is_the_job(
    pi_bin: Path, mock_llm: MockLLM, isolated_env: AgentEnv
) -> None:
    """`runner: {type: pi, specialists_extension: true}`: -e under --no-extensions, and the
    sidecar serves the tools for owner job-<id> (SPECIALISTS_JOB_ID from the supervisor)."""
    (isolated_env.project / "specialists").mkdir()
    (isolated_env.project / "specialists" / "waiter.specialist.yaml").write_text(JOB_SPEC)
    mock_llm.enqueue(Reply(tool_calls=[ToolCall("timer_cancel", {"all": True})]), Reply("DONE"))
    run = subprocess.run(
        [sys.executable, "-m", "specialists", "run", "waiter", "--prompt", "Cancel my timers."],
        cwd=isolated_env.project,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 0, run.stderr
    assert "DONE" in run.stdout
    first, second = mock_llm.model_requests
    assert "timer_cancel" in first.tool_names()
    assert second.tool_results() == ["Cancelled 0 pending timer(s)."]
    [job_dir] = (state_root(isolated_env) / "jobs").iterdir()
    assert (state_root(isolated_env) / "owners" / f"job-{job_dir.name}").is_dir()


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


def test_a_missing_sidecar_is_reported_once_and_pi_keeps_working(
    pi_session: Callable[..., PiSession], mock_llm: MockLLM
) -> None:
    """No sidecar: one warning (with the log's path), no tools of ours, pi itself unharmed."""
    mock_llm.enqueue(
        Reply(tool_calls=[ToolCall("bash", {"command": "echo still-here"})]), Reply("OK.")
    )
    session = pi_session(env={**os.environ, "SPECIALISTS_CMD": "/no/such/specialists"})
    warning = session.ui("notify", lambda ln: "sidecar" in ln.get("message", ""))
    assert warning["notifyType"] == "warning" and "pi-extension.log" in warning["message"]
    session.prompt("Echo something.")
    session.wait_agent_end(1)
    assert mock_llm.model_requests[1].tool_results() == ["still-here\n"]
    assert "sleep" not in mock_llm.model_requests[0].tool_names()
    assert "ENOENT" in session.log_file.read_text()


def test_a_killed_sidecar_is_restarted_and_the_tools_work_again(
    pi_session: Callable[..., PiSession], mock_llm: MockLLM
) -> None:
    session = pi_session()
    eventually(lambda: "tools registered" in session.log(), 60, "the tool listing")
    [sidecar] = _children(session.proc.pid)
    os.kill(sidecar, signal.SIGKILL)
    session.ui("notify", lambda ln: "restarting it" in ln.get("message", ""))
    eventually(
        lambda: len(_children(session.proc.pid)) == 1 and _children(session.proc.pid) != [sidecar]
    )
    mock_llm.enqueue(Reply(tool_calls=[ToolCall("timer_cancel", {"all": True})]), Reply("OK."))
    session.prompt("Cancel my timers.")
    session.wait_agent_end(1)
    assert mock_llm.model_requests[1].tool_results() == ["Cancelled 0 pending timer(s)."]
