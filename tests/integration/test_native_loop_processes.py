"""The tests of tests/unit/test_native_loop.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from specialists.events.spill import SpillLimits
from specialists.native.events import LoopEvent, LoopFinished, Progress
from specialists.native.loop import SKIPPED_TEXT
from specialists.native.messages import UserMessage
from specialists.native.testing import ScriptedModel, call, reply
from tests.unit.test_native_loop import Harness


def test_oversized_tool_result_is_spilled(tmp_path: Path) -> None:
    model = ScriptedModel([reply(calls=[call("bash", command="seq 1 30000")]), reply("ok")])
    h = Harness(tmp_path, model, spill=SpillLimits(max_chars=1000, head_chars=100, tail_chars=50))
    h.loop.run("count")
    (result,) = h.results()
    assert len(result.text) < 1500
    assert result.text.startswith("1\n2\n")
    assert result.text.rstrip().endswith("30000")
    spilled = list((h.job / "spill").glob("*.txt"))
    assert spilled, "the full output must be on disk"
    assert any(p.read_text().count("\n") >= 29999 for p in spilled)
    assert str(h.job / "spill") in result.text


def test_abort_kills_running_bash(tmp_path: Path) -> None:
    model = ScriptedModel([reply(calls=[call("bash", command="sleep 30"), call("ls")])])
    h = Harness(tmp_path, model)
    out: list[LoopFinished] = []
    t = threading.Thread(target=lambda: out.append(h.loop.run("x")))
    t.start()
    for _ in range(200):
        if "tool_execution" in h.kinds():
            break
        threading.Event().wait(0.01)
    h.loop.abort()
    t.join(5)
    assert not t.is_alive()
    assert out[0].error == "aborted"
    first, second = h.results()
    assert first.is_error and "aborted" in first.text
    assert second.is_error and "aborted" in second.text  # never ran, still answered


def test_steer_between_tool_calls_skips_the_rest(tmp_path: Path) -> None:
    model = ScriptedModel(
        [reply(calls=[call("bash", command="echo one"), call("bash", command="echo two")]), "ok"]
    )
    h = Harness(tmp_path, model)

    def emit(event: LoopEvent) -> None:
        h.events.append(event)
        ended = isinstance(event, Progress) and event.event == "tool_execution_end"
        if ended and "steer_ack" not in h.kinds():
            h.loop.steer("stop, use python instead")

    h.loop.emit = emit
    assert h.loop.run("x").text == "ok"
    first, second = h.results()
    assert "one" in first.text and not first.is_error
    assert second.text == SKIPPED_TEXT and second.is_error
    assert model.requests[1].items[-1] == UserMessage("stop, use python instead", source="steer")
    assert "steer_ack" in h.kinds()


def test_session_records_tool_call_before_it_runs(tmp_path: Path) -> None:
    calls_on_disk: list[int] = []
    model = ScriptedModel([reply(calls=[call("bash", command="echo hi")]), "ok"])
    h = Harness(tmp_path, model)
    path = h.job / "session.jsonl"

    def emit(event: LoopEvent) -> None:
        if isinstance(event, Progress) and event.event == "tool_execution":
            lines = [json.loads(x) for x in path.read_text().splitlines()]
            kinds = [i["kind"] for x in lines[1:] for i in x["items"]]
            calls_on_disk.append(kinds.count("tool_call"))
        h.events.append(event)

    h.loop.emit = emit
    h.loop.run("x")
    assert calls_on_disk == [1]
