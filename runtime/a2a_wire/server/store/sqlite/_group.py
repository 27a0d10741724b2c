"""Group commit of the SQLite store: writes that queue up together share one hop and one commit.

A write that raises gets its own exception and the others commit (the group is rolled back and
run again one by one); nothing is visible, and no caller answered, before the group's commit.
See docs/internals/store.md, "SQLite: group commit".
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["MAX_GROUP", "WriteGroup", "run_group"]

T = TypeVar("T")

Work = Callable[[sqlite3.Connection], Any]
Outcome = tuple[bool, Any]  # (True, result) or (False, the exception raised)
Hop = Callable[[Callable[[sqlite3.Connection], list[Outcome]]], Awaitable[list[Outcome]]]

MAX_GROUP = 256
"""Most writes one transaction takes; more wait for the next (bounds a group's time on the
thread)."""


def run_group(con: sqlite3.Connection, works: list[Work]) -> list[Outcome]:
    """Run ``works`` on the connection's thread; one alone as it is, several in one transaction.

    If one of several raises, the transaction is rolled back and each work runs again alone, in
    order, as a lone write would (failures are rare: a duplicate id, a task deleted meanwhile),
    so that the one that raised gets its own exception and the others commit. The works are
    plain functions of the connection, with no other effect, so running one again is safe (a
    fold from a shadow gives the same task again, :meth:`~a2a_wire.server.store._fold.events.Shadow.fold`).

    Returns:
        One outcome per work, in order: ``(True, result)`` or ``(False, exception)``.

    Raises:
        sqlite3.Error: ``BEGIN`` or ``COMMIT`` failed; nothing of the group was written.
    """
    if len(works) == 1:
        return [_outcome(con, works[0])]
    con.execute("BEGIN IMMEDIATE")
    try:
        results = [work(con) for work in works]
    except Exception:
        if con.in_transaction:  # some errors (SQLITE_FULL, say) end the transaction themselves
            con.execute("ROLLBACK")
        return [_outcome(con, work) for work in works]
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise
    try:
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise
    return [(True, result) for result in results]


def _outcome(con: sqlite3.Connection, work: Work) -> Outcome:
    try:
        return True, work(con)
    except Exception as exc:  # the caller's own error, raised again on the event loop
        return False, exc


class WriteGroup:
    """Queues writes and hands them to the connection's thread in groups (see the module).

    Args:
        hop: Runs one function on the connection's thread and returns its result.
    """

    def __init__(self, hop: Hop) -> None:
        self._hop = hop
        self._queue: list[tuple[Work, asyncio.Future[Any]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` with the writes queued beside it; its result once the group committed.

        Raises:
            Exception: what ``work`` raised (its writes were rolled back), or what the commit
                raised.
        """
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.append((work, future))
        if self._flusher is None:
            self._flusher = asyncio.get_running_loop().create_task(self._flush())
        return await future

    async def drain(self) -> None:
        """Return once every queued write has been run (for the store's ``close``)."""
        while self._flusher is not None:
            await asyncio.wait((self._flusher,))  # waits without cancelling it

    async def _flush(self) -> None:
        group: list[tuple[Work, asyncio.Future[Any]]] = []
        try:
            while self._queue:
                group, self._queue = self._queue[:MAX_GROUP], self._queue[MAX_GROUP:]
                works = [work for work, _ in group]
                try:
                    outcomes = await self._hop(functools.partial(run_group, works=works))
                except Exception as exc:  # handed to every caller of the group
                    outcomes = [(False, exc)] * len(group)
                for (_, future), (ok, value) in zip(group, outcomes, strict=True):
                    if future.done():  # its caller was cancelled; the write itself ran
                        continue
                    if ok:
                        future.set_result(value)
                    else:
                        future.set_exception(value)
                group = []
        finally:  # cancelled (the loop is closing): nobody may wait for ever
            for _, future in [*group, *self._queue]:
                future.cancel()
            self._queue = []
            self._flusher = None
