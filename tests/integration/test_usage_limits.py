"""Usage limits pause, not fail, on real processes: jobs started through the CLI, their own
supervisors and the native runtime over HTTP against the mock LLM, which answers 429 with
the reset headers of a usage limit (OpenAI's `x-ratelimit-reset-*`)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from specialists.features.usage_limits import holds
from specialists.runners.claude import ClaudeRunner
from specialists.runners.codex import CodexRunner
from specialists.store.jobs import JobStore
from specialists.store.news import NEWS
from specialists.supervise.supervisor import Supervisor
from tests.integration.test_cli_pi import events, sp, status, write_spec
from tests.support import fake_claude
from tests.support.agent_env import MOCK_MODEL, AgentEnv, find_agent_bin
from tests.support.jobs import new_job
from tests.support.mock_llm import MockError, MockLLM, Reply, write_mockhttp_project
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

SPEC = """\
metadata:
  name: tester
  description: test specialist
execution:
  runner:
    type: native
    retry_base_delay_s: 0.01
    retry_max_wait_s: 1
  model: mockhttp/mock-model
  permission_required: LOW
prompt:
  system: You are a careful tester.
  task_template: "$prompt"
"""


@pytest.fixture
def project(mock_llm: MockLLM) -> Path:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    os.environ["MOCK_KEY"] = "sk-test"
    return write_mockhttp_project(root, mock_llm.openai_base_url, SPEC)


def run(prompt: str) -> str:
    out = sp("run", "tester", "--background", "--prompt", prompt)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def paused(job_id: str) -> dict[str, Any]:
    return wait_until(
        lambda: (st := status(job_id)).get("paused_until_ms") and st["status"] == "waiting" and st,
        30,
        "the job paused",
    )


def ended(job_id: str, timeout: float = 60) -> dict[str, Any]:
    wait_until(lambda: status(job_id)["status"] in ("done", "error", "cancelled"), timeout, "end")
    return status(job_id)


def kinds(job_id: str) -> list[str]:
    return [e.get("event") for e in events(job_id)]


def test_a_job_pauses_at_a_usage_limit_and_resumes_at_the_reset(
    project: Path, mock_llm: MockLLM
) -> None:
    mock_llm.enqueue(Reply.usage_limited(resets_in=8))
    mock_llm.set_default(Reply("finished after the reset"))
    job_id = run("write the report")
    st = paused(job_id)
    resets_at = st["paused_until_ms"]
    assert resets_at - time.time() * 1000 < 9000
    assert st["current_event"] == "usage_limit" and st["error"] is None
    shown = sp("status").stdout
    line = next(row for row in shown.splitlines() if job_id in row)
    assert "waiting" in line and "paused until" in line and "(usage limit)" in line, line
    hold = json.loads((project / ".specialists" / "holds" / "mockhttp.json").read_text())
    assert hold["until_ms"] == resets_at and hold["job"] == job_id

    # a new job for the same provider is held until the reset, and says so once
    other = run("another task")
    held = wait_until(lambda: (s := status(other))["current_event"] == "held" and s, 20, "held")
    assert held["paused_until_ms"] == resets_at
    assert any(
        row for row in sp("status").stdout.splitlines() if other in row and "held until" in row
    )

    final = ended(job_id)
    assert final["status"] == "done", final
    assert sp("result", job_id).stdout.strip() == "finished after the reset"
    assert ended(other)["status"] == "done"
    took = [e for e in events(job_id) if e.get("event") == "usage_resumed"]
    assert took and took[0]["early"] is False
    assert kinds(job_id).count("usage_limit") == 1
    feed = sp("feed", job_id).stdout
    assert "usage_limit" in feed and "mockhttp: paused until" in feed, feed
    assert "resumed: the limit reset" in feed
    assert "held until" in sp("feed", other).stdout
    held_events = [e for e in events(other) if e.get("event") == "held"]
    assert len(held_events) == 1 and held_events[0]["by"] == job_id
    # the held job's first request left after the reset
    firsts = [r for r in mock_llm.model_requests if r.last_user_text() == "another task"]
    assert firsts and firsts[0].ts * 1000 >= resets_at - 50
    # the resumed run continued the session: the first prompt is still in the conversation
    resumed = next(
        r for r in mock_llm.model_requests if "usage limit has reset" in r.last_user_text()
    )
    assert any("write the report" in str(m.get("content")) for m in resumed.messages())


def test_a_person_stops_a_paused_job(project: Path, mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply.usage_limited(resets_in=120))
    mock_llm.set_default(Reply("never"))
    job_id = run("write the report")
    paused(job_id)
    out = sp("stop", job_id)
    assert out.returncode == 0, out.stderr
    st = ended(job_id, 30)
    assert st["status"] == "cancelled" and st.get("paused_until_ms") is None
    assert len(mock_llm.model_requests) == 1  # it never asked again
    timers = (project / ".specialists").rglob("timers.jsonl")
    ops = [json.loads(line)["op"] for f in timers for line in f.read_text().splitlines()]
    assert ops == ["set", "cancel"]


def test_a_person_resumes_a_paused_job_early(project: Path, mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply.usage_limited(resets_in=120))
    mock_llm.set_default(Reply("resumed early"))
    job_id = run("write the report")
    paused(job_id)
    out = sp("resume", job_id, input="")
    assert out.returncode == 0, out.stderr
    assert f"job {job_id} continues in place" in out.stdout
    st = ended(job_id, 30)
    assert st["status"] == "done"
    assert sp("result", job_id).stdout.strip() == "resumed early"
    took = [e for e in events(job_id) if e.get("event") == "usage_resumed"]
    assert took and took[0]["early"] is True


def test_a_pause_survives_its_supervisor_being_killed(project: Path, mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply.usage_limited(resets_in=10))
    mock_llm.set_default(Reply("finished after a crash"))
    job_id = run("write the report")
    st = paused(job_id)
    first = st["supervisor_pid"]
    os.kill(first, signal.SIGKILL)
    # its keeper (or any reader) finds it dead: a new supervisor takes the pause over
    again = wait_until(
        lambda: (s := status(job_id))["supervisor_pid"] != first and s, 20, "a new supervisor"
    )
    assert again["status"] == "waiting" and again["paused_until_ms"] == st["paused_until_ms"]
    final = ended(job_id)
    assert final["status"] == "done", final
    assert sp("result", job_id).stdout.strip() == "finished after a crash"
    assert len(mock_llm.model_requests) == 2
    resumed = mock_llm.model_requests[-1]
    assert resumed.ts * 1000 >= st["paused_until_ms"] - 50
    assert any("write the report" in str(m.get("content")) for m in resumed.messages())
    notices = [e.get("message", "") for e in events(job_id) if e.get("event") == "notice"]
    assert any("the supervisor restarted; the job stays paused until" in n for n in notices)


def test_a_claude_code_job_pauses_at_its_usage_limit_and_resumes_its_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code's own usage-limit result (a fake `claude` printing it, as 2.x does) pauses
    the job; at the reset a `claude -p --resume <session>` continues the same session."""
    store = JobStore(tmp_path / ".specialists", news=NEWS)
    log = tmp_path / "claude.jsonl"
    monkeypatch.setenv("FAKE_CLAUDE_SCENARIO", "usage_limit")
    monkeypatch.setenv("FAKE_CLAUDE_RESET_S", "3")
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(log))
    agent = fake_claude.install(tmp_path / "bin")
    record, lock = new_job(store, tmp_path, runner="claude", runner_options={"bin": str(agent)})
    try:
        final = Supervisor(store, record, ClaudeRunner(), handle_signals=False).run()
    finally:
        lock.release()
    assert final.status == "done", final.error
    assert store.read_result(record.id) == fake_claude.RECORDED_TEXT
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(runs) == 2
    session = runs[0]["argv"][runs[0]["argv"].index("--session-id") + 1]
    assert runs[1]["argv"][runs[1]["argv"].index("--resume") + 1] == session
    assert "usage limit has reset" in runs[1]["stdin"]
    kinds = [e["event"] for e in store.read_events(record.id)]
    assert kinds.index("usage_limit") < kinds.index("usage_resumed") < kinds.index("done")
    assert holds.held(store.root, "claude", 0) is not None


