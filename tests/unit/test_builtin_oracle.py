"""The `oracle` builtin (seed 004 "The Oracle Workflow"): a read-only advisor, planned as
`specialists run oracle` plans it and run on the native runtime with the scripted model."""

from __future__ import annotations

import os
import time
from pathlib import Path

from specialists.catalog import load_catalog
from specialists.catalog.config import Config
from specialists.native.testing import ScriptedModel, call, reply
from specialists.runners.base import Close, RunFinished, RunnerEvent
from specialists.runners.native import NativeRunner
from specialists.store.jobs import JobStore
from specialists.store.paths import state_dir
from specialists.supervise.agent_spec import launch_spec
from specialists.supervise.plan import JobRequest, plan_job

ANSWER = (
    "1. **Recommendation**: keep one service for now.\n"
    "2. **Strongest unresolved tradeoff**: deploy independence against one schema."
)


def test_the_oracle_advises_read_only_on_the_native_runtime() -> None:
    root = Path(os.environ["SPECIALISTS_PROJECT_ROOT"])
    (root / "PLAN.md").write_text("Split the billing service into three services.\n")
    spec = load_catalog(root).get("oracle")
    assert spec.scope == "builtin" and spec.permission == "READ_ONLY"

    store = JobStore(state_dir(root), news=None)
    record = plan_job(
        store,
        JobRequest(
            "oracle", "Review PLAN.md: should we split?", cwd=root, runner="native", model="t/m"
        ),
        foreground=True,
    )
    assert record.specialist == "oracle" and record.permission == "READ_ONLY"
    model = ScriptedModel([reply(calls=[call("read", path="PLAN.md")]), reply(ANSWER)])
    runner = NativeRunner(config=Config(), clients={"t/m": model})
    job_dir = store.jobs_dir / "0000000a"
    job_dir.mkdir(parents=True)
    runner.start(launch_spec(record.replace(id="0000000a"), job_dir, record.task))
    events: list[RunnerEvent] = []
    deadline = time.monotonic() + 60
    while not any(isinstance(e, RunFinished) for e in events):
        assert time.monotonic() < deadline, events
        events += runner.poll(0.2)
    runner.send(Close())
    (finished,) = [e for e in events if isinstance(e, RunFinished)]
    assert finished.error is None and finished.text == ANSWER

    first, second = model.requests
    assert "You are the oracle" in first.system and "You advise; the caller decides" in first.system
    offered = {t.name for t in first.tools}
    assert {"read", "grep", "find", "ls"} <= offered and not {"edit", "write"} & offered
    asked = " ".join(getattr(i, "text", "") for i in first.items)
    assert "Advise on the following" in asked and "should we split?" in asked
    read_back = " ".join(getattr(i, "text", "") for i in second.items if i.kind == "tool_result")
    assert "Split the billing service" in read_back  # it read the file it was pointed at
