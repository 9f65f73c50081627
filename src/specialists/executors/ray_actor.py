"""The Ray actor: one per node, a thin async shell over the node core (node.py).

Named `specialists-node-<version>-<node id>` in the executor's namespace, detached (it outlives the
supervisor that created it, so the next job on that node finds it), pinned to its node, never
restarted and never retrying a call (`max_restarts=0`, `max_task_retries=0`): an agent has side
effects, and a node that dies takes its jobs down with an error rather than running them twice.
It reserves no CPU (`num_cpus=0`): what a job needs is reserved by the job's placement group.

Nothing secret goes to the constructor (Ray keeps actor creation arguments in its control
store); a job's secrets travel only as an argument of `start`, into the agent's environment.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import ray

from specialists.executors.node import NodeCore

MAX_CONCURRENCY = 10_000  # one pending read per agent, plus the writes and signals


@ray.remote(  # type: ignore[call-overload]
    num_cpus=0, max_restarts=0, max_task_retries=0, max_concurrency=MAX_CONCURRENCY
)
class NodeAgent:
    def __init__(self, root: str, namespace: str) -> None:
        context = ray.get_runtime_context()
        where = Path(root) if root else Path(tempfile.gettempdir()) / "specialists-ray" / namespace
        self.core = NodeCore(
            where,
            node_id=context.get_node_id(),
            node_ip=ray.util.get_node_ip_address(),
        )

    async def info(self) -> dict[str, Any]:
        return await self.core.info()

    async def stats(self) -> dict[str, Any]:
        return await self.core.stats()

    async def start(self, request: dict[str, Any]) -> dict[str, Any]:
        return await self.core.start(request)

    async def read(
        self, proc_id: str, after: int, wait_s: float, ack: int | None = None
    ) -> dict[str, Any]:
        return await self.core.read(proc_id, after, wait_s, ack)

    async def adopt(self, proc_id: str) -> dict[str, Any]:
        return await self.core.adopt(proc_id)

    async def write(self, proc_id: str, seq: int, data: bytes, end: bool) -> None:
        await self.core.write(proc_id, seq, data, end)

    async def close_stdin(self, proc_id: str) -> None:
        await self.core.close_stdin(proc_id)

    async def signal(self, proc_id: str, sig: int) -> None:
        await self.core.signal(proc_id, sig)

    async def kill(
        self, proc_id: str, scope: str, mark: str | None = None, caller: Any = None
    ) -> int:
        return await self.core.kill(proc_id, scope, mark, caller)

    async def forget(self, proc_id: str) -> None:
        await self.core.forget(proc_id)

    async def has_commit(self, repo_key: str, sha: str) -> bool:
        return await self.core.has_commit(repo_key, sha)

    async def stage(self, request: dict[str, Any]) -> dict[str, Any]:
        return await self.core.stage(request)

    async def sync_files(self, job_key: str, files: dict[str, bytes]) -> None:
        await self.core.sync_files(job_key, files)

    async def collect(self, job_key: str, job_id: str) -> dict[str, Any]:
        return await self.core.collect(job_key, job_id)

    async def cleanup(self, job_key: str) -> None:
        await self.core.cleanup(job_key)
