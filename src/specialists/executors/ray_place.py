"""Where a Ray job runs: connect, reserve the job's resources, find the node's actor.

A job's `resources` (default one CPU) are reserved by a placement group of one bundle: Ray's
own scheduler picks the node and counts the reservation, yet no Ray worker process is started
for it (the agent runs under the node's one actor). The group belongs to the driver's Ray job:
a direct supervisor's, freed by Ray when that process ends however it ends; or the machine's
shared connection's (bridge_serve.py), which frees a supervisor's groups when its socket
closes, and whose own end frees them all. With no
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

from specialists.base.errors import AgentUnavailable
from specialists.executors.ray_address import options_of
from specialists.executors.ray_link import RayNodeClient, alive_nodes, connect


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
            release(group)


def reserve(job_key: str, settings: Mapping[str, Any]) -> tuple[str, str, Any]:
    """(node id, its IP, the placement group or None) for a new job, on the connected
    cluster; the shared connection (bridge_ray.py) places jobs with this too."""
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
    return node_id, alive_nodes().get(node_id, "?"), group


def release(group: Any) -> None:
    with contextlib.suppress(Exception):
        remove_placement_group(group)


def node_ip(node_id: str) -> str:
    """The IP of a node a job already runs on; AgentUnavailable if it is gone."""
    nodes = alive_nodes()
    if node_id not in nodes:
        raise AgentUnavailable(
            f"the Ray node {node_id[:12]} the job ran on is gone: its agent died with it"
        )
    return nodes[node_id]


class RayConnector:
    """This process as the Ray driver (`connection = "direct"`)."""

    def place(self, job_key: str, settings: Mapping[str, Any]) -> RayPlacement:
        address, namespace, timeout = options_of(settings)
        connect(address, namespace, timeout)
        node_id, ip, group = reserve(job_key, settings)
        root = str(settings.get("node_root") or "")
        try:
            client = RayNodeClient(node_id, ip, namespace, root, address, timeout)
        except Exception:
            if group is not None:
                release(group)
            raise
        return RayPlacement(client, group)

    def attach(self, node_id: str, settings: Mapping[str, Any]) -> RayPlacement:
        """The node a job already runs on, for its restarted supervisor. Its reservation
        died with the first supervisor's Ray job; the agent keeps running without one."""
        address, namespace, timeout = options_of(settings)
        connect(address, namespace, timeout)
        ip = node_ip(node_id)
        root = str(settings.get("node_root") or "")
        return RayPlacement(RayNodeClient(node_id, ip, namespace, root, address, timeout), None)
