"""This process's connection to a Ray cluster, and the node actors reached through it.

One connection per process, shared by every job it supervises (a detached supervisor has
one job; a workflow or the MCP server's parallel jobs share one). Connecting is bounded: the
address is probed with a plain TCP connect first, then `ray.init` runs on a helper thread
that is abandoned after `connect_timeout_s` (a cluster that accepts the connection and never
answers would otherwise hang the job). On that thread Ray also leaves the supervisor's own
SIGTERM handler alone.

`RayNodeClient` is the node-client seam over Ray refs (the loopback fake is testing.py):
`call` submits, `wait`/`result` collect, `fire` forgets (its errors are collected later, so
none is reported as "unhandled"). A dead actor or node is `NodeGone`, with the node named; a
lost connection is `LinkLost` after the connection was made again: the caller asks again
from its last sequence number.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from typing import Any

import ray
import ray.exceptions as rex

from specialists.base.errors import AgentUnavailable, UserError
from specialists.executors.ray_address import describe_node, probe, resolve_address
from specialists.executors.remote import LinkLost, NodeGone

log = logging.getLogger(__name__)

ACTOR_PREFIX = "specialists-node-"
RECONNECT_TRIES = 3
_lock = threading.Lock()
_connected: tuple[str, str] | None = None  # (address, namespace) this process is connected to


def connect(address: str, namespace: str, timeout: float) -> None:
    """Connect this process to the cluster (once); AgentUnavailable within `timeout`."""
    global _connected
    with _lock:
        if ray.is_initialized() and _connected is not None:
            if _connected != (address, namespace):
                raise UserError(
                    f"this process is connected to the Ray cluster {_connected[0]} "
                    f"(namespace {_connected[1]}); a job asked for {address} ({namespace})",
                    hint="run jobs for another cluster from another process",
                )
            return
        target = resolve_address(address)
        if not target.startswith("ray://"):
            probe(target, timeout)
        failure: list[BaseException] = []

        def init() -> None:
            try:
                ray.init(
                    address=target,
                    namespace=namespace,
                    log_to_driver=False,
                    logging_level=logging.WARNING,
                    configure_logging=False,
                    _node_ip_address=os.environ.get("SPECIALISTS_RAY_NODE_IP") or None,
                )
            except Exception as exc:  # noqa: BLE001 - reported below, as one line
                failure.append(exc)

        # Ray warns that it set no SIGTERM handler off the main thread: that is the point.
        logging.getLogger("ray._private.worker").setLevel(logging.ERROR)
        thread = threading.Thread(target=init, name="ray-connect", daemon=True)
        thread.start()
        thread.join(timeout)
        if thread.is_alive():
            raise AgentUnavailable(
                f"connecting to the Ray cluster at {target} took more than {timeout:g}s",
                hint="check the address, and that this machine runs the cluster's Ray version",
            )
        if failure:
            first = str(failure[0]).strip().splitlines()[:1] or [type(failure[0]).__name__]
            raise AgentUnavailable(f"cannot connect to the Ray cluster at {target}: {first[0]}")
        _connected = (address, namespace)


def reconnect(address: str, namespace: str, timeout: float) -> None:
    """Drop the connection and make it again (after Ray reported it lost)."""
    global _connected
    with _lock:
        with contextlib.suppress(Exception):
            ray.shutdown()
        _connected = None
    connect(address, namespace, timeout)


def alive_nodes() -> dict[str, str]:
    """node id -> its IP, for the nodes alive now."""
    return {n["NodeID"]: n.get("NodeManagerAddress", "?") for n in ray.nodes() if n.get("Alive")}


def actor_name(node_id: str) -> str:
    """One actor per node and specialists version: a detached actor keeps the code it was
    started with, so a new version gets an actor of its own."""
    from specialists import __version__

    return f"{ACTOR_PREFIX}{__version__}-{node_id}"


def node_actor(node_id: str, namespace: str, root: str) -> Any:
    """The node's actor: found by name, or created pinned to that node (get_if_exists makes
    two supervisors racing for it get the same one)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from specialists.executors.ray_actor import NodeAgent

    return NodeAgent.options(  # type: ignore[attr-defined]
        name=actor_name(node_id),
        namespace=namespace,
        lifetime="detached",
        get_if_exists=True,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
    ).remote(root, namespace)


