"""Retention in the SQLite task store: expiry, deletion and purge (compaction stays with the log).

The rules are the protocol's (:mod:`a2a_wire.server.store._contract.log`, "Retention"); the statements are
in :mod:`._rows`. Each call is one hop or one write of the store, translated like any
other (:mod:`._faults`).
"""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Callable, Collection, MutableMapping
from typing import Protocol, TypeVar

from a2a_wire.server.store._contract.log import PURGE_BATCH
from a2a_wire.server.store._fold.events import Waiters
from a2a_wire.server.store._fold.keys import state_key
from a2a_wire.server.store.sqlite import _rows as rows
from a2a_wire.server.store.sqlite._connection import transaction
from a2a_wire.server.store.sqlite._rows import Head
from a2a_wire.types import TaskState

__all__ = ["SQLiteRetention"]

T = TypeVar("T")


class Calls(Protocol):
    """How the store runs a function of its connection: its ``_run`` or ``_commit``."""

    async def __call__(self, work: Callable[[sqlite3.Connection], T]) -> T: ...


class SQLiteRetention:
    """The retention of :class:`~._store.SQLiteTaskStore`, on the state it passes in.

    Args:
        run: The store's reads (one hop, faults translated).
        commit: The store's writes (grouped, faults translated).
        heads: The heads the store remembers; a deleted task's is forgotten.
        push_tasks: The tasks with push configs; a deleted task leaves it.
        waiters: The store's waiting readers, woken by a deletion.
    """

    def __init__(
        self,
        run: Calls,
        commit: Calls,
        heads: MutableMapping[str, Head],
        push_tasks: set[str],
        waiters: Waiters,
    ) -> None:
        self._run = run
        self._commit = commit
        self._heads = heads
        self._push_tasks = push_tasks
        self._waiters = waiters

    async def expired(
        self, states: Collection[TaskState], before: float, *, limit: int, logged: bool = False
    ) -> builtins.list[str]:
        """Tasks in ``states`` unchanged since ``before``, oldest first (see the protocol)."""
        keys = sorted(state_key(state) for state in states)
        return await self._run(
            lambda con: rows.tasks_in_states(con, keys, before=before, limit=limit, logged=logged)
        )

    async def delete_task(self, task_id: str) -> bool:
        """Make a task unknown with its push configs, in one transaction (see the protocol)."""
        gone = await self._commit(
            lambda con: transaction(con, lambda: rows.delete_rows(con, task_id))
        )
        self._heads.pop(task_id, None)
        self._push_tasks.discard(task_id)
        self._waiters.wake(task_id)
        return gone

    async def purge(self, *, batch: int = PURGE_BATCH) -> int:
        """Delete up to ``batch`` event and outbox rows of a deleted task (see the protocol).

        Returns:
            Rows deleted, counting the task's entry in ``deleted_tasks`` when it is done.
        """
        return await self._commit(lambda con: transaction(con, lambda: rows.purge_rows(con, batch)))
