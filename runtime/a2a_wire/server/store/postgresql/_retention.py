"""Retention in the PostgreSQL event log store: compaction, expiry, deletion and purge.

The rules are the protocol's (:mod:`a2a_wire.server.store._contract.log`, "Retention"); the statements
are in :mod:`._schema`. A deleted task's lease and cancel request go with it, in the
deleting statement, so no takeover scan finds a task that is unknown.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Collection, MutableMapping
from typing import TYPE_CHECKING

from a2a_wire.server.store._contract.log import PURGE_BATCH
from a2a_wire.server.store._fold.keys import state_key
from a2a_wire.server.store.postgresql import _rows as rows
from a2a_wire.server.store.postgresql._listen import GapWaiters, payload
from a2a_wire.server.store.postgresql._rows import Head
from a2a_wire.server.store.postgresql._writes import Target, drop_events
from a2a_wire.types import TaskState

if TYPE_CHECKING:
    from a2a_wire.server.store.postgresql._connection import GuardedPool

__all__ = ["PostgresRetention"]


class PostgresRetention:
    """The retention of :class:`~._store.PostgresTaskStore`, on the state it passes in.

    Args:
        pool: The store's guarded pool, or ``RuntimeError`` while it is closed.
        target: The store's statements and channels.
        schema: The store's schema.
        history_limit: Most messages a task keeps (a compaction folds first).
        heads: The heads the store remembers; a deleted task's is forgotten.
        held: The leases the store holds; a deleted task's is forgotten.
        waiters: The store's waiting readers, woken by a deletion or compaction.
    """

    def __init__(
        self,
        pool: Callable[[], GuardedPool],
        target: Target,
        schema: str,
        history_limit: int | None,
        heads: MutableMapping[str, Head],
        held: set[str],
        waiters: GapWaiters,
    ) -> None:
        self._pooled = pool
        self._target = target
        self._sql = target.sql
        self._schema = schema
        self._history_limit = history_limit
        self._heads = heads
        self._held = held
        self._waiters = waiters

    @property
    def _pool(self) -> GuardedPool:
        return self._pooled()

    async def compact(self, task_id: str, through_seq: int, *, batch: int = PURGE_BATCH) -> int:
        """Drop up to ``batch`` events numbered ``through_seq`` or lower (see the protocol)."""
        limit = self._history_limit
        dropped = await drop_events(self._pool, self._target, task_id, through_seq, batch, limit)
        if dropped:
            self._waiters.wake(task_id)
        return int(dropped)

    async def expired(
        self, states: Collection[TaskState], before: float, *, limit: int, logged: bool = False
    ) -> builtins.list[str]:
        """Tasks in ``states`` unchanged since ``before``, oldest first (see the protocol).

        A task that is not running but leased to a process (a follow-up resuming it there)
        is left out: it is busy for every process's sweeper, not only for the holder's.
        """
        keys = sorted(state_key(state) for state in states)
        found = await self._pool.fetch(self._sql.expired, keys, before, limit, logged)
        return [task_id for (task_id,) in found]

    async def delete_task(self, task_id: str) -> bool:
        """Make a task unknown with its push configs, lease and cancel request, in one statement."""
        note = payload(task_id, 0)
        gone = await self._pool.fetchval(self._sql.delete, task_id, self._target.channel, note)
        self._heads.pop(task_id, None)
        self._held.discard(task_id)
        self._waiters.wake(task_id)
        return bool(gone)

    async def purge(self, *, batch: int = PURGE_BATCH) -> int:
        """Delete up to ``batch`` event and outbox rows of a deleted task (see the protocol).

        Returns:
            Rows deleted, counting the task's own row when it is done.
        """
        async with self._pool.acquire() as conn, conn.transaction():
            return await rows.purge_rows(conn, self._schema, batch)
