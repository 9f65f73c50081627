"""Spend ceilings (features/spend, docs/spend.md): how far past its ceiling a job gets, and
what the check costs (printed, never asserted).

- Overshoot: a job run through the CLI against the mock LLM, every reply a bash call of a
  fixed size (REPLY: 240 tokens in, 60 out), with `--max-tokens` 1k, 10k and 100k. The
  overshoot is what the provider served (requests x REPLY) minus the ceiling, beside one
  reply's size (the ratio); the tokens the job's status recorded are printed too (a request
  that raced the stop is served, not recorded). A native job is checked before each model
  request, so it passes its ceiling by at most the request that crossed it; a pi job is
  stopped at the next safe point (the end of the turn or tool call that crossed it), so a
  request may race the stop.
- The check per model request: the native gate (what the loop asks before each request)
  and the companion's count of each usage report, in a tight loop, with one ceiling and with
  three (a job's, its mission's, its session's); and a whole supervised native job (a scripted
  model, a cheap tool call a request) with no ceiling against one it never reaches.

Run: PATH="$PWD/.tools/node_modules/.bin:$PATH" .venv/bin/python -m benchmarks.bench_spend
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import isolated_project, machine
from tests.support.agent_env import find_agent_bin
from tests.support.mock_llm import MockLLM, Reply, ToolCall, Usage, write_mockhttp_project

REPLY = Usage(input_tokens=240, output_tokens=60)  # 300 tokens a request
CEILINGS = (1_000, 10_000, 100_000)
SPEC = """\
metadata:
  name: spender
  description: spends tokens
execution:
  runner: {runner}
  model: {model}
  permission_required: LOW
prompt:
  system: You look around.
  task_template: "$prompt"
