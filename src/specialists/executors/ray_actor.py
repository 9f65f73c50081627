"""The Ray actor: one per node, the node core (node.py) itself.

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

import ray

from specialists.executors.node import NodeCore

MAX_CONCURRENCY = 10_000  # one pending read per agent, plus the writes and signals


@ray.remote(  # type: ignore[call-overload]
    num_cpus=0, max_restarts=0, max_task_retries=0, max_concurrency=MAX_CONCURRENCY
)
class NodeAgent(NodeCore):
    """The node core itself as the actor: its async methods are the actor's calls."""

    def __init__(self, root: str, namespace: str) -> None:
        context = ray.get_runtime_context()
        where = Path(root) if root else Path(tempfile.gettempdir()) / "specialists-ray" / namespace
        super().__init__(
            where,
            node_id=context.get_node_id(),
            node_ip=ray.util.get_node_ip_address(),
        )
