"""The shared Ray connection's Ray side: the one driver on this machine for one cluster.

    python -m specialists.executors.bridge_ray --dir D --name N --idle S \\
        --address HOST:PORT --namespace NS --timeout T

Started by bridge_start.py, served by bridge_serve.py. It connects as ray_link.py does (the
probe, `ray.init` on a thread bounded by the timeout), finds each node's actor once and
keeps its handle, and awaits the actor's answers on the event loop (a Ray ref is awaitable),
so a hundred supervisors' reads in flight cost no thread each. The errors mean what they
mean to a direct supervisor (ray_link.py): a dead actor or node is `NodeGone` naming it, an
actor briefly unavailable is `LinkLost`; a lost cluster connection is `LinkLost` too, and
then the bridge ends (its clients start a new one, which connects afresh).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from typing import Any

import ray.exceptions as rex

from specialists.errors import bound_tracebacks
from specialists.executors import ray_link, ray_place
from specialists.executors.bridge_serve import run_bridge
from specialists.executors.remote import LinkLost, NodeGone


class RayBackend:
    def __init__(self, address: str, namespace: str, timeout: float) -> None:
        ray_link.connect(address, namespace, timeout)
        self.namespace = namespace
        self._actors: dict[tuple[str, str], Any] = {}
        self._making: dict[tuple[str, str], asyncio.Future[Any]] = {}
        self._groups: dict[str, Any] = {}
        self._names = itertools.count(1)
        self._lost = False

    def lost(self) -> bool:
        return self._lost

    async def place(self, job_key: str, settings: dict[str, Any]) -> dict[str, Any]:
        node_id, ip, group = await asyncio.to_thread(ray_place.reserve, job_key, settings)
        name = None
        if group is not None:  # unique across bridges: a new bridge never frees an old name
            name = f"{job_key}-{os.getpid()}-{next(self._names)}"
            self._groups[name] = group
        return {"node_id": node_id, "ip": ip, "group": name}

    async def attach(self, node_id: str, settings: dict[str, Any]) -> dict[str, Any]:
        return {"node_id": node_id, "ip": await asyncio.to_thread(ray_place.node_ip, node_id)}

    async def release(self, group: str) -> None:
        found = self._groups.pop(group, None)
        if found is not None:
            await asyncio.to_thread(ray_place.release, found)

    async def call(self, node: list[str], method: str, args: list[Any]) -> Any:
        node_id, ip, root = node
        actor = await self._actor(node_id, root)
        try:
            return await getattr(actor, method).remote(*args)
        except rex.ActorUnavailableError as exc:
            raise LinkLost(str(exc)) from exc
        except (rex.RayActorError, rex.ActorUnschedulableError) as exc:
            # The dead actor's handle stays: every later call is NodeGone too (a new actor
            # could not be placed on a node that is gone anyway).
            raise NodeGone(
                await asyncio.to_thread(ray_link.death_message, node_id, ip, exc)
            ) from exc
        except (rex.RaySystemError, ConnectionError) as exc:
            self._lost = True
            raise LinkLost(f"the Ray bridge lost the cluster: {exc}") from exc

    async def _actor(self, node_id: str, root: str) -> Any:
        """The node's actor handle, made once however many calls ask for it at once."""
        key = (node_id, root)
        if key in self._actors:
            return self._actors[key]
        making = self._making.get(key)
        if making is None:
            making = asyncio.ensure_future(
                asyncio.to_thread(ray_link.node_actor, node_id, self.namespace, root)
            )
            self._making[key] = making
        try:
            actor = await asyncio.shield(making)
        finally:
            if making.done():
                self._making.pop(key, None)
        self._actors[key] = actor
        return actor


def _make(options: dict[str, str]) -> RayBackend:
    return RayBackend(options["--address"], options["--namespace"], float(options["--timeout"]))


def main() -> int:
    bound_tracebacks()
    return run_bridge(sys.argv[1:], _make)


if __name__ == "__main__":
    sys.exit(main())
