"""Concurrency slots that favour later pipeline stages.

A plain semaphore wakes waiters first come, first served, so a pipeline over many items
would run every item's first stage before any second stage: a barrier in all but name. Here a
waiter carries its stage number, and a freed slot goes to the deepest stage waiting (first
come among equals), so items flow through to their end and the first finished items come
early. The grant is made on the next loop step, so the task that freed a slot can queue its
own next stage before anyone else takes the slot.
"""

from __future__ import annotations

import asyncio
import contextvars
import heapq
import itertools
from types import TracebackType

STAGE: contextvars.ContextVar[int] = contextvars.ContextVar("workflow_stage", default=0)


class Slots:
    def __init__(self, size: int) -> None:
        self._free = max(1, size)
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    async def acquire(self) -> None:
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (-STAGE.get(), next(self._order), future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # granted just as we were cancelled: hand it on
            raise

    def release(self) -> None:
        self._free += 1
        asyncio.get_running_loop().call_soon(self._grant)

    def _grant(self) -> None:
        while self._free > 0 and self._waiters:
            _, _, future = heapq.heappop(self._waiters)
            if future.cancelled():
                continue
            self._free -= 1
            future.set_result(None)

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
