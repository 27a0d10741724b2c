"""Helpers of the PostgreSQL store tests: stores on one schema stand for processes.

The fixtures that use them (``stores``, ``admin``) are in this folder's ``conftest.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from a2a_wire.server.store import PostgresTaskStore

DEADLINE = 60.0
"""Generous seconds for a condition a test waits for (the machine may be busy)."""

Stores = Callable[..., Awaitable[PostgresTaskStore]]
"""Opens one more store (one more process) on the test's schema, with options."""


class LeaseClock:
    """A lease clock the test moves by hand, so that no lease expires on its own."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def open_stores(dsn: str, schema: str) -> AsyncIterator[Stores]:
    """Opens stores on ``schema`` (the first one recovers, as a lone process would)."""
    opened: list[PostgresTaskStore] = []

    async def open_store(**options: Any) -> PostgresTaskStore:
        options.setdefault("recover", not opened)
        store = PostgresTaskStore(dsn, schema=schema, **options)
        await store.open()
        opened.append(store)
        return store

    try:
        yield open_store
    finally:
        for store in opened:
            await store.close()


async def until(condition: Callable[[], bool]) -> None:
    """Wait for ``condition`` with a generous deadline."""
    async with asyncio.timeout(DEADLINE):
        while not condition():
            await asyncio.sleep(0.01)
