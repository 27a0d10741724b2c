"""Retention: the background task that deletes old tasks and compacts finished event logs.

:class:`Retention` applies the rules of docs/server.md ("Retention") every
``retention_interval_seconds``, by the store's clock, in batches of at most
:data:`RETENTION_BATCH` tasks per store call with the event loop free between calls, so a request
never waits behind it. It starts after the store opens and is awaited before the store closes
(:meth:`Retention.lifecycle`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Collection
from dataclasses import dataclass

from aiohttp import web

from a2a_wire._protocol.states import INTERRUPTED_STATES, TERMINAL_STATES
from a2a_wire.server._settings import ServerSettings
from a2a_wire.server.store import PURGE_BATCH, EventLogStore, StoreUnavailableError
from a2a_wire.types import TaskState

__all__ = ["RETENTION_BATCH", "RETENTION_KEY", "Retention", "Swept"]

log = logging.getLogger("a2a_wire.server")

RETENTION_BATCH = 100
"""Most tasks one store call of a sweep names."""

_WHOLE_LOG = 2**62  # a number above any event's: compact through it drops every event


@dataclass(frozen=True, slots=True)
class Swept:
    """What one pass did.

    Attributes:
        deleted: Tasks deleted.
        compacted: Event logs compacted.
        purged: Rows of deleted tasks removed.
    """

    deleted: int = 0
    compacted: int = 0
    purged: int = 0


class Retention:
    """Deletes and compacts by the settings' retention rules; see docs/server.md, "Retention".

    Args:
        store: The task store.
        settings: The retention settings.
        busy: Whether an agent still runs on a task (such a task is skipped).
        clock: Seconds since the epoch; the store's own clock.
    """

    def __init__(
        self,
        store: EventLogStore,
        settings: ServerSettings,
        busy: Callable[[str], bool] = lambda task_id: False,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._settings = settings
        self._busy = busy
        self._clock = clock
        self._sweeping: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        """Whether the background sweeps run (between the app's start and its cleanup)."""
        return self._sweeping is not None and not self._sweeping.done()

    async def sweep(self) -> Swept:
        """One pass over every rule, in small batches."""
        settings, now = self._settings, self._clock()
        deleted = await self._delete(TERMINAL_STATES, now - settings.terminal_retention_seconds)
        waited = now - settings.interrupted_retention_seconds
        deleted += await self._delete(INTERRUPTED_STATES, waited)
        compacted = await self._compact(now - settings.event_log_retention_seconds)
        purged = 0
        while count := await self._store.purge(batch=PURGE_BATCH):
            purged += count
            await asyncio.sleep(0)
        return Swept(deleted, compacted, purged)

    async def _delete(self, states: Collection[TaskState], before: float) -> int:
        deleted = 0
        while True:
            found = await self._store.expired(states, before, limit=RETENTION_BATCH)
            idle = [task_id for task_id in found if not self._busy(task_id)]
            for task_id in idle:
                deleted += await self._store.delete_task(task_id)
            await asyncio.sleep(0)
            if len(found) < RETENTION_BATCH or not idle:
                return deleted

    async def _compact(self, before: float) -> int:
        compacted = 0
        while True:
            found = await self._store.expired(
                TERMINAL_STATES, before, limit=RETENTION_BATCH, logged=True
            )
            for task_id in found:
                while await self._store.compact(task_id, _WHOLE_LOG, batch=PURGE_BATCH):
                    await asyncio.sleep(0)
                compacted += 1
            await asyncio.sleep(0)
            if len(found) < RETENTION_BATCH:
                return compacted

    async def _run(self) -> None:
        while True:
            try:
                swept = await self.sweep()
            except StoreUnavailableError:
                pass  # an outage the store logs once; the next pass tries again
            except Exception:  # outermost boundary of a background task: keep sweeping
                log.exception("retention sweep failed; trying again later")
            else:
                if swept.deleted or swept.compacted:
                    log.info(
                        "retention: %d tasks deleted, %d event logs compacted",
                        swept.deleted,
                        swept.compacted,
                    )
            await asyncio.sleep(self._settings.retention_interval_seconds)

    async def lifecycle(self, app: web.Application) -> AsyncIterator[None]:
        """An ``app.cleanup_ctx`` entry: sweep while the app runs; stopped before the store."""
        task = self._sweeping = asyncio.create_task(self._run(), name="a2a-retention")
        try:
            yield
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


RETENTION_KEY = web.AppKey("a2a_wire.retention", Retention)
"""The application's retention sweeper."""
