"""Open and close an aiosqlite connection so that its worker thread never outlives the call.

aiosqlite runs the calls of each connection on a thread of its own (not a daemon), started when
the connection is awaited. Two of its paths let that thread run on after the coroutine that
owns it has returned:

* ``Connection.close()`` returns once the thread has *taken* the stop request and resolved
  its future; the thread still logs a debug line before it returns. Measured: the thread is
  alive when ``close()`` returns more often than not.
* A cancelled or failed ``aiosqlite.connect()`` queues the stop request and returns without
  waiting at all; the thread later resolves that request's future through the event loop,
  which may be closed by then (``RuntimeError`` raised in the thread).

A thread that runs on does its last work under whatever the process has become meanwhile:
logging handlers bound to streams closed since, an event loop closed since. So here a
connection opened is closed completely: :func:`open_connection` returns an open connection or,
on any failure or cancellation, raises once the thread has returned; :func:`close_connection`
returns once the thread has returned. The wait polls the thread (every
:data:`THREAD_POLL_SECONDS`) rather than joining it, so the event loop is never blocked.

The thread is aiosqlite's private ``Connection._thread`` (since aiosqlite 0.20, the oldest
version this package accepts; ``tests/server/store/test_sqlite_thread.py`` pins it).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import aiosqlite

__all__ = ["THREAD_POLL_SECONDS", "close_connection", "open_connection", "worker_thread"]

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
