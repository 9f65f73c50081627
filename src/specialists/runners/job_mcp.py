"""Our MCP server for one job's agent: how a Claude Code or Codex job gets the agent tools.

A thread job (or a job whose runner options say `specialists_mcp: true`) gets
`specialists mcp --job <id>` among its MCP servers: that server acts as the job (owner
`job-<id>`) and serves only the agent tool table offered to it (report_to_parent,
close_thread and spawn_thread for a thread, bg_* and the timers), never the orchestrator's
job tools (docs/mcp.md, "One job's server"). The command is this very Python (a job must
not depend on `specialists` being on PATH), and the project root and job id travel in the
server's own `env`: Codex passes an MCP server only a short allow-list of variables.
"""

from __future__ import annotations

import sys
from typing import Any

from specialists.base.owner import JOB_ENV
from specialists.runners.base import LaunchSpec

PROJECT_ROOT_ENV = "SPECIALISTS_PROJECT_ROOT"
SERVER_NAME = "specialists"  # the tools reach the model as mcp__specialists__<tool>
OPTION = "specialists_mcp"
# How long the agent may wait for our server before its first model request: the server
# imports the mcp SDK (about 1 s idle, several seconds on a loaded machine; docs/mcp.md).
STARTUP_TIMEOUT_S = 90


def wants_job_server(spec: LaunchSpec) -> bool:
    return spec.thread or spec.options.get(OPTION) is True


def job_server(spec: LaunchSpec) -> dict[str, Any]:
    """The stdio server settings (command, args, env), as both agents' configs spell them."""
    env = {k: spec.env[k] for k in (PROJECT_ROOT_ENV, JOB_ENV) if k in spec.env}
    env[JOB_ENV] = spec.job_id
    return {
        "command": sys.executable,
        "args": ["-m", "specialists", "mcp", "--job", spec.job_id],
        "env": env,
    }
