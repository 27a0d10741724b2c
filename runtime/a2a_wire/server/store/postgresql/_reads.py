"""The reads of the PostgreSQL store: tasks, pages of tasks, events, and waiting for events.

Every read is one statement through the store's guarded pool (:mod:`._connection`), so
each is bounded by the statement deadline and raises ``StoreUnavailableError`` for a fault of
the database; :meth:`PostgresReads.wait_events` polls, and a poll that fails raises it too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from a2a_wire.server.store._contract.log import READ_LIMIT, EventRange, Snapshot
from a2a_wire.server.store._contract.tasks import TaskPage, TaskQuery
from a2a_wire.server.store._fold.keys import TaskCursor
from a2a_wire.server.store._fold.paging import PageTokens
from a2a_wire.server.store._fold.reads import Found, check_range, list_page
from a2a_wire.server.store.postgresql import _rows as rows
from a2a_wire.server.store.postgresql._listen import GapWaiters
from a2a_wire.server.store.postgresql._rows import Head
from a2a_wire.server.store.postgresql._statements import Statements
from a2a_wire.types import Task

if TYPE_CHECKING:
    from a2a_wire.server.store.postgresql._connection import GuardedPool

__all__ = ["PostgresReads"]


class PostgresReads:
    """The reads of :class:`~._store.PostgresTaskStore`, on the state it passes in.

    Args:
        pool: The store's guarded pool, or ``RuntimeError`` while it is closed.
        sql: The store's statements.
        history_limit: Most messages a task read keeps.
        heads: The heads the store remembers (read only, for the waits).
        waiters: The store's waiting readers, woken by its listener.
        poll: Seconds between a waiting reader's checks of the table.
        tokens: The store's page tokens.
    """

    def __init__(
        self,
        pool: Callable[[], GuardedPool],
        sql: Statements,
        history_limit: int | None,
        heads: Mapping[str, Head],
        waiters: GapWaiters,
        poll: float,
        tokens: PageTokens,
    ) -> None:
        self._pooled = pool
        self._sql = sql
        self._history_limit = history_limit
        self._heads = heads
        self._waiters = waiters
        self._poll = poll
        self._tokens = tokens

    @property
    def _pool(self) -> GuardedPool:
        return self._pooled()

    async def get(self, task_id: str, *, owner: str = "") -> Task | None:
        """A fresh copy of ``owner``'s task, or ``None``."""
        read = await rows.read_task(self._pool, self._sql, task_id, owner, self._history_limit)
        return None if read is None else read.task

    async def snapshot(self, task_id: str, *, owner: str = "") -> Snapshot | None:
        """``owner``'s task with the number of its last event, or ``None``."""
        read = await rows.read_task(self._pool, self._sql, task_id, owner, self._history_limit)
        return None if read is None else Snapshot(read.task, read.seq)

    async def list(self, query: TaskQuery, *, owner: str = "") -> TaskPage:
        """One page of ``owner``'s tasks matching ``query``, newest status first.

        Raises:
            InvalidParamsError: the page token is not valid for this query.
        """

        async def find(after: TaskCursor | None) -> Found:
            return await rows.list_page(
                self._pool, self._sql, query, owner, after, self._history_limit
            )

        return await list_page(self._tokens, query, owner, find)

    async def read_events(
        self, task_id: str, after_seq: int, *, owner: str = "", limit: int = READ_LIMIT
    ) -> EventRange | None:
        """Events numbered above ``after_seq`` (see the protocol).

        Raises:
            ValueError: ``after_seq`` is negative or ``limit`` below 1.
        """
        check_range(after_seq, limit)
        return await rows.read_range(self._pool, self._sql, task_id, owner, after_seq, limit)

    async def wait_events(self, task_id: str, after_seq: int, *, timeout: float) -> bool:
        """Wait for an event above ``after_seq``: woken by a notification, or polling.

        Returns:
            ``True`` when woken or the table has such an event, ``False`` after ``timeout``.
        """

        def known() -> int:
            head = self._heads.get(task_id)
            return 0 if head is None else head.seq

        async def ask() -> int | None:
            last: int | None = await self._pool.fetchval(self._sql.last_seq, task_id)
            return last

        return await self._waiters.wait_after(
            task_id, after_seq, known=known, ask=ask, timeout=timeout, poll=self._poll
        )
