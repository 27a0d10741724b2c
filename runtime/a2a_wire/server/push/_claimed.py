"""Reading the outbox by claims: the delivery worker of a store several processes deliver.

:class:`ClaimReader` claims due lane heads up to this process's free slots and attempts each
at once; the store hands each row to one process at a time and only in lane order. Each claim
names the rows in flight (``holding``), so rows of a claim whose answer was lost are handed out
again. Theory of operation: docs/internals/push.md.
"""

from __future__ import annotations

import asyncio
import heapq
import logging

from a2a_wire._aio import wait_set
from a2a_wire.server.push._lanes import STORE_RETRY_SECONDS
from a2a_wire.server.push._sender import Outcome, Sender
from a2a_wire.server.store import Delivery, PushClaims, StoreUnavailableError

__all__ = ["ClaimReader"]

log = logging.getLogger("a2a_wire.server.push")


class ClaimReader:
    """Claims and delivers rows of a shared outbox (docs/internals/push.md).

    Args:
        claims: The store, through its claims.
        sender: Attempts and records deliveries.
        max_concurrent: Most rows this process holds claimed (so attempts in flight) at once.
        poll_seconds: Longest time between two claims while there is nothing local to wake for.
    """

    def __init__(
        self, claims: PushClaims, sender: Sender, max_concurrent: int, poll_seconds: float
    ) -> None:
        self._claims = claims
        self._sender = sender
        self._limit = max_concurrent
        self._poll = poll_seconds
        self._wakeup = asyncio.Event()
        self._flying: dict[int, asyncio.Task[None]] = {}
        self._due: list[float] = []
        self._claiming = False

    def wake(self) -> None:
        """Claim again soon: rows were added, or a slot or a lane was freed (wakes coalesce)."""
        self._wakeup.set()

    @property
    def busy(self) -> bool:
        """Whether an attempt is in flight, a claim is due, or a retry of this process waits."""
        return bool(self._flying or self._due) or self._wakeup.is_set() or self._claiming

    async def run(self) -> None:
        """Claim and deliver until cancelled; rows already due are claimed at once."""
        self.wake()
        try:
            while True:
                await self._pause()
                free = self._limit - len(self._flying)
                if free > 0:
                    await self._claim(free)
        finally:
            await self._stop()

    async def _pause(self) -> None:
        """Wait for a wake-up, this process's next retry time, or ``poll_seconds``."""
        clock = asyncio.get_running_loop().time
        timeout = self._poll
        if self._due:
            timeout = min(timeout, max(0.0, self._due[0] - clock()))
        await wait_set(self._wakeup, timeout)
        self._wakeup.clear()
        now = clock()
        while self._due and self._due[0] <= now:
            heapq.heappop(self._due)

    async def _claim(self, free: int) -> None:
        self._claiming = True
        try:
            claimed = await self._claims.claim_deliveries(free, holding=list(self._flying))
        except Exception as exc:  # outermost boundary of a background task: keep serving
            if not isinstance(exc, StoreUnavailableError):  # an outage the store logs once
                log.exception("push outbox could not be claimed from; retrying")
            self.wake()
            await asyncio.sleep(STORE_RETRY_SECONDS)
            return
        finally:
            self._claiming = False
        for delivery in claimed:
            name = f"a2a-push-{delivery.config.task_id}"
            self._flying[delivery.seq] = asyncio.create_task(self._deliver(delivery), name=name)

    async def _deliver(self, delivery: Delivery) -> None:
        try:
            outcome = await self._sender.attempt(delivery)
            delay = await self._record(delivery, outcome)
            if delay is not None:
                heapq.heappush(self._due, asyncio.get_running_loop().time() + delay)
        finally:
            self._flying.pop(delivery.seq, None)
            self.wake()

    async def _record(self, delivery: Delivery, outcome: Outcome) -> float | None:
        while True:
            try:
                return await self._sender.record(delivery, outcome)
            except Exception as exc:  # the database may be back soon; the claim waits for us
                if not isinstance(exc, StoreUnavailableError):
                    log.exception("push delivery %s not recorded; retrying", delivery.delivery_id)
                await asyncio.sleep(STORE_RETRY_SECONDS)

    async def _stop(self) -> None:
        """Cancel the attempts in flight and give their claims back."""
        flying, self._flying = self._flying, {}
        for task in flying.values():
            task.cancel()
        await asyncio.gather(*flying.values(), return_exceptions=True)
        for seq in flying:
            try:
                await self._claims.release_delivery(seq)
            except Exception:  # the claim expires on its own; the store's close ends it too
                log.warning("push claim on outbox row %d not given back", seq)
                break
        self._due.clear()
