"""A closed SQLite store leaves no aiosqlite worker thread running, however it was closed.

aiosqlite's ``close()`` returns before its thread has returned, and a cancelled connect does not
wait for it at all (:mod:`a2a_wire.server.store.sqlite._connection`). A thread that runs on does
its last work in whatever test comes next: it logged to a stream captured by a test that had
ended (``--- Logging error ---``) and could reach an event loop closed since. To make that
window wide, these tests hold the worker thread in a log handler for :data:`HOLD_SECONDS`
while it writes its last lines: without the wait, the store's call returns while the thread is
held, and the check that no worker thread is alive fails. With it the call returns later; a
slow machine cannot make these tests fail.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from server_support import serve_like_the_cli

from a2a_wire.cli._app import build_app
from a2a_wire.cli.config import load
from a2a_wire.server._app import RUNTIME_KEY, STORE_KEY
from a2a_wire.server.store import SQLiteTaskStore
from a2a_wire.server.store.sqlite._connection import worker_thread

#: How long the worker thread is held in its log lines (a widened window, never waited for).
HOLD_SECONDS = 0.2


def _last_lines(record: logging.LogRecord) -> bool:
    """The lines the thread logs once it has taken the stop request."""
    return "close_and_stop" in str(record.args)


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if "_connection_worker_thread" in t.name]


class _Hold(logging.Handler):
    """Holds the worker thread in each record it logs for which ``when`` is true."""

    def __init__(self, when: Callable[[logging.LogRecord], bool]) -> None:
        super().__init__(logging.DEBUG)
        self.when = when
        self.held = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if threading.current_thread() is not threading.main_thread() and self.when(record):
            self.held.set()
            threading.Event().wait(HOLD_SECONDS)


@pytest.fixture
def hold() -> Iterator[Callable[[Callable[[logging.LogRecord], bool]], _Hold]]:
    logger = logging.getLogger("aiosqlite")
    level, handlers = logger.level, []

    def install(when: Callable[[logging.LogRecord], bool]) -> _Hold:
        handler = _Hold(when)
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
        handlers.append(handler)
        return handler

    yield install
    for handler in handlers:
        logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.fixture(autouse=True)
def no_worker_before() -> None:
    assert _workers() == [], "a worker thread of an earlier test is still running"


async def test_close_returns_once_the_thread_has_returned(tmp_path: Path, hold: Callable) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.sqlite3")
    await store.open()
    assert len(_workers()) == 1
    hold(_last_lines)
    await store.close()
    assert _workers() == []
    await store.close()  # twice is harmless


async def test_a_cancelled_open_leaves_no_thread(tmp_path: Path, hold: Callable) -> None:
    # Held while it opens the file: the connect is cancelled before it has a connection.
    held = hold(lambda record: "connector" in str(record.args))
    store = SQLiteTaskStore(tmp_path / "tasks.sqlite3")
    opening = asyncio.create_task(store.open())
    while not held.held.is_set():
        await asyncio.sleep(0.001)
    opening.cancel()
    with pytest.raises(asyncio.CancelledError):
        await opening
    assert _workers() == []
    assert await store.open() == []  # nothing holds the file
    await store.close()


async def test_a_failed_open_leaves_no_thread(tmp_path: Path, hold: Callable) -> None:
    first = SQLiteTaskStore(tmp_path / "tasks.sqlite3")
    await first.open()
    try:
        hold(_last_lines)
        second = SQLiteTaskStore(tmp_path / "tasks.sqlite3")
        with pytest.raises(
            RuntimeError,
            match=r"in use by another a2a-wire process \(or another store in this process\)",
        ):
            await second.open()
        assert _workers() == [worker_thread(first._conn)]
    finally:
        await first.close()
    assert _workers() == []


def _sqlite_app(tmp_path: Path) -> tuple[Any, SQLiteTaskStore]:
    path = tmp_path / "serve.toml"
    path.write_text('[server]\nstorage = "sqlite"\n', encoding="utf-8")
    app, _ = build_app(load(path, data_dir=str(tmp_path / "data")))
    store = app[STORE_KEY]
    assert isinstance(store, SQLiteTaskStore)
    return app, store


async def test_an_app_stopped_leaves_no_thread(tmp_path: Path, hold: Callable) -> None:
    app, _ = _sqlite_app(tmp_path)
    hold(_last_lines)
    async with serve_like_the_cli(app):
        assert len(_workers()) == 1
    assert _workers() == []


async def test_the_store_closes_when_stopping_the_runtime_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, store = _sqlite_app(tmp_path)
    runtime = app[RUNTIME_KEY]

    stop = runtime.close
    calls = 0

    async def broken() -> None:  # the shutdown's call works, the cleanup's (the second) fails
        nonlocal calls
        calls += 1
        await stop()
        if calls == 2:
            raise OSError("the runtime could not stop")

    with pytest.raises(OSError, match="could not stop"):
        async with serve_like_the_cli(app):
            monkeypatch.setattr(runtime, "close", broken)
    assert calls == 2
    assert store._db is None and _workers() == []


def test_the_worker_thread_is_where_this_package_looks() -> None:
    """Pins aiosqlite's private ``Connection._thread`` (``_sqlite_thread`` waits for it)."""
    db = aiosqlite.connect(":memory:")
    assert isinstance(worker_thread(db), threading.Thread)
    assert not worker_thread(db).is_alive()  # started only when awaited
