"""PiRunner driving the real pi 1.6.0 against the mock LLM (tests/support/mock_llm.py).

Each test starts pi (about 1 s of Node start-up); everything runs on 127.0.0.1 in the
isolated environment from tests/conftest.py.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from specialists.runners.base import (
    Abort,
    Activity,
    AgentExited,
    AnswerDelta,
    Close,
    FollowUp,
    Kill,
    LaunchSpec,
    RunFinished,
    RunnerEvent,
    Steer,
    Terminate,
    Usage,
)
from specialists.runners.pi import PiRunner
from tests.support.agent_env import AgentEnv
from tests.support.mock_llm import MockLLM, Reply, ToolCall

pytestmark = pytest.mark.integration

SYSTEM = "You are the integration-test specialist. Answer tersely."


class Driver:
    def __init__(self, runner: PiRunner) -> None:
        self.runner = runner
        self.events: list[RunnerEvent] = []

    def until(self, pred: Callable[[RunnerEvent], bool], timeout: float = 90.0) -> RunnerEvent:
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for ev in self.events[seen:]:
                if pred(ev):
                    return ev
            seen = len(self.events)
            if time.monotonic() > deadline:
                kinds = [getattr(e, "event", e.kind) for e in self.events]
                raise AssertionError(f"timed out; events so far: {kinds}")
            self.events.extend(self.runner.poll(0.1))

    def finished(self, after: int = 0) -> RunFinished:
        ev = self.until(lambda e: isinstance(e, RunFinished) and self.events.index(e) >= after)
        assert isinstance(ev, RunFinished)
        return ev

    def exited(self) -> AgentExited:
        ev = self.until(lambda e: isinstance(e, AgentExited))
        assert isinstance(ev, AgentExited)
        return ev

    def logged(self) -> list[tuple[str, dict[str, Any]]]:
        return [(e.event, dict(e.fields)) for e in self.events if isinstance(e, Activity) and e.log]


@pytest.fixture
def launch(
    mock_llm: MockLLM, pi_bin: Path, isolated_env: AgentEnv, tmp_path: Path
) -> Iterator[Callable[..., Driver]]:
    runners: list[PiRunner] = []

    def _launch(prompt: str, job: str = "job1", **kw: Any) -> Driver:
        spec = LaunchSpec(
            job_id=job,
            job_dir=tmp_path / job,
            cwd=isolated_env.project,
            prompt=prompt,
            system_prompt=SYSTEM,
            model="mock/mock-model",
            options={"pi_bin": str(pi_bin), **kw.pop("options", {})},
            **kw,
        )
        runner = PiRunner()
        runners.append(runner)
        runner.start(spec)
        return Driver(runner)

    yield _launch
    for runner in runners:
        runner.send(Kill())


def test_text_run_then_follow_up_in_the_same_process(launch: Any, mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply("The answer is DONE.", chunk_size=4), Reply("Second DONE."))
    d = launch("Say DONE.")
    first = d.finished()
    assert (first.text, first.error) == ("The answer is DONE.", None)
    assert first.session_file is not None and Path(first.session_file).is_file()
    assert "".join(e.text for e in d.events if isinstance(e, AnswerDelta)) == first.text
    assert [k for k, _ in d.logged()] == ["text", "turn_end"]
    assert any(isinstance(e, Usage) and e.output_tokens > 0 for e in d.events)
    assert d.runner.startup_s is not None and d.runner.startup_s > 0  # a figure, not a target
    print(f"pi startup (spawn -> first stdout line): {d.runner.startup_s:.2f} s")

    [request] = mock_llm.model_requests
    assert SYSTEM in request.system_text()
    assert request.tool_names() == ["read", "bash", "edit", "write", "grep", "find", "ls"]

    mark = len(d.events)
    d.runner.send(FollowUp("And again?"))
    second = d.finished(after=mark)
    assert second.text == "Second DONE."
    assert mock_llm.model_requests[-1].last_user_text() == "And again?"
    d.runner.send(Close())
    assert (d.exited().exit_code, d.exited().signal) == (0, None)


def test_tool_call_run_read_only(launch: Any, mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply(tool_calls=[ToolCall("bash", {"command": "echo hi"})]), Reply("DONE"))
    d = launch("Run echo hi using bash, then say DONE.", permission="READ_ONLY")
    done = d.finished()
    assert (done.text, done.error) == ("DONE", None)
    logged = d.logged()
    assert [k for k, _ in logged] == [
        "toolcall",
        "tool_execution_end",
        "turn_end",
        "text",
        "turn_end",
    ]
    assert logged[0][1] == {"tool": "bash", "args": "echo hi"}
    assert logged[1][1]["tool"] == "bash" and "is_error" not in logged[1][1]  # it worked
    assert logged[1][1]["duration_ms"] >= 0
    requests = mock_llm.model_requests
    assert requests[0].tool_names() == ["read", "bash", "grep", "find", "ls"]
    assert requests[1].tool_results() == ["hi\n"]


def test_abort_mid_stream_keeps_partial_text(launch: Any, mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply("tok0 tok1 tok2 tok3 tok4 tok5", chunk_size=5, hang_after=3))
    d = launch("Stream something long.")
    d.until(lambda e: isinstance(e, AnswerDelta))
    mock_llm.wait_until_hanging()
    d.runner.send(Abort())
    done = d.finished()
    assert done.error == "aborted"
    assert done.text is not None and done.text.startswith("tok0") and "tok5" not in done.text
    d.runner.send(Close())
    assert d.exited().exit_code == 0


def test_sigterm_mid_run(launch: Any, mock_llm: MockLLM) -> None:
    mock_llm.enqueue(Reply("never finished", hang_after=0))
    d = launch("Hang.")
    mock_llm.wait_until_hanging(timeout=30)
    d.runner.send(Terminate())
    exited = d.exited()
    assert (exited.exit_code, exited.signal) == (143, None)
    assert not [e for e in d.events if isinstance(e, RunFinished)]


def test_steer_reaches_the_next_model_call(launch: Any, mock_llm: MockLLM) -> None:
    slow_tool = ToolCall("bash", {"command": "sleep 1; echo slept"})
    mock_llm.enqueue(Reply(tool_calls=[slow_tool]), Reply("DONE"))
    d = launch("Run the slow command, then say DONE.")
    d.until(lambda e: isinstance(e, Activity) and e.event == "tool_execution")
    d.runner.send(Steer("STEER-MARKER: mention cats"))
    ack = d.until(lambda e: isinstance(e, Activity) and e.event == "steer_ack")
    assert isinstance(ack, Activity) and ack.fields["as_prompt"] is False
    assert d.finished().text == "DONE"
    second = mock_llm.model_requests[1]
    assert "STEER-MARKER: mention cats" in second.last_user_text()
    assert second.tool_results() == ["slept\n"]


def test_continue_by_reusing_the_session_file(
    launch: Any, mock_llm: MockLLM, tmp_path: Path
) -> None:
    mock_llm.enqueue(Reply("FIRST-ANSWER-42"), Reply("You said FIRST-ANSWER-42."))
    first = launch("Remember a number.", job="job1")
    assert first.finished().text == "FIRST-ANSWER-42"
    first.runner.send(Close())
    assert first.exited().exit_code == 0

    old = Path(first.runner.handle.session_ref or "")
    new = tmp_path / "job2" / "session.jsonl"
    new.parent.mkdir()
    shutil.copy(old, new)  # the caller copies the old session into the new job dir
    second = launch("What did you answer before?", job="job2", resume_session=str(new))
    assert second.finished().text == "You said FIRST-ANSWER-42."
    assert second.runner.handle.session_ref == str(new)

    history = mock_llm.model_requests[-1].messages()
    said = [m for m in history if m.get("role") == "assistant"]
    assert "FIRST-ANSWER-42" in json.dumps(said)
    assert history[-1]["role"] == "user"


def test_auto_retry_is_one_run_not_several(
    launch: Any, mock_llm: MockLLM, isolated_env: AgentEnv
) -> None:
    settings = {"retry": {"baseDelayMs": 50, "provider": {"maxRetries": 0}}}
    (isolated_env.pi_agent_dir / "settings.json").write_text(json.dumps(settings))
    mock_llm.enqueue(Reply.server_error("mock internal error"), Reply("DONE after retry"))
    d = launch("Say DONE.")
    done = d.finished()
    assert (done.text, done.error) == ("DONE after retry", None)
    retries = [f for k, f in d.logged() if k == "retry"]
    assert len(retries) == 1 and retries[0]["attempt"] == 1
    assert len([e for e in d.events if isinstance(e, RunFinished)]) == 1


def test_follow_up_during_a_run_is_answered_in_the_same_run(launch: Any, mock_llm: MockLLM) -> None:
    mock_llm.enqueue(
        Reply("first part of a slow answer", chunk_size=3, chunk_delay=0.05),
        Reply("FOLLOW-UP DONE"),
    )
    d = launch("Answer slowly.")
    d.until(lambda e: isinstance(e, AnswerDelta))
    d.runner.send(FollowUp("FOLLOW-UP-MARKER"))
    done = d.finished()
    assert (done.text, done.error) == ("FOLLOW-UP DONE", None)
    assert mock_llm.model_requests[-1].last_user_text() == "FOLLOW-UP-MARKER"
    d.runner.send(Close())
    d.exited()
    assert len([e for e in d.events if isinstance(e, RunFinished)]) == 1


def test_the_fallback_model_answers_when_the_primary_fails(launch: Any, mock_llm: MockLLM) -> None:
    """pi's own `set_model`, then the same message again: the fallback answers."""
    mock_llm.enqueue(Reply.bad_request("mock-model is not available"), Reply("FROM-FALLBACK"))
    d = launch("Say something.", fallback_model="mock/mock-text")
    done = d.finished()
    assert (done.text, done.error) == ("FROM-FALLBACK", None)
    models = [r.model for r in mock_llm.model_requests]
    assert models[0] == "mock-model" and models[-1] == "mock-text", models
    asked = [r.last_user_text() for r in mock_llm.model_requests]
    assert asked[-1] == "Say something."
    notices = [f["message"] for k, f in d.logged() if k == "notice"]
    assert any(m.startswith("falling back to mock/mock-text") for m in notices), notices


