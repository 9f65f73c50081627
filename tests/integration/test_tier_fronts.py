"""A READ_ONLY job's fronts, as real processes: `specialists mcp --job <id>` over stdio through
the MCP SDK's own client, and `specialists sidecar` (the pi extension's helper) for the job's
owner. Each lists no tool that runs a command or writes, and refuses a direct bg_run in one
line, starting nothing (issue 21 item 1; the pure table is tests/unit/test_tool_tiers.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from specialists.jobs.store import JobStore
from tests.support.agent_env import AgentEnv
from tests.support.jobs import new_job
from tests.support.sidecar import spawn

pytestmark = pytest.mark.integration

DENIED = {"bg_run", "bg_output", "bg_list", "bg_cancel", "squash_sandbox"}
REFUSED = "error: bg_run is not available to a READ_ONLY job: it runs a command"


def _read_only_job(project: Path) -> str:
    record, lock = new_job(
        JobStore(project / ".specialists", news=None),
        project,
        permission="READ_ONLY",
        thread={"id": "t-" + "2" * 32},
    )
    lock.release()
    return record.id


def _no_proc_jobs(project: Path) -> bool:
    jobs = project / ".specialists" / "jobs"
    return all((d / "job.json").read_text().find('"runner": "proc"') < 0 for d in jobs.iterdir())


def test_the_job_mcp_server_over_stdio(isolated_env: AgentEnv) -> None:
    project = isolated_env.project
    job = _read_only_job(project)
    marker = project / "pwned"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "specialists", "mcp", "--job", job],
        env=dict(os.environ),
        cwd=str(project),
    )

    async def main() -> None:
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert not DENIED & names and {"sleep", "report_to_parent"} <= names
            out = await client.call_tool("bg_run", {"command": f"touch {marker}"})
            assert out.is_error
            (text,) = [c.text for c in out.content if c.type == "text"]
            assert text.startswith(REFUSED) and "\n" not in text

    anyio.run(main)
    assert not marker.exists() and _no_proc_jobs(project)


def test_the_pi_sidecar_process(isolated_env: AgentEnv) -> None:
    project = isolated_env.project
    job = _read_only_job(project)
    marker = project / "pwned"
    peer, proc = spawn(f"job-{job}", project)
    try:
        listed = {t["name"] for t in peer.result("tools")["tools"]}
        assert not DENIED & listed and "report_to_parent" in listed
        reply = peer.request("call", tool="bg_run", args={"command": f"touch {marker}"})
        assert not reply["ok"] and reply["error"].startswith(REFUSED.removeprefix("error: "))
    finally:
        peer.close()
        assert proc.wait(timeout=60) == 0
    assert not marker.exists() and _no_proc_jobs(project)
