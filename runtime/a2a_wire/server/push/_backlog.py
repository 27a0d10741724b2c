"""The push outbox's backlog for the metrics: how many deliveries wait, and since when.

The gauges ``a2a.server.push.outbox.depth`` and ``.age`` are read by the metrics SDK when it
collects (each export, or each scrape), never per request. A collection on another thread (the
SDK's exporter, a scrape server) asks the event loop for a fresh count (one query) and waits
:data:`READ_SECONDS` at most; one made on the loop's own thread cannot wait, so it reports the
last count and has a new one read for the next. The age is measured from the oldest row's
creation at the time of the collection, so a webhook outage shows as an age that grows.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from typing import Final

from a2a_wire.server.store import PushStore, StoreUnavailableError

__all__ = ["READ_SECONDS", "Backlog"]

log = logging.getLogger("a2a_wire.server.push")

READ_SECONDS: Final = 2.0
"""Longest time a collection on another thread waits for a fresh count (else the last one)."""


class Backlog:
    """The outbox's depth and the time of its oldest row, read from the store on demand.

    Args:
        store: The store holding the outbox.
    """

    def __init__(self, store: PushStore) -> None:
        self._store = store
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reading: asyncio.Task[None] | None = None
        self._last: tuple[int, float | None] | None = None

    def start(self) -> None:
        """Read on the running loop from now on (the deliverer's start)."""
        self._loop = asyncio.get_running_loop()

    def stop(self) -> None:
        """Read no more; a read in progress is cancelled."""
        self._loop = None
        reading, self._reading = self._reading, None
        if reading is not None:
            reading.cancel()

    def observe(self, *, read: bool = True) -> tuple[int, float] | None:
        """``(depth, age in seconds)``: a fresh count when it can be waited for, else the last.

        ``read=False`` skips the count (the age is still measured now). ``None`` before the
        first count (or while the store cannot be read at all). Safe to call from any thread.
        """
        loop = self._loop
        if read and loop is not None and not loop.is_closed():
            try:
                here = asyncio.get_running_loop() is loop
            except RuntimeError:
                here = False
            if here:
                self._read_soon()
            else:
                self._wait_for_read(loop)
        last = self._last
        if last is None:
            return None
        depth, oldest = last
        return depth, 0.0 if oldest is None else max(0.0, time.time() - oldest)

    def _wait_for_read(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            future = asyncio.run_coroutine_threadsafe(self._read(), loop)
        except RuntimeError:  # the loop closed meanwhile
            return
        try:
            future.result(timeout=READ_SECONDS)
        except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
            future.cancel()

    def _read_soon(self) -> asyncio.Task[None]:
        if self._reading is None or self._reading.done():
            self._reading = asyncio.get_running_loop().create_task(self._count())
        return self._reading

    async def _read(self) -> None:
        await asyncio.shield(self._read_soon())

    async def _count(self) -> None:
        try:
            self._last = await self._store.outbox_backlog()
        except StoreUnavailableError:
            pass  # the store logs its outage; the last count stands
        except Exception:  # a background read's boundary: the metrics keep the last count
            log.exception("push outbox backlog could not be read")