def test_a_chosen_extension_loads_and_the_users_own_do_not(
    launch: Any, mock_llm: MockLLM, isolated_env: AgentEnv, tmp_path: Path
) -> None:
    """--no-extensions keeps the user's extension directory out; `-e` brings back exactly
    the chosen ones (one given by path, one by name from that same directory)."""
    markers = tmp_path / "markers"
    markers.mkdir()

    def extension(path: Path, name: str) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        target = json.dumps(str(markers / name))
        path.write_text(
            'import { writeFileSync } from "node:fs";\n'
            f'export default function () {{ writeFileSync({target}, "loaded"); }}\n'
        )
        return path

    user_dir = isolated_env.pi_agent_dir / "extensions"
    extension(user_dir / "users-own.ts", "users-own")
    extension(user_dir / "quality-gates" / "index.ts", "quality-gates")
    chosen = extension(tmp_path / "chosen.ts", "chosen")
    mock_llm.enqueue(Reply("OK"))
    d = launch("hi", options={"extensions": [str(chosen), "quality-gates"]})
    assert d.finished().text == "OK"
    loaded = sorted(p.name for p in markers.iterdir())
    assert loaded == ["chosen", "quality-gates"], loaded


def test_a_job_with_our_extension_offers_its_tools_to_the_model(
    launch: Any, mock_llm: MockLLM
) -> None:
    """What a builtin specialist gets on pi 1.6.0 by default (supervise/plan.py)."""
    mock_llm.enqueue(Reply("DONE"))
    d = launch("Say DONE.", options={"specialists_extension": True})
    assert d.finished().text == "DONE"
    names = mock_llm.model_requests[0].tool_names()
    assert {"bg_run", "sleep", "spawn_thread", "bash"} <= set(names), names
    assert not [f for k, f in d.logged() if k == "notice"]


def test_our_extension_failing_to_load_is_said_and_the_job_goes_on_without_it(
    launch: Any, mock_llm: MockLLM, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """pi 1.6.0 refuses to start when an extension fails to load; the job restarts pi
    without ours and records why, where a person reads it."""
    import specialists.pi_extension as ext

    broken_dir = tmp_path / "site" / "specialists" / "pi_extension"
    broken_dir.mkdir(parents=True)
    broken = broken_dir / "index.ts"
    broken.write_text('import { x } from "@earendil-works/no-such-package";\nexport default x;\n')
    monkeypatch.setattr(ext, "EXTENSION_FILE", broken)
    mock_llm.enqueue(Reply("DONE without tools"))
    d = launch("Say DONE.", options={"specialists_extension": True})
    done = d.finished()
    assert (done.text, done.error) == ("DONE without tools", None)
    [notice] = [f for k, f in d.logged() if k == "notice"]
    assert notice["level"] == "error"
    assert notice["message"].startswith("the specialists extension did not load")
    assert "Failed to load extension" in notice["message"] and str(broken) in notice["message"]
    assert "bg_run" not in mock_llm.model_requests[0].tool_names()
