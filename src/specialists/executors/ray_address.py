"""Which Ray cluster a job means, without importing Ray: the address, the probe, the names.

Both ways of reaching a cluster use these: a supervisor connected to Ray itself (direct,
ray_link.py) and one that goes through the machine's shared connection (bridge_client.py),
which must not import Ray at all (that import is most of a driver's memory).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specialists.base.errors import AgentUnavailable, UserError

CURRENT_CLUSTER = Path("/tmp/ray/ray_current_cluster")


def resolve_address(address: str) -> str:
    """host:port for `address` ("auto": $RAY_ADDRESS, else the cluster `ray start` made)."""
    if address != "auto":
        return address
    found = os.environ.get("RAY_ADDRESS", "").strip()
    if not found:
        try:
            found = CURRENT_CLUSTER.read_text().strip().splitlines()[0]
        except (OSError, IndexError):
            found = ""
    if not found:
        raise AgentUnavailable(
            "no Ray cluster is running on this machine (executor address 'auto')",
            hint="start one with `ray start --head`, or set address in [executor]",
        )
    return found


def probe(address: str, timeout: float) -> None:
    """A TCP connect to the cluster's address, within `timeout`; AgentUnavailable if not."""
    target = address.removeprefix("ray://")
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise UserError(f"bad Ray address {address!r}", hint="use host:port, ray://host:port")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        why = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise AgentUnavailable(
            f"cannot reach the Ray cluster at {address}: {why}",
            hint="is it running? check address in [executor] or --executor",
        ) from None


def describe_node(node_id: str, ip: str) -> str:
    return f"Ray node {node_id[:12]} ({ip})"


def options_of(settings: Mapping[str, Any]) -> tuple[str, str, float]:
    return (
        str(settings.get("address", "auto")),
        str(settings.get("namespace", "specialists")),
        float(settings.get("connect_timeout_s", 15.0)),
    )
