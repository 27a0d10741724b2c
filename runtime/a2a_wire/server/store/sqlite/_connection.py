"""The SQLite store's connection: its thread, opened and closed whole, and one call per operation.

:func:`open_connection` and :func:`close_connection` return only once aiosqlite's worker thread
has returned, so no thread outlives the store; :func:`hop` runs one operation as one call on that
thread and :func:`transaction` is the one ``BEGIN IMMEDIATE`` helper. Why: docs/internals/store.md,
"SQLite: the connection's thread".
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

__all__ = [
    "THREAD_POLL_SECONDS",
    "close_connection",
    "hop",
    "open_connection",
    "transaction",
    "worker_thread",
]

T = TypeVar("T")

#: How often a close checks whether the connection's worker thread has returned, in seconds.
#: It returns within a few polls: the thread has only a log line left to write.
THREAD_POLL_SECONDS = 0.001


def worker_thread(db: aiosqlite.Connection) -> threading.Thread:
    """The thread that runs ``db``'s calls (aiosqlite's private ``_thread``)."""
    thread = db._thread
    assert isinstance(thread, threading.Thread)
    return thread


async def _ended(thread: threading.Thread) -> None:
    """Return once ``thread`` has returned (at once if it never started)."""
    while thread.is_alive():
        await asyncio.sleep(THREAD_POLL_SECONDS)


async def open_connection(path: str | Path) -> aiosqlite.Connection:
    """Open ``path`` in autocommit mode (``isolation_level=None``).

    Raises:
        sqlite3.Error: the file cannot be opened; the worker thread has returned.
        asyncio.CancelledError: cancelled while opening; the worker thread has returned.
    """
    db = aiosqlite.connect(path, isolation_level=None)
    try:
        return await db
    except BaseException:
        # aiosqlite queued the stop request without waiting for it; wait here.
        await _ended(worker_thread(db))
        raise


async def close_connection(db: aiosqlite.Connection) -> None:
    """Close ``db`` and return once its worker thread has returned; closing twice is harmless.

    Raises:
        sqlite3.Error: closing failed (the thread is stopped and waited for all the same).
    """
    try:
        await db.close()
    finally:
        await _ended(worker_thread(db))


async def hop(db: aiosqlite.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``work`` on the connection's own thread, as one call (see the module docstring).

    aiosqlite runs each of its calls as a function queued to that thread; this queues ``work``
    itself, through the one entry point every public aiosqlite method uses (``_execute``, the
    same since aiosqlite 0.11; ``tests/server/test_perf_paths.py`` pins it).

    Raises:
        RuntimeError: the store is not open.
    """
    execute: Callable[..., Any] = getattr(db, "_execute")  # noqa: B009  (private, see above)
    result: T = await execute(work, db._conn)
    return result


def transaction(con: sqlite3.Connection, work: Callable[[], T]) -> T:
    """Run ``work`` inside BEGIN IMMEDIATE ... COMMIT on the store's thread, rolling back if it raises.

    The one transaction helper of the SQLite store: task writes, push writes, migration and
    recovery all run inside a :func:`hop`. Inside a transaction already open (a group of writes,
    :mod:`~a2a_wire.server.store.sqlite._group`) it just runs ``work``: the group rolls back
    whole if a write raises and runs its writes again one by one.
    """
    if con.in_transaction:  # a group's: it rolls back whole if ``work`` raises
        return work()
    con.execute("BEGIN IMMEDIATE")
    try:
        result = work()
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
    return result
