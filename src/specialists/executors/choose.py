"""The runner a job's supervisor drives: the job's own runner, here or on a cluster node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specialists.runners import registry
from specialists.runners.base import AgentRunner


def remote_runner(runner: str, executor: Mapping[str, Any]) -> AgentRunner:
    """The job's runner on a Ray node (runners.registry.EXECUTORS["ray"]). Ray is imported
    only for a job that runs on it, and only once the job starts (ray_place.py)."""
    from specialists.executors.job import RemoteJobRunner
    from specialists.executors.settings import require_ray

    require_ray()
    if runner == "native":  # an in-process loop: it runs on the node as a relay process
        from specialists.executors.relay import RelayRunner

        inner: AgentRunner = RelayRunner()
    else:
        inner = registry.make_runner(runner)
    return RemoteJobRunner(inner, executor, _RayConnectorLazy())


class _RayConnectorLazy:
    """Imports what reaches Ray when the job is placed, not when its runner is made: the
    machine's shared connection (no Ray in this process), or Ray itself (`direct`)."""

    def place(self, job_key: str, settings: Mapping[str, Any]) -> Any:
        return _connector(settings).place(job_key, settings)

    def attach(self, node_id: str, settings: Mapping[str, Any]) -> Any:
        return _connector(settings).attach(node_id, settings)


def _connector(settings: Mapping[str, Any]) -> Any:
    if settings.get("connection", "shared") == "direct":
        from specialists.executors.ray_place import RayConnector

        return RayConnector()
    from specialists.executors.bridge_client import BridgeConnector

    return BridgeConnector()
