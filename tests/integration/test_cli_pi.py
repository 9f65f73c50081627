"""The whole job system through the CLI, driving the REAL pi 1.6.0 against the mock LLM.

Every test runs `python -m specialists ...` as a user would, in a temp git project whose
specialist `tester` uses pi with the mock provider.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.mock_llm import MockLLM, Reply, ToolCall
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

SPEC = """\
metadata:
  name: tester
  description: test specialist
execution:
  runner: pi
  model: mock/mock-model
  permission_required: LOW
{extra}
prompt:
  system: You are a careful tester.
  task_template: "$prompt"
"""


def sp(*args: str, input: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "specialists", *args],
        cwd=os.environ["SPECIALISTS_PROJECT_ROOT"],
        capture_output=True,
        text=True,
        input=input,
        timeout=timeout,
    )


def write_spec(extra: str = "") -> None:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / "specialists").mkdir(exist_ok=True)
    (root / "specialists" / "tester.specialist.yaml").write_text(SPEC.format(extra=extra))


def status(job_id: str) -> dict:
    out = sp("status", "--job", job_id, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def events(job_id: str) -> list[dict]:
    out = sp("feed", "--job", job_id, "--json")
    return [json.loads(line) for line in out.stdout.splitlines()]


def start(prompt: str, *extra: str) -> str:
    out = sp("run", "tester", "--prompt", prompt, "--background", *extra)
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    assert len(job_id) == 8, out.stdout
    return job_id


@pytest.fixture(autouse=True)
def _spec(pi_bin: Path, mock_llm: MockLLM) -> None:
    write_spec()


def test_background_run_to_done_with_tool_call(mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply(tool_calls=(ToolCall("bash", {"command": "echo hi"}),)), Reply("DONE"))
    t0 = time.monotonic()
    job_id = start("Run echo hi, then say DONE.")
    assert time.monotonic() - t0 < 5  # returns at once, the supervisor is detached
    out = sp("result", job_id, "--wait", "--timeout", "60s")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "DONE"
    st = status(job_id)
    assert st["status"] == "done" and st["tool_calls"] == 1 and st["runner"] == "pi"
    kinds = [e["event"] for e in events(job_id)]
    assert kinds[0] == "starting" and kinds[-1] == "done"
    assert "toolcall" in kinds and "tool_execution_end" in kinds
    assert not any("delta" in k for k in kinds)
    # The prompt reached the model with the specialist's system prompt appended.
    first = mock_llm.model_requests[0]
    assert "careful tester" in first.system_text()
    assert "Run echo hi" in first.last_user_text()
    # feed --follow on a finished job prints through the final event and exits.
    follow = sp("feed", "--job", job_id, "--follow", timeout=20)
    assert follow.returncode == 0 and follow.stdout.strip().splitlines()[-1].split()[3] == "done"
    # No process of the job is left behind.
    assert not _alive(st["supervisor_pid"]) and not _alive(st["pid"])


def test_foreground_run_streams_answer_and_exits(mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply("streamed answer here"))
    out = sp("run", "tester", "--prompt", "hello")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "streamed answer here\n"
    assert "done" in out.stderr


def test_result_of_running_job_exits_1_with_status(mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply("slow", hang_after=1))
    job_id = start("hang please")
    mock_llm.wait_until_hanging(1, timeout=30)
    out = sp("result", job_id)
    assert out.returncode == 1 and "running" in out.stderr
    assert sp("stop", job_id).returncode == 0
    mock_llm.release()


def test_stop_mid_run_cancels_and_kills_agent(mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply("partial", hang_after=2))
    job_id = start("hang please")
    mock_llm.wait_until_hanging(1, timeout=30)
    agent_pid = status(job_id)["pid"]
    out = sp("stop", job_id)
    assert out.returncode == 0, out.stderr
    assert "cancelled" in out.stdout
    st = status(job_id)
    assert st["status"] == "cancelled"
    assert sp("result", job_id).returncode == 1
    wait_until(lambda: not _alive(agent_pid), 60, "agent to die")
    again = sp("stop", job_id)
    assert again.returncode == 0 and "already cancelled" in again.stdout
    mock_llm.release()


def test_timeout_ends_job_in_error(mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply("x", hang_after=1))
    job_id = start("hang", "--timeout", "3s")
    wait_until(lambda: status(job_id)["status"] == "error", 60, "timeout")
    assert status(job_id)["error"] == "timeout after 3s"
    mock_llm.release()


def test_continue_and_resume_keep_the_conversation(mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply("The secret is 42."), Reply("You said 42."), Reply("Still 42."))
    first = start("Remember the secret.")
    assert sp("result", first, "--wait", "--timeout", "60s").returncode == 0
    second = sp("run", "tester", "--continue", first, "--prompt", "What was it?", "--background")
    assert second.returncode == 0, second.stderr
    second_id = second.stdout.strip()
    out = sp("result", second_id, "--wait", "--timeout", "60s")
    assert out.stdout.strip() == "You said 42."
    history = json.dumps(mock_llm.model_requests[-1].messages())
    assert "The secret is 42." in history and "Remember the secret." in history
    assert status(second_id)["parent_id"] == first
    third = sp("resume", second_id[:5], "--prompt", "And now?")
    assert third.returncode == 0, third.stderr
    assert third.stdout.strip() == "Still 42."
    assert "What was it?" in json.dumps(mock_llm.model_requests[-1].messages())


def test_steer_reaches_running_agent(mock_llm: MockLLM) -> None:
    mock_llm.enqueue(
        Reply(tool_calls=(ToolCall("bash", {"command": "sleep 2; echo slept"}),)),
        Reply("finished after steering"),
    )
    job_id = start("Sleep then answer.")
    wait_until(lambda: status(job_id)["tool_calls"] >= 1, 60, "tool call")
    out = sp("steer", job_id, "Also mention bananas.")
    assert out.returncode == 0, out.stderr
    assert "delivered" in out.stdout
    assert sp("result", job_id, "--wait", "--timeout", "60s").returncode == 0
    texts = json.dumps([r.messages() for r in mock_llm.model_requests])
    assert "bananas" in texts


def test_keep_alive_follow_up(mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply("first answer"), Reply("second answer"))
    job_id = start("one", "--keep-alive")
    wait_until(lambda: status(job_id)["status"] == "waiting", 60, "waiting")
    out = sp("result", job_id)
    assert out.returncode == 0 and out.stdout.strip() == "first answer"
    fu = sp("follow-up", job_id, "two")
    assert fu.returncode == 0 and "delivered" in fu.stdout, fu.stdout + fu.stderr
    wait_until(lambda: len(mock_llm.model_requests) >= 2, 60, "second request")
    wait_until(lambda: status(job_id)["status"] == "waiting", 60, "waiting again")
    assert sp("result", job_id).stdout.strip() == "second answer"
    assert sp("stop", job_id).returncode == 0
    assert status(job_id)["status"] == "done"
    assert sp("result", job_id).stdout.strip() == "second answer"


def test_kill_9_of_supervisor_is_recovered(mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply("never", hang_after=1))
    job_id = start("hang")
    mock_llm.wait_until_hanging(1, timeout=30)
    st = status(job_id)
    os.kill(st["supervisor_pid"], signal.SIGKILL)
    wait_until(lambda: not _alive(st["supervisor_pid"]), 60, "supervisor death")
    after = status(job_id)
    assert after["status"] == "error" and after["error"] == "supervisor crashed"
    wait_until(lambda: not _alive(st["pid"]), 60, "agent death")  # died with its supervisor
    assert events(job_id)[-1]["event"] == "error"
    mock_llm.release()


def test_pi_missing_from_path_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing agent CLI is exit 3 with the install hint, found before any job exists."""
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + ":/usr/bin:/bin")
    monkeypatch.setenv("SPECIALISTS_PI_BIN", "/nonexistent/pi")
    jobs = Path(os.environ["SPECIALISTS_PROJECT_ROOT"]) / ".specialists" / "jobs"
    for extra in (["--background"], []):
        out = sp("run", "tester", "--prompt", "x", *extra)
        assert out.returncode == 3, out.stderr
        (line,) = out.stderr.splitlines()
        assert line.startswith("error: pi is not installed") and "npm install" in line
    assert not jobs.exists() or [p for p in jobs.iterdir() if p.name[0] != "."] == []


