"""The tests of tests/unit/test_attention_cli.py that start processes (git, a runner, a
supervisor): the integration tier, as the unit tier starts none (tests/conftest.py)."""

from __future__ import annotations

import json

from specialists.cli.main import main
from tests.unit.test_attention_cli import (
    _record,
    jobs,
    root,  # noqa: F401 - fixtures
)


def test_the_resolved_settings_are_in_job_json(root, capsys):
    (root / ".specialists").mkdir(exist_ok=True)
    (root / ".specialists" / "config.toml").write_text(
        '[attention]\nfailures = 5\n[watchdog]\nreviewer = "echo"\n'
    )
    assert main(["run", "echo", "--prompt", "hi", "--attention-after", "90s", "--watchdog"]) == 0
    capsys.readouterr()
    [job] = jobs(root)
    record = json.loads((job / "job.json").read_text())
    assert record["attention"] == {"quiet_ms": 90_000, "tool_ms": 600_000, "failures": 5}
    assert record["watchdog"] == {"enabled": True, "reviewer": "echo", "max_reviews": 3}


def test_the_mcp_run_tool_takes_the_same_settings(root):
    """MCP `run`: a bad attention_after is one clear error and no job; good settings land in
    job.json as the CLI's do."""
    from specialists.mcp.handlers import ServerContext
    from specialists.mcp.table import call_tool

    ctx = ServerContext()
    bad = call_tool(ctx, "run", {"specialist": "echo", "prompt": "hi", "attention_after": "soon"})
    assert bad.is_error and bad.text.startswith("error: --attention-after: invalid duration")
    assert jobs(root) == []
    good = call_tool(
        ctx,
        "run",
        {"specialist": "echo", "prompt": "hi", "attention_after": "2m", "watchdog": True},
    )
    assert not good.is_error, good.text
    record = json.loads(
        (root / ".specialists" / "jobs" / good.data["job_id"] / "job.json").read_text()
    )
    assert record["attention"]["quiet_ms"] == 120_000 and record["watchdog"]["enabled"] is True


def test_the_deprecated_and_synchronous_mcp_tools_take_them_too(root):
    """start_specialist shares run's arguments; use_specialist and run_parallel's tasks take
    attention_after and watchdog as well, checked the same way."""
    from specialists.mcp.handlers import ServerContext
    from specialists.mcp.table import call_tool

    ctx = ServerContext()
    task = {"specialist": "echo", "prompt": "hi", "attention_after": "4m", "watchdog": False}
    started = call_tool(ctx, "start_specialist", task)
    assert not started.is_error, started.text
    assert _record(root, started.data["job_id"])["attention"]["quiet_ms"] == 240_000
    used = call_tool(ctx, "use_specialist", task)
    assert not used.is_error, used.text
    assert _record(root, used.data["job_id"])["attention"]["quiet_ms"] == 240_000
    parallel = call_tool(ctx, "run_parallel", {"tasks": [task]})
    assert not parallel.is_error, parallel.text
    (entry,) = parallel.data["results"] if "results" in parallel.data else parallel.data["jobs"]
    assert _record(root, entry["job_id"])["attention"]["quiet_ms"] == 240_000
    bad = call_tool(ctx, "run_parallel", {"tasks": [{**task, "attention_after": "soon"}]})
    assert bad.is_error and "--attention-after: invalid duration" in bad.text
    ctx.jobs.stop_all(grace=2.0)