def test_a_keep_alive_job_keeps_its_answers_across_a_crash_in_the_pause(
    project: Path, mock_llm: MockLLM
) -> None:
    mock_llm.enqueue(Reply("first answer"), Reply.usage_limited(resets_in=10))
    mock_llm.set_default(Reply("second answer"))
    out = sp("run", "tester", "--background", "--keep-alive", "--prompt", "start")
    job_id = out.stdout.strip()
    wait_until(lambda: status(job_id)["status"] == "waiting", 30, "the first answer")
    assert sp("resume", job_id, "--prompt", "go on").returncode == 0
    st = paused(job_id)
    os.kill(st["supervisor_pid"], signal.SIGKILL)
    wait_until(lambda: status(job_id)["supervisor_pid"] != st["supervisor_pid"], 20, "successor")
    wait_until(
        lambda: (s := status(job_id))["status"] == "waiting" and not s.get("paused_until_ms"),
        40,
        "the second answer",
    )
    answers = project / ".specialists" / "jobs" / job_id / "answers"
    assert [p.read_text() for p in sorted(answers.iterdir())] == ["first answer", "second answer"]
    assert sp("stop", job_id).returncode == 0
    assert ended(job_id, 30)["status"] in ("done", "cancelled")


def test_a_pi_job_pauses_at_its_providers_hint_and_goes_on_in_its_session(
    mock_llm: MockLLM, pi_bin: Path, isolated_env: AgentEnv
) -> None:
    """The real pi 1.6.0 (its own retries off) passes the provider's 429 message on; its
    `Please try again in 6s` is the reset. At the reset pi's session goes on."""
    (isolated_env.pi_agent_dir / "settings.json").write_text('{"retry": {"enabled": false}}')
    write_spec()
    message = "Rate limit reached for requests on mock-model. Please try again in 6s."
    mock_llm.enqueue(Reply.rate_limited(retry_after=6, message=message))
    mock_llm.set_default(Reply("pi went on"))
    job_id = run("write the report")
    st = paused(job_id)
    assert 0 < st["paused_until_ms"] - time.time() * 1000 < 7000
    final = ended(job_id)
    assert final["status"] == "done", final
    assert sp("result", job_id).stdout.strip() == "pi went on"
    resumed = mock_llm.model_requests[-1]
    assert resumed.ts * 1000 >= st["paused_until_ms"] - 50
    assert any("write the report" in json.dumps(m) for m in resumed.messages())