"""


def overshoot(runner: str, ceilings: tuple[int, ...]) -> list[str]:
    layout = isolated_project()
    root = layout.project
    reply = Reply(tool_calls=(ToolCall("bash", {"command": "true"}),), usage=REPLY)
    with MockLLM(reply) as mock:
        layout.env.update(layout.point_at(mock.base_url))
        layout.env["MOCK_KEY"] = "sk-bench"
        model = "mockhttp/mock-model" if runner == "native" else "mock/mock-model"
        spec = SPEC.format(runner=runner, model=model)
        write_mockhttp_project(root, mock.openai_base_url, spec, name="spender")
        lines = []
        for ceiling in ceilings:
            before = len(mock.model_requests)
            t0 = time.perf_counter()
            st = _run(layout.env, root, ceiling)
            wall = time.perf_counter() - t0
            requests = len(mock.model_requests) - before
            recorded = int(st["tokens"].get("input", 0)) + int(st["tokens"].get("output", 0))
            size = REPLY.input_tokens + REPLY.output_tokens
            served = requests * size  # what the provider billed: a raced request counts too
            over = served - ceiling
            assert st["status"] == "error" and "spend ceiling reached" in st["error"], st
            lines.append(
                f"  {runner:<6} ceiling {ceiling:>7,} tokens: {requests:>3} requests served, "
                f"{served:>7,} tokens ({recorded:,} recorded); overshoot {over:>4} tokens = "
                f"{over / size:.2f} x one reply ({over / ceiling:.2%} of the ceiling); "
                f"{wall:5.1f} s"
            )
    return lines


def _run(env: dict[str, str], root: Path, ceiling: int) -> dict[str, Any]:
    sp = [sys.executable, "-m", "specialists"]
    out = subprocess.run(
        [*sp, "run", "spender", "--background", "--max-tokens", str(ceiling), "-p", "look"],
        env=env, cwd=root, capture_output=True, text=True, check=True,
    )  # fmt: skip
    job_id = out.stdout.strip()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        shown = subprocess.run(
            [*sp, "status", "--job", job_id, "--json"],
            env=env, cwd=root, capture_output=True, text=True, check=True,
        )  # fmt: skip
        st: dict[str, Any] = json.loads(shown.stdout)
        if st["status"] in ("done", "error", "cancelled"):
            return st
        time.sleep(0.5)
    raise TimeoutError(f"job {job_id} did not end")


# --- the check's own cost ----------------------------------------------------------------


def check_cost(ceilings: int, calls: int = 200_000) -> tuple[float, float]:
    """(ns per gate call, ns per usage report counted) for a job under `ceilings` ceilings."""
    from specialists.features.spend.ceiling import Entry
    from specialists.features.spend.companion import Ceilings
    from specialists.runners.base import SpendLimit
    from specialists.runners.base import Usage as Spent
    from specialists.store.jobs import JobStore
    from specialists.store.records import JobStatus
    from specialists.supervise.hooks import CompanionContext
    from tests.support.jobs import new_job

    tmp = Path(tempfile.mkdtemp(prefix="sp-bench-spend-"))
    store = JobStore(tmp / ".specialists", news=None)
    rec, lock = new_job(store, tmp, runner="native")
    lock.release()
    found = [Entry(f"job-{rec.id}", 10**11, 10_000.0), Entry("mission-m", 10**11, None)]
    found += [Entry("claude-s", None, 10_000.0)]
    ctx = CompanionContext(
        store, rec, JobStatus(id=rec.id, specialist="x"), time.monotonic, time.time,
        lambda *_a, **_k: None, lambda _e: None, SpendLimit(),
    )  # fmt: skip
    c = Ceilings(ctx, found[:ceilings])
    c.began()
    gate = ctx.spend.gate
    assert gate is not None
    spent = Spent(240, 60, cost_usd=0.001)
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        gate(spent)
    per_gate = (time.perf_counter_ns() - t0) / calls
    now = time.monotonic()
    t0 = time.perf_counter_ns()
    for _ in range(calls // 10):
        c.saw(spent, now)
    per_count = (time.perf_counter_ns() - t0) / (calls // 10)
    return per_gate, per_count


def supervised_per_request(ceiling: dict[str, Any], requests: int = 150) -> float:
    """Median ms per model request of a supervised native job (a scripted model that answers
    at once, a `read` tool call a request), with `ceiling` as its own."""
    from specialists.catalog.config import Config
    from specialists.native.model import UsageReport
    from specialists.native.testing import ScriptedModel, call, reply
    from specialists.runners.native import NativeRunner
    from specialists.store.jobs import JobStore
    from specialists.supervise.supervisor import Supervisor
    from tests.support.jobs import new_job

    tmp = Path(tempfile.mkdtemp(prefix="sp-bench-spend-"))
    (tmp / "notes.txt").write_text("hello\n")
    looking = reply(calls=[call("read", path="notes.txt")], usage=UsageReport(240, 60))
    model = ScriptedModel([looking] * requests + [reply("done")])
    store = JobStore(tmp / ".specialists", news=None)
    rec, lock = new_job(store, tmp, runner="native", model="test/main", ceiling=ceiling)
    runner = NativeRunner(config=Config(), clients={"test/main": model})
    t0 = time.perf_counter()
    try:
        st = Supervisor(store, rec, runner, handle_signals=False).run()
    finally:
        lock.release()
    assert st.status == "done", st.error
    return (time.perf_counter() - t0) * 1000 / (requests + 1)


def main() -> None:
    print(f"spend ceilings, {machine()}; one reply = {REPLY.input_tokens + REPLY.output_tokens} "
          "tokens")  # fmt: skip
    print("overshoot (spent past the ceiling when the job stopped):")
    for line in overshoot("native", CEILINGS):
        print(line)
    if find_agent_bin("pi") is None:
        print("  pi: not installed (scripts/setup puts pi 1.6.0 under .tools)")
    else:
        for line in overshoot("pi", CEILINGS[:2]):
            print(line)
    print("the check per model request (medians of 5):")
    for n in (1, 3):
        runs = [check_cost(n) for _ in range(5)]
        gate = statistics.median(r[0] for r in runs)
        count = statistics.median(r[1] for r in runs)
        print(f"  {n} ceiling(s): the gate {gate:,.0f} ns a request; counting a usage report "
              f"{count / 1000:,.1f} us")  # fmt: skip
    supervised_per_request({}, 20)  # warm: the first job pays the imports
    bare_runs, held_runs = [], []
    for _ in range(5):  # interleaved: a load that comes and goes falls on both sides
        bare_runs.append(supervised_per_request({}))
        held_runs.append(supervised_per_request({"tokens": 10**11}))
    bare, held = statistics.median(bare_runs), statistics.median(held_runs)
    print(f"  a supervised native job: {bare:.2f} ms a request with no ceiling, {held:.2f} ms "
          f"under one it never reaches (x{held / bare:.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
