"""The tests of tests/unit/test_native_regressions.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from specialists.native.messages import ToolCall, ToolResult
from specialists.native.testing import ScriptedModel, reply
from specialists.native.tools import execute, tools_for_permission
from specialists.runners.base import (
    Close,
    LaunchSpec,
    RunFinished,
)
from specialists.runners.native import NativeRunner
from tests.unit.test_native_regressions import _ctx, _process_exists


@pytest.mark.parametrize("stop", ["timeout", "abort"])
def test_bash_that_closes_its_output_still_obeys_timeout_and_abort(
    tmp_path: Path, stop: str
) -> None:
    """Was: EOF on the pipe ended the read loop and then proc.wait() had no limit, so
    `exec >log 2>&1; long-command` ignored both the timeout and an abort."""
    ctx = _ctx(tmp_path)
    args: dict[str, Any] = {"command": "exec >/dev/null 2>&1; sleep 30"}
    if stop == "timeout":
        args["timeout"] = 0.5
    out: list[ToolResult] = []
    tools = tools_for_permission("BASH_ONLY")
    t = threading.Thread(
        target=lambda: out.append(execute(ToolCall("c1", "bash", args), tools, ctx)), daemon=True
    )
    started = time.monotonic()
    t.start()
    if stop == "abort":
        time.sleep(0.3)  # let bash reach the sleep
        ctx.cancel.set()
    t.join(60)
    assert not t.is_alive(), "bash ignored its timeout/abort after closing its output"
    assert time.monotonic() - started < 5
    assert out[0].is_error
    assert ("timed out" if stop == "timeout" else "aborted") in out[0].text


def test_background_children_of_bash_die_with_the_job(tmp_path):
    from specialists.native.testing import call
    from specialists.runners.base import AgentExited

    pid_file = tmp_path / "daemon.pid"
    model = ScriptedModel(
        [
            reply(calls=[call("bash", command=f"sleep 300 & echo $! > {pid_file}")]),
            reply("started"),
        ]
    )
    runner = NativeRunner(clients={"test/m": model})
    (tmp_path / "job").mkdir()
    runner.start(
        LaunchSpec(
            job_id="abcdef12",
            job_dir=tmp_path / "job",
            cwd=tmp_path,
            prompt="go",
            system_prompt="",
            model="test/m",
        )
    )
    events = []
    while not any(isinstance(e, RunFinished) for e in events):
        events += runner.poll(0.1)
    daemon = int(pid_file.read_text())
    assert _process_exists(daemon)  # alive while the job runs
    runner.send(Close())
    while not any(isinstance(e, AgentExited) for e in events):
        events += runner.poll(0.1)
    deadline = time.monotonic() + 5
    while _process_exists(daemon) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _process_exists(daemon)
