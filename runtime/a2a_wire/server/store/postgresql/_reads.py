"""The reads of the PostgreSQL store: tasks, pages of tasks, events, and waiting for events.

Every read is one statement through the store's guarded pool (:mod:`._connection`), so
each is bounded by the statement deadline and raises ``StoreUnavailableError`` for a fault of
the database; :meth:`PostgresReads.wait_events` polls, and a poll that fails raises it too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from a2a_wire.server.store._contract.log import READ_LIMIT, EventRange, Snapshot
from a2a_wire.server.store._contract.tasks import TaskPage, TaskQuery
from a2a_wire.server.store._fold.keys import issue_cursor, read_cursor
from a2a_wire.server.store._fold.paging import PageTokens, check_page_size
from a2a_wire.server.store.postgresql import _rows as rows
from a2a_wire.server.store.postgresql._listen import GapWaiters
from a2a_wire.server.store.postgresql._rows import Head
from a2a_wire.server.store.postgresql._statements import Statements
from a2a_wire.types import Task

if TYPE_CHECKING:
    from a2a_wire.server.store.postgresql._connection import GuardedPool

__all__ = ["PostgresReads"]


class PostgresReads:
    """The read part of :class:`~._store.PostgresTaskStore`.

    The task store provides the pool and the attributes annotated here.
    """

    page_tokens: PageTokens
    _sql: Statements
    _history_limit: int | None
    _heads: dict[str, Head]
    _waiters: GapWaiters
    _poll: float

    @property
    def _pool(self) -> GuardedPool:
        raise NotImplementedError  # pragma: no cover - provided by the task store

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
        check_page_size(query.page_size)
        after = read_cursor(self.page_tokens, query, owner)
        tasks, last, count = await rows.list_page(
            self._pool, self._sql, query, owner, after, self._history_limit
        )
        token = issue_cursor(self.page_tokens, query, owner, last) if last is not None else ""
        return TaskPage(tasks=tasks, next_page_token=token, total_size=count)

    async def read_events(
        self, task_id: str, after_seq: int, *, owner: str = "", limit: int = READ_LIMIT
    ) -> EventRange | None:
        """Events numbered above ``after_seq`` (see the protocol).

        Raises:
            ValueError: ``after_seq`` is negative or ``limit`` below 1.
        """
        if after_seq < 0 or limit < 1:
            raise ValueError("after_seq must be at least 0 and limit at least 1")
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