class RayNodeClient:
    """Calls to one node's actor; see the module docstring."""

    def __init__(
        self, node_id: str, ip: str, namespace: str, root: str, address: str, timeout: float
    ) -> None:
        self.node_id, self.ip = node_id, ip
        self.name = describe_node(node_id, ip)
        self._namespace, self._root, self._address, self._timeout = (
            namespace,
            root,
            address,
            timeout,
        )
        self._actor = node_actor(node_id, namespace, root)
        self._fired: list[Any] = []

    def call(self, method: str, *args: Any) -> Any:
        return getattr(self._actor, method).remote(*args)

    def wait(self, pending: Any, timeout: float) -> bool:
        try:
            ready, _ = ray.wait([pending], timeout=max(0.0, timeout))
        except rex.RaySystemError:
            return True  # result() says what went wrong
        return bool(ready)

    def result(self, pending: Any, timeout: float | None = None) -> Any:
        try:
            return ray.get(pending, timeout=timeout)
        except rex.ActorUnavailableError as exc:
            raise LinkLost(str(exc)) from exc
        except rex.RayActorError as exc:
            raise NodeGone(self._death(exc)) from exc
        except rex.GetTimeoutError:
            raise
        except (rex.RaySystemError, ConnectionError) as exc:
            self._reattach()
            raise LinkLost(str(exc)) from exc

    def fire(self, method: str, *args: Any) -> None:
        self._fired.append(self.call(method, *args))
        if len(self._fired) >= 64:
            self.reap()

    def reap(self) -> None:
        """Collect fired calls that are done, so their errors are never reported as unhandled;
        a dead node shows up in the next read, not here."""
        if not self._fired:
            return
        done, self._fired = ray.wait(self._fired, num_returns=len(self._fired), timeout=0)
        for ref in done:
            with contextlib.suppress(rex.RayError):
                ray.get(ref)

    def call_sync(self, method: str, *args: Any, timeout: float = 60.0) -> Any:
        try:
            return self.result(self.call(method, *args), timeout)
        except rex.GetTimeoutError:
            raise AgentUnavailable(
                f"the {self.name} did not answer `{method}` within {timeout:g}s",
                hint="the node (or this machine) is overloaded: run fewer jobs at once",
            ) from None

    def _reattach(self) -> None:
        """The connection is gone: make it again and find the node's actor by name."""
        for attempt in range(RECONNECT_TRIES):
            try:
                reconnect(self._address, self._namespace, self._timeout)
                self._actor = ray.get_actor(actor_name(self.node_id), namespace=self._namespace)
                self._fired = []
                return
            except (AgentUnavailable, ValueError) as exc:
                log.warning("reconnecting to %s failed (%s): %s", self.name, attempt + 1, exc)
                time.sleep(1.0)
        raise NodeGone(f"the {self.name} cannot be reached again after the connection was lost")

    def _death(self, exc: BaseException) -> str:
        return death_message(self.node_id, self.ip, exc)


def death_message(node_id: str, ip: str, exc: BaseException) -> str:
    """What a dead actor means: its node died, or only the actor did (its first line)."""
    name = describe_node(node_id, ip)
    try:
        alive = node_id in alive_nodes()
    except Exception:  # the control store itself is gone: say what we know
        log.exception("could not ask the cluster which nodes are alive")
        alive = False
    if not alive:
        return f"the {name} died mid-job"
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return f"the specialists actor on the {name} died mid-job: {first[:200]}"
