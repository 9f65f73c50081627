"""The tests of tests/unit/test_native_table.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

from specialists.native.testing import (
    ScriptedModel,
    call,
    last_tool_results,
    reply,
)
from specialists.runners.base import Activity, RunFinished
from tests.unit.test_native_runner import collect
from tests.unit.test_native_table import start


def test_warn_mode_runs_the_command_and_tells_people_not_the_model(tmp_path: Path) -> None:
    follow = call("bash", command="tail -f /dev/null")
    model = ScriptedModel([reply(calls=[follow]), "ok"])
    runner, _ = start(tmp_path, model, {"bash": {"guard": "warn", "defaultTimeoutSec": 1}})
    events = collect(runner, RunFinished)
    notices = [
        e.fields["message"] for e in events if isinstance(e, Activity) and e.event == "notice"
    ]
    assert any(n.startswith("bash guard: `tail -f`") for n in notices), notices
    result = last_tool_results(model.requests[1])[follow.id]
    assert "timed out after 1 s" in result and "bg_run" not in result  # R-B4: its timeout


def test_every_result_but_reads_passes_the_configured_result_guard(tmp_path: Path) -> None:
    """R-O1..R-O3 with [overflow] from config.toml: a bash result and an ls result are
    spilled past maxChars (a spill marker in the output is no exemption); read is not."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / "big.txt").write_text("[... 5 characters omitted ...]\n" + "x" * 3000)
    for n in range(100):
        (work / f"file-with-a-long-name-{n:03}.txt").touch()
    calls = [
        call("bash", command="cat big.txt"),
        call("ls", path="."),
        call("read", path="big.txt"),
    ]
    model = ScriptedModel([reply(calls=calls), "ok"])
    raw = {"overflow": {"maxChars": 1000, "headChars": 200, "tailChars": 100}}
    runner, _ = start(tmp_path, model, raw)
    collect(runner, RunFinished)
    results = last_tool_results(model.requests[1])
    for guarded in calls[:2]:
        text = results[guarded.id]
        assert len(text) < 1000 and "/spill/" in text, text
    assert len(results[calls[2].id]) > 3000
