"""A task store whose database can be switched off: the in-memory store behind a fault switch.

:class:`SwitchedStore` raises :class:`~a2a_wire.server.store.StoreUnavailableError` from every
call that would reach a database while :attr:`SwitchedStore.down` is set, the way the SQLite and
PostgreSQL stores do for their faults, and while :attr:`SwitchedStore.stall` is cleared each such
call waits for it, like a statement on a frozen connection: at most
:attr:`SwitchedStore.stall_seconds`, then it raises StoreUnavailableError too, as a statement
timeout does. The runtime's own behaviour under faults is tested against it; the real databases'
faults are tested with the real things (tests/server/store/).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from a2a_wire.server.store import (
    Appended,
    EventRange,
    InMemoryTaskStore,
    LogInput,
    Snapshot,
    StoreUnavailableError,
    TaskPage,
    TaskQuery,
)
from a2a_wire.server.store._log import READ_LIMIT
from a2a_wire.types import Task, TaskPushNotificationConfig

STALL_SECONDS = 0.1
"""Default deadline of a stalled call (small: a test's statement timeout)."""


class SwitchedStore(InMemoryTaskStore):
    """The in-memory store, failing (``down``) or stalling (``stall``) on demand.

    Attributes:
        down: Calls raise StoreUnavailableError.
        stall: Cleared, calls wait for it to be set again (``stall.set()`` lets them through),
            ``stall_seconds`` at most, then raise StoreUnavailableError.
        stall_seconds: The deadline of a stalled call.
        failed: How many calls were refused (down, or stalled past the deadline).
    """

    def __init__(self, *, stall_seconds: float = STALL_SECONDS, **options: Any) -> None:
        super().__init__(**options)
        self.down = False
        self.stall = asyncio.Event()
        self.stall.set()
        self.stall_seconds = stall_seconds
        self.failed = 0

    async def _reach(self) -> None:
        if not self.stall.is_set():
            try:
                async with asyncio.timeout(self.stall_seconds):
                    await self.stall.wait()
            except TimeoutError:
                self.failed += 1
                raise StoreUnavailableError(
                    "the switched store stalled past its deadline"
                ) from None
        if self.down:
            self.failed += 1
            raise StoreUnavailableError("the switched store is down")

    async def ping(self) -> None:
        await self._reach()

    async def create(
        self,
        task: Task,
        *,
        owner: str = "",
        push_configs: Sequence[TaskPushNotificationConfig] = (),
        push: bool = False,
        events: Sequence[LogInput] = (),
    ) -> Appended:
        await self._reach()
        return await super().create(
            task, owner=owner, push_configs=push_configs, push=push, events=events
        )

    async def append(
        self, task_id: str, events: Sequence[LogInput], *, push: bool = False
    ) -> Appended:
        await self._reach()
        return await super().append(task_id, events, push=push)

    async def get(self, task_id: str, *, owner: str = "") -> Task | None:
        await self._reach()
        return await super().get(task_id, owner=owner)

    async def snapshot(self, task_id: str, *, owner: str = "") -> Snapshot | None:
        await self._reach()
        return await super().snapshot(task_id, owner=owner)

    async def list(self, query: TaskQuery, *, owner: str = "") -> TaskPage:
        await self._reach()
        return await super().list(query, owner=owner)

    async def read_events(
        self, task_id: str, after_seq: int, *, owner: str = "", limit: int = READ_LIMIT
    ) -> EventRange | None:
        await self._reach()
        return await super().read_events(task_id, after_seq, owner=owner, limit=limit)
