"""What the MCP tools share: the server's context. The tools themselves are ops (fronts/jobs.py
and the operations table, base/ops.py) and the agent tool table, named by table.py."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from specialists.fronts.mcp.inprocess import InProcessJobs
from specialists.project import Project
from specialists.store.jobs import JobStore


@dataclass
class ServerContext:
    """What handlers share: the project (opened once, at server start) and the server's own
    (synchronous) jobs."""

    project: Project = field(default_factory=Project)
    jobs: InProcessJobs = field(default_factory=InProcessJobs)
    # Warnings the last call produced (a bead that could not be made): shown in its result.
    warnings: list[str] = field(default_factory=list)
    # Whose jobs, timers and events these are (owner.py); found on first use: client_keys().
    owner_keys: tuple[str, ...] = ()
    # `specialists mcp --job <id>`: the server of one job's agent (a thread child of a
    # Claude Code or Codex runner). It acts as that job only and serves only its agent tools.
    job_scope: str | None = None
    # Which of the table's tool sets this server offers: all, core or more (table.TOOLSETS).
    toolset: str = "all"

    def root(self) -> Path:
        return self.project.root

    def keys(self) -> tuple[str, ...]:
        """The client's owner keys: the launcher's (a Claude Code session's id, which it
        exports to its MCP servers, and the agent process above us), else a key for the
        client process that started this server (`mcp-<pid>.<start>`): stable for that
        client's life, shared by a server it restarts, distinct for every other client."""
        if not self.owner_keys and self.job_scope is not None:
            self.owner_keys = (f"job-{self.job_scope}",)
        if not self.owner_keys:
            from specialists.base.owner import process_key

            keys = self.project.owner.keys
            fallback = process_key("mcp", os.getppid())
            self.owner_keys = keys or ((fallback,) if fallback else ("mcp-unknown",))
        return self.owner_keys

    def store(self) -> JobStore:
        return self.project.store