def test_bad_input_one_line_errors() -> None:
    cases = [
        (("run", "testr", "--prompt", "x"), "did you mean"),
        (("result", "../../etc"), "invalid job id"),
        (("status", "--job", "zzzz"), "invalid job id"),
        (("result", "abcdef12"), "no job"),
        (("steer", "abcdef12", "hi"), "no job"),
    ]
    for args, needle in cases:
        out = sp(*args)
        assert out.returncode != 0, args
        assert needle in out.stderr, (args, out.stderr)
        assert "Traceback" not in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_provider_error_ends_job_with_its_message(mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply.bad_request("model does not support this request"))
    job_id = start("anything")
    wait_until(lambda: status(job_id)["status"] == "error", 60, "error")
    error = status(job_id)["error"]
    assert "does not support this request" in error, error
    assert sp("result", job_id).returncode == 1


def test_slow_stream_is_not_a_stall_and_completes(mock_llm: MockLLM) -> None:
    """Each chunk of pi's stream is agent output: a stream (~4.6 s in 92 chunks) longer than
    the stall limit is never a stall. Only the stream is judged: on a busy machine pi may
    take longer than the limit to start, and that quiet time is rightly a stall. (The timer
    logic itself is tested on a fake clock: test_supervisor.py.)"""
    write_spec("  stall_timeout_ms: 3000")
    mock_llm.enqueue(Reply("slow but steady " * 23, chunk_size=4, chunk_delay=0.05))
    job_id = start("slow please")
    out = sp("result", job_id, "--wait", "--timeout", "120s")
    assert out.returncode == 0 and out.stdout.startswith("slow but steady")
    kinds = [e["event"] for e in events(job_id)]
    assert "stalled" not in kinds[kinds.index("text") :], kinds