def test_a_codex_job_pauses_at_its_usage_limit_and_resumes_its_thread(
    mock_llm: MockLLM, isolated_env: AgentEnv, tmp_path: Path
) -> None:
    """The real Codex 0.171.0 meets the ChatGPT backend's `usage_limit_reached` 429 and says
    `You've hit your usage limit. ... or try again at 3:32 AM.` (to the minute): the job
    pauses to that minute's end, then `codex exec resume` goes on in the same thread. The
    reset is put just before a minute's end, so the wait is under a minute."""
    codex = find_agent_bin("codex")
    if codex is None:
        pytest.skip("codex not installed (scripts/setup installs it under .tools/)")
    now = time.time()
    reset = int(now // 60 * 60 + (60 if now % 60 < 57 else 120)) - 1  # hh:mm:59, 2-60 s away
    said = "The usage limit has been reached"
    body = {"error": {"type": "usage_limit_reached", "message": said, "plan_type": "plus",
                      "resets_at": reset, "resets_in_seconds": 60}}  # fmt: skip
    mock_llm.enqueue(Reply(error=MockError(429, "rate_limit", "", body=json.dumps(body).encode())))
    mock_llm.set_default(Reply("codex went on"))
    store = JobStore(tmp_path / ".specialists", news=NEWS)
    record, lock = new_job(
        store, isolated_env.project, runner="codex", model=MOCK_MODEL,
        runner_options={"bin": str(codex)},
    )  # fmt: skip
    try:
        final = Supervisor(store, record, CodexRunner(), handle_signals=False).run()
    finally:
        lock.release()
    assert final.status == "done", final.error
    assert store.read_result(record.id) == "codex went on"
    evs = store.read_events(record.id)
    limit = next(e for e in evs if e["event"] == "usage_limit")
    assert "hit your usage limit" in limit["error"] and limit["resets_at_ms"] == (reset + 1) * 1000
    assert [e["early"] for e in evs if e["event"] == "usage_resumed"] == [False]
    resumed = mock_llm.model_requests[-1]
    assert resumed.ts >= reset + 1 - 0.05
    assert len(mock_llm.model_requests) == 2  # no request into the same limit
    assert "do it" in json.dumps(resumed.messages())  # the same thread: the task is there
