"""Pause-to-resume lateness at a usage limit (printed, never asserted): how long after the
provider's reset a paused native job's next model request leaves, on real processes (a
background job, its own supervisor, the mock LLM answering 429 with reset headers).

- in place: the supervisor waits on the job's durable timer; target median < 250 ms, max
  < 1 s (its wait wakes at the timer's due time; the rest is the follow-up and the request);
- after a crash: the supervisor is killed (SIGKILL) during the pause, the keeper's recovery
  starts a successor that waits out the pause and starts the agent at the reset; target
  median < 2 s (the native runner's start: its SDK's import, on a loaded 2-core machine).

Run: .venv/bin/python -m benchmarks.bench_usage_limits
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import isolated_project, machine, sp_argv
from tests.support.mock_llm import MockLLM, Reply, write_mockhttp_project

PAUSE_S = 2.0
ROUNDS = 5
SPEC = """\
metadata:
  name: tester
  description: bench specialist
execution:
  runner:
    type: native
    retry_base_delay_s: 0.01
    retry_max_wait_s: 0.5
  model: mockhttp/mock-model
  permission_required: LOW
prompt:
  system: You are quick.
  task_template: "$prompt"
"""


def _status(cwd: Path, job_id: str) -> dict[str, Any]:
    try:
        return json.loads((cwd / ".specialists" / "jobs" / job_id / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def _until(what: str, test: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = test()
        if value:
            return value
        time.sleep(0.01)
    raise SystemExit(f"timed out waiting for {what}")


def one(env: dict[str, str], cwd: Path, server: MockLLM, *, crash: bool) -> float:
    """Milliseconds from the reset to the resumed request."""
    server.enqueue(Reply.usage_limited(resets_in=PAUSE_S + (3 if crash else 0)))
    before = len(server.model_requests)
    out = subprocess.run(
        sp_argv("run", "tester", "--background", "--prompt", "work"),
        env=env, cwd=cwd, capture_output=True, text=True, check=True,
    )  # fmt: skip
    job_id = out.stdout.strip()
    st = _until("the pause", lambda: (s := _status(cwd, job_id)).get("paused_until_ms") and s)
    if crash:
        first = st["supervisor_pid"]
        os.kill(first, signal.SIGKILL)
        _until("a successor", lambda: _status(cwd, job_id).get("supervisor_pid") != first)
    _until("the end", lambda: _status(cwd, job_id).get("status") in ("done", "error"))
    resumed = server.model_requests[before + 1]
    return resumed.ts * 1000 - st["paused_until_ms"]


def main() -> None:
    print(f"# usage limits: pause-to-resume lateness — {machine()}, load {os.getloadavg()[0]:.2f}")
    layout = isolated_project()
    cwd = layout.project
    with MockLLM(default=Reply("done")) as server:
        write_mockhttp_project(cwd, server.openai_base_url, SPEC)
        env = {**layout.env, **layout.point_at(server.base_url), "MOCK_KEY": "sk-bench"}
        for crash in (False, True):
            late = [one(env, cwd, server, crash=crash) for _ in range(ROUNDS if not crash else 3)]
            name = "after a supervisor crash" if crash else "in place"
            pause = PAUSE_S + (3 if crash else 0)
            print(
                f"{name}: reset after {pause:.0f} s; resumed request late by median "
                f"{statistics.median(late):.0f} ms, max {max(late):.0f} ms "
                f"(lateness/pause {statistics.median(late) / (pause * 1000):.3f})"
            )


if __name__ == "__main__":
    main()
