"""Reading the outbox by lanes: the delivery worker of a store that only one process delivers.

A lane, the rows of one ``(task_id, config_id)``, is served by one task that reads its next row
only once the head was delivered or given up. The head is read again before each attempt, so a
config deleted meanwhile gets nothing more. See docs/internals/push.md.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Final

from a2a_wire.server.push._sender import Sender
from a2a_wire.server.store import Delivery, LaneKey, PushStore, StoreUnavailableError

__all__ = ["STORE_RETRY_SECONDS", "LaneReader"]

log = logging.getLogger("a2a_wire.server.push")

STORE_RETRY_SECONDS: Final = 1.0
"""Seconds a worker waits after the store failed it before asking again."""


@dataclass(slots=True)
class _Lane:
    task: asyncio.Task[None]
    dirty: bool = False


class LaneReader:
    """Serves every lane of one store's outbox, one row at a time per lane.

    Args:
        store: The store holding configs and outbox.
        sender: Attempts and records deliveries.
        max_concurrent: Most attempts in flight at once.
    """

    def __init__(self, store: PushStore, sender: Sender, max_concurrent: int) -> None:
        self._store = store
        self._sender = sender
        self._wakeup = asyncio.Event()
        self._lanes: dict[LaneKey, _Lane] = {}
        self._seen = 0
        self._reading = False
        self._slots = asyncio.Semaphore(max_concurrent)

    def wake(self) -> None:
        """Tell the reader that rows were added (cheap; wakes coalesce)."""
        self._wakeup.set()

    @property
    def busy(self) -> bool:
        """Whether any lane is at work (sending, waiting to retry, or reading its next row)."""
        return bool(self._lanes) or self._wakeup.is_set() or self._reading

    async def run(self) -> None:
        """Read until cancelled; rows already stored are read at once."""
        self.wake()
        try:
            await self._read_loop()
        finally:
            await self._stop_lanes()

    async def _stop_lanes(self) -> None:
        tasks = [lane.task for lane in self._lanes.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._lanes.clear()

    async def _read_loop(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            self._reading = True
            try:
                lanes, self._seen = await self._store.pending_lanes(self._seen)
            except Exception as exc:  # outermost boundary of a background task: keep serving
                if not isinstance(exc, StoreUnavailableError):  # an outage the store logs once
                    log.exception("push outbox could not be read; retrying")
                await asyncio.sleep(STORE_RETRY_SECONDS)
                self.wake()
                continue
            finally:
                self._reading = False
            for key in lanes:
                lane = self._lanes.get(key)
                if lane is not None:
                    lane.dirty = True
                else:
                    task = asyncio.create_task(self._run_lane(key), name=f"a2a-push-{key[0]}")
                    self._lanes[key] = _Lane(task)

    async def _run_lane(self, key: LaneKey) -> None:
        while True:
            try:
                delivery = await self._store.next_delivery(*key)
                if delivery is not None:
                    await self._serve(delivery)
                    continue
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # outermost boundary of a background task: keep the lane
                if not isinstance(exc, StoreUnavailableError):  # an outage the store logs once
                    log.exception("push lane of task %s failed; retrying", key[0])
                await asyncio.sleep(STORE_RETRY_SECONDS)
                continue
            lane = self._lanes[key]
            if not lane.dirty:
                del self._lanes[key]
                return
            lane.dirty = False

    async def _serve(self, delivery: Delivery) -> None:
        """Wait for the row's time, or attempt it and record the outcome."""
        wait = delivery.next_attempt_at - time.time()
        if wait > 0:
            await asyncio.sleep(wait)
            return  # re-read the row: it may have been deleted meanwhile
        async with self._slots:
            outcome = await self._sender.attempt(delivery)
        await self._sender.record(delivery, outcome)
