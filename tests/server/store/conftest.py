"""Fixtures of the PostgreSQL store tests (helpers: ``pg_stores.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest
from pg_stores import Stores, open_stores


@pytest.fixture
async def stores(postgres_dsn: str, postgres_schema: str) -> AsyncIterator[Stores]:
    """Opens stores on the test's schema and closes them after the test."""
    async with open_stores(postgres_dsn, postgres_schema) as open_store:
        yield open_store


@pytest.fixture
async def admin(postgres_dsn: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection of the test's own, outside every store."""
    conn = await asyncpg.connect(postgres_dsn)
    yield conn
    await conn.close()
