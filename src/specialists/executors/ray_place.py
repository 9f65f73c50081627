"""Where a Ray job runs: connect, reserve the job's resources, find the node's actor.

A job's `resources` (default one CPU) are reserved by a placement group of one bundle: Ray's
own scheduler picks the node and counts the reservation, yet no Ray worker process is started
for it (the agent runs under the node's one actor). The group belongs to the supervisor's Ray
job, so Ray frees it by itself when the supervisor's process ends, however it ends. With no
resources the job goes to an alive node chosen by its key.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Mapping
from typing import Any

import ray
from ray.util.placement_group import (
    placement_group,
    placement_group_table,
    remove_placement_group,
)

from specialists.errors import AgentUnavailable
from specialists.executors.ray_link import (
    RayNodeClient,
    alive_nodes,
    connect,
    options_of,
)


class RayPlacement:
    """A job's node and reservation; `release` gives the reservation back (idempotent)."""

    def __init__(self, client: RayNodeClient, group: Any) -> None:
        self.client = client
        self.node = client.name
        self.node_id = client.node_id
        self._group = group

    def release(self) -> None:
        group, self._group = self._group, None
        if group is not None:
            with contextlib.suppress(Exception):
                remove_placement_group(group)


class RayConnector:
    def place(self, job_key: str, settings: Mapping[str, Any]) -> RayPlacement:
        address, namespace, timeout = options_of(settings)
        connect(address, namespace, timeout)
        resources = {k: float(v) for k, v in dict(settings.get("resources") or {}).items()}
        group = None
        if resources:
            group = placement_group([resources], strategy="STRICT_PACK", name=f"sp-{job_key}")
            wait_s = float(settings.get("schedule_timeout_s", 120.0))
            ready, _ = ray.wait([group.ready()], timeout=wait_s)
            if not ready:
                with contextlib.suppress(Exception):
                    remove_placement_group(group)
                shown = ", ".join(f"{k}={v:g}" for k, v in sorted(resources.items()))
                raise AgentUnavailable(
                    f"no Ray node had {shown} free within {wait_s:g}s",
                    hint="lower resources in [executor], or add nodes",
                )
            node_id = placement_group_table(group)["bundles_to_node_id"][0]
        else:
            nodes = sorted(alive_nodes())
            if not nodes:
                raise AgentUnavailable("the Ray cluster has no alive node")
            node_id = nodes[zlib.crc32(job_key.encode()) % len(nodes)]
        ip = alive_nodes().get(node_id, "?")
        root = str(settings.get("node_root") or "")
        try:
            client = RayNodeClient(node_id, ip, namespace, root, address, timeout)
        except Exception:
            if group is not None:
                remove_placement_group(group)
            raise
        return RayPlacement(client, group)

    def attach(self, node_id: str, settings: Mapping[str, Any]) -> RayPlacement:
        """The node a job already runs on, for its restarted supervisor. Its reservation
        died with the first supervisor's Ray job; the agent keeps running without one."""
        address, namespace, timeout = options_of(settings)
        connect(address, namespace, timeout)
        nodes = alive_nodes()
        if node_id not in nodes:
            raise AgentUnavailable(
                f"the Ray node {node_id[:12]} the job ran on is gone: its agent died with it"
            )
        root = str(settings.get("node_root") or "")
        return RayPlacement(
            RayNodeClient(node_id, nodes[node_id], namespace, root, address, timeout), None
        )
