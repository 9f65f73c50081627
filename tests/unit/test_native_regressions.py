"""Regressions found in review of the native runtime: races between the supervisor thread and
the loop thread, tools that could block a run, session and replay edge cases."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from specialists.config import Config
from specialists.errors import ConfigError, StoreError
from specialists.native.loop import AgentLoop
from specialists.native.messages import AssistantText, ToolCall, ToolResult, UserMessage
from specialists.native.model import ModelRequest, StreamEvent
from specialists.native.providers.replay import ReplayModel
from specialists.native.session import Session
from specialists.native.testing import ScriptedModel, reply, reply_events
from specialists.native.tools import ToolContext, execute, tools_for_permission
from specialists.runners.base import (
    Abort,
    Close,
    FollowUp,
    LaunchSpec,
    RunFinished,
    RunnerEvent,
    Steer,
)
from specialists.runners.native import NativeRunner
from tests.unit.test_native_runner import make_spec


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(var, str(tmp_path / "home" / var.lower()))


def finished_runs(runner: NativeRunner, count: int, timeout: float = 60) -> list[RunFinished]:
    events: list[RunnerEvent] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events += runner.poll(0.1)
        done = [e for e in events if isinstance(e, RunFinished)]
        if len(done) >= count:
            return done
    raise AssertionError(f"fewer than {count} RunFinished within {timeout}s: {events}")


def _blocking(gate: threading.Event, started: threading.Event, text: str) -> Any:
    def stream(_request: ModelRequest) -> Iterator[StreamEvent]:
        started.set()
        gate.wait(10)
        yield from reply_events(reply(text))

    return stream


# --- runner: aborts and steers racing the loop thread ---------------------------------------


class _SlowBuild(NativeRunner):
    """Holds the loop thread in setup until the test lets it go."""

    def __init__(self, gate: threading.Event, **kw: Any) -> None:
        super().__init__(**kw)
        self.gate = gate

    def _build(self, spec: LaunchSpec) -> AgentLoop:
        self.gate.wait(10)
        return super()._build(spec)


def test_abort_before_the_loop_thread_starts_the_run_is_not_lost(tmp_path: Path) -> None:
    """Was: abort() during setup found no loop and was dropped; the whole run went ahead."""
    model = ScriptedModel(["should never be asked"])
    gate = threading.Event()
    runner = _SlowBuild(gate, config=Config(), clients={"test/main": model})
    runner.start(make_spec(tmp_path))
    runner.send(Abort())
    gate.set()
    (finished,) = finished_runs(runner, 1)
    assert finished.error == "aborted"
    assert model.requests == []
    runner.send(Close())
    assert runner.join(60)


def test_abort_after_a_run_ended_does_not_abort_the_next_one(tmp_path: Path) -> None:
    model = ScriptedModel(["first", "second"])
    runner = NativeRunner(config=Config(), clients={"test/main": model})
    runner.start(make_spec(tmp_path))
    finished_runs(runner, 1)
    runner.send(Abort())  # late: the supervisor had not seen the run end yet
    runner.send(FollowUp("more"))
    (second,) = finished_runs(runner, 1)
    assert second.error is None and second.text == "second"
    runner.send(Close())
    assert runner.join(60)


def test_steer_racing_the_end_of_a_run_is_still_answered(tmp_path: Path) -> None:
    """Was: steer() saw the run going, the run then ended and the loop thread went idle, and
    only then was the steer queued: nobody answered it until some later follow-up."""
    gate, started = threading.Event(), threading.Event()
    model = ScriptedModel([_blocking(gate, started, "first"), "answered the steer"])
    runner = NativeRunner(config=Config(), clients={"test/main": model})
    runner.start(make_spec(tmp_path))
    assert started.wait(5)
    loop = runner._loop
    assert loop is not None

    idle = threading.Event()

    class _Watched(AgentLoop):
        @property
        def has_pending_steers(self) -> bool:
            pending = super().has_pending_steers
            if not pending:
                idle.set()  # the runner thread is about to wait for commands
            return pending

    loop.__class__ = _Watched
    original_steer = loop.steer

    def late_steer(text: str) -> None:  # the steer lands after the run is over
        idle.wait(5)
        original_steer(text)

    loop.steer = late_steer  # type: ignore[method-assign]
    steering = threading.Thread(target=runner.send, args=(Steer("look again"),))
    steering.start()
    time.sleep(0.05)  # let the steer pass its "is a run going?" check while the model waits
    gate.set()
    steering.join(60)
    runs = finished_runs(runner, 1)
    if runs[-1].text != "answered the steer":
        runs += finished_runs(runner, 1, timeout=60)
    assert runs[-1].text == "answered the steer"
    asked = [i.text for i in model.requests[-1].items if isinstance(i, UserMessage)]
    assert asked[-1] == "look again"
    runner.send(Close())
    assert runner.join(60)


# --- tools: nothing may block a run ---------------------------------------------------------


def _ctx(tmp_path: Path) -> ToolContext:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return ToolContext(cwd=work, spill_dir=tmp_path / "job" / "spill")


def _run_with_deadline(fn: Callable[[], ToolResult], unblock: Path) -> ToolResult:
    out: list[ToolResult] = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(60)
    if t.is_alive():  # free the stuck thread before failing
        with contextlib.suppress(OSError):
            os.close(os.open(unblock, os.O_WRONLY | os.O_NONBLOCK))
        with contextlib.suppress(OSError):
            os.close(os.open(unblock, os.O_RDONLY | os.O_NONBLOCK))
        raise AssertionError("the tool blocked on a FIFO")
    return out[0]


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read", {"path": "pipe"}),
        ("write", {"path": "pipe", "content": "x"}),
        ("grep", {"pattern": "needle"}),
    ],
)
def test_tools_do_not_block_on_a_fifo(tmp_path: Path, tool: str, args: dict[str, Any]) -> None:
    """Was: read and write opened a FIFO in cwd and grep read one: the run hung for good
    (abort cannot interrupt a blocking open)."""
    ctx = _ctx(tmp_path)
    (ctx.cwd / "a.txt").write_text("needle\n")
    fifo = ctx.cwd / "pipe"
    os.mkfifo(fifo)
    tools = tools_for_permission("MEDIUM")
    result = _run_with_deadline(lambda: execute(ToolCall("c1", tool, args), tools, ctx), fifo)
    if tool == "grep":
        assert result.text == "a.txt:1: needle"
    else:
        assert result.is_error and "not a regular file" in result.text


def test_grep_does_not_read_through_a_symlink_out_of_cwd(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN=hunter2\n")
    (ctx.cwd / "link.txt").symlink_to(secret)
    (ctx.cwd / "ok.txt").write_text("TOKEN=public\n")
    out = tools_for_permission("READ_ONLY")["grep"].run({"pattern": "TOKEN"}, ctx)
    assert "hunter2" not in out.text
    assert "public" in out.text


# --- session ----------------------------------------------------------------------------------


def test_newer_schema_session_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    body = (
        json.dumps({"type": "session", "version": 99}) + "\n" + '{"type": "entry", "future": tr'
    ).encode()
    path.write_bytes(body)
    with pytest.raises(StoreError, match="newer specialists"):
        Session.load(path)
    assert path.read_bytes() == body, "a file we refuse to read must not be modified"


# --- replay -----------------------------------------------------------------------------------


def test_replay_resume_skips_recorded_errors_already_played(tmp_path: Path) -> None:
    """Was: resuming counted model turns in the session but indexed lines of the recording,
    so a recorded error (consumed by a retry, never in the session) replayed a turn again."""
    rec = tmp_path / "rec.jsonl"
    rec.write_text(
        json.dumps({"error": {"category": "throttled", "message": "slow down"}})
        + "\n"
        + json.dumps({"text": "first answer"})
        + "\n"
        + json.dumps({"text": "second answer"})
        + "\n"
    )
    items = (UserMessage("q1"), AssistantText("first answer"), UserMessage("q2"))
    events = list(ReplayModel(rec, sleep=False).stream(ModelRequest("m", "", items)))
    text = "".join(getattr(e, "text", "") for e in events if e.kind == "text_delta")
    assert text == "second answer"


def test_read_of_one_huge_line_does_not_load_it_whole(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    (ctx.cwd / "big.txt").write_bytes(b"a" * 30_000_000 + b"\nsecond line\n")
    tools = tools_for_permission("READ_ONLY")
    import tracemalloc

    tracemalloc.start()
    try:
        result = execute(ToolCall("c1", "read", {"path": "big.txt"}), tools, ctx)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "[line truncated]" in result.text
    assert "second line" not in result.text  # the size cap was reached on line 1
    assert peak < 5_000_000, f"peak {peak} bytes: the whole line was read into memory"
    second = execute(ToolCall("c2", "read", {"path": "big.txt", "offset": 2}), tools, ctx)
    assert second.text == "second line\n"


@pytest.mark.parametrize(
    ("turn", "needle"),
    [
        ({"text": "hi", "usage": [1, 2]}, "usage must be an object"),
        ({"text": "hi", "usage": {"input_tokens": "many"}}, "usage must be an object"),
        ({"text": "hi", "delay_ms": "soon"}, "delay_ms must be a number"),
    ],
)
def test_replay_bad_turn_fields_name_the_line(
    tmp_path: Path, turn: dict[str, Any], needle: str
) -> None:
    """Was: these failed mid-stream as 'unexpected failure ... AttributeError'."""
    rec = tmp_path / "rec.jsonl"
    rec.write_text('{"text": "fine"}\n' + json.dumps(turn) + "\n")
    with pytest.raises(ConfigError, match=f"turn at 2: {needle}"):
        ReplayModel(rec, sleep=False)


def _process_exists(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False
