"""The fake beside the Ray executor: the node core on an event loop in this process.

`LoopbackNode` runs a `NodeCore` (node.py) on its own thread's event loop and serves the
node-client seam (remote.py) with futures instead of Ray refs, so `RemoteHost`,
`RemoteProcess` and `RemoteJobRunner` are tested without a cluster. `LoopbackConnector`
places every job on it. `kill()` plays a node that dies: every later call is `NodeGone`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specialists.executors.node import NodeCore
from specialists.executors.remote import NodeGone

Pending = concurrent.futures.Future[Any]


class LoopbackNode:
    def __init__(self, root: Path, name: str = "loopback node") -> None:
        self.name = name
        self.node_id = "loopback"
        self.core = NodeCore(root, node_id=self.node_id, node_ip="127.0.0.1")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.dead = False

    def call(self, method: str, *args: Any) -> Pending:
        if self.dead:
            failed: Pending = concurrent.futures.Future()
            failed.set_exception(NodeGone(f"the {self.name} died mid-job"))
            return failed
        coroutine = getattr(self.core, method)(*args)
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def wait(self, pending: Pending, timeout: float) -> bool:
        done, _ = concurrent.futures.wait([pending], timeout=max(0.0, timeout))
        return bool(done)

    def result(self, pending: Pending, timeout: float | None = None) -> Any:
        if self.dead and not pending.done():
            raise NodeGone(f"the {self.name} died mid-job")
        return pending.result(timeout)

    def fire(self, method: str, *args: Any) -> None:
        self.call(method, *args)

    def reap(self) -> None:
        return None

    def call_sync(self, method: str, *args: Any, timeout: float = 60.0) -> Any:
        return self.result(self.call(method, *args), timeout)

    def kill(self) -> None:
        """The node dies: its processes are killed, its calls fail from now on."""
        for proc in list(self.core.procs.values()):
            self._loop.call_soon_threadsafe(proc.kill_job)
        self.dead = True

    def close(self) -> None:
        for proc_id in list(self.core.procs):
            asyncio.run_coroutine_threadsafe(self.core.kill(proc_id, "job"), self._loop).result(10)
        asyncio.run_coroutine_threadsafe(self._stop_watchdog(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _stop_watchdog(self) -> None:
        watchdog = self.core._watchdog
        if watchdog is not None:
            watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watchdog


class LoopbackPlacement:
    def __init__(self, node: LoopbackNode) -> None:
        self.client = node
        self.node = node.name
        self.node_id = node.node_id
        self.released = 0

    def release(self) -> None:
        self.released += 1


class LoopbackConnector:
    def __init__(self, node: LoopbackNode) -> None:
        self.node = node
        self.placements: list[LoopbackPlacement] = []

    def place(self, job_key: str, settings: Mapping[str, Any]) -> LoopbackPlacement:
        placement = LoopbackPlacement(self.node)
        self.placements.append(placement)
        return placement

    def attach(self, node_id: str, settings: Mapping[str, Any]) -> LoopbackPlacement:
        return self.place(node_id, settings)