def test_a_missing_skill_path_is_a_warning_in_events_not_fatal(mock_llm: MockLLM) -> None:
    """Seed 000 4.1: a skills.paths entry that does not exist is logged as a warning in
    events.jsonl; the job runs with the skills that do exist."""
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    present = root / "skills" / "present"
    present.mkdir(parents=True)
    (present / "SKILL.md").write_text("---\nname: present\ndescription: a skill\n---\nUse it.\n")
    missing = root / "skills" / "missing"
    spec_file = root / "specialists" / "tester.specialist.yaml"
    spec_file.write_text(spec_file.read_text() + f"skills:\n  paths: [{present}, {missing}]\n")
    mock_llm.enqueue(Reply("DONE"))
    job_id = start("anything")
    out = sp("result", job_id, "--wait", "--timeout", "120s")
    assert out.returncode == 0 and out.stdout.strip() == "DONE", out.stderr
    warnings = [e for e in events(job_id) if e["event"] == "notice" and e.get("level") == "warning"]
    assert [(w["message"], w["path"]) for w in warnings] == [
        ("skill path not found; skipped", str(missing))
    ]
    # `--skill` loads under `--no-skills` (pi 1.6.0 lists it in the system prompt)
    system = mock_llm.model_requests[0].system_text()
    assert "present" in system and "a skill" in system, system[-1500:]


def test_pi_without_a_credential_is_refused_before_a_job_exists(
    pi_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pi installed, no key for the model's provider (no variable, no login, no models.json
    entry): `run` exits 3 with one line, in the foreground and the background, and leaves
    no job. The real pi agrees: given the same job, it rejects the prompt."""
    for key in [k for k in os.environ if k.endswith(("_API_KEY", "_TOKEN"))]:
        monkeypatch.delenv(key)
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / "specialists").mkdir(exist_ok=True)
    (root / "specialists" / "keyless.specialist.yaml").write_text(
        "metadata: {name: keyless, description: t}\n"
        "execution: {runner: pi, model: anthropic/claude-sonnet-4-5}\n"
        'prompt: {task_template: "$prompt"}\n'
    )
    for extra in ((), ("--background",)):
        out = sp("run", "keyless", "--prompt", "hi", *extra)
        assert out.returncode == 3, (out.stdout, out.stderr)
        assert out.stdout == ""
        (line,) = out.stderr.splitlines()
        assert line.startswith("error: pi has no credential for anthropic: set ANTHROPIC_API_KEY")
    assert not (root / ".specialists" / "jobs").exists() or not [
        n for n in os.listdir(root / ".specialists" / "jobs") if not n.startswith(".")
    ]
    rpc = subprocess.run(
        [str(pi_bin), "--mode", "rpc", "--no-extensions", "--provider", "anthropic",
         "--model", "claude-sonnet-4-5", "--no-session"],
        input=json.dumps({"type": "prompt", "id": "1", "message": "hi"}) + "\n",
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "No API key found for anthropic" in rpc.stdout + rpc.stderr
