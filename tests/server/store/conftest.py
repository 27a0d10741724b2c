"""Fixtures of the store suites: every test taking ``store`` or ``backend`` runs on each backend
of ``store_support.BACKENDS``; ``stores`` and ``admin`` serve the PostgreSQL tests (``pg_stores.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import pytest
from fault_proxy import FaultProxy
from pg_stores import Stores, open_stores
from store_support import BACKENDS, Backend

from a2a_wire.server.store import EventLogStore


@pytest.fixture(params=BACKENDS)
def backend_kind(request: pytest.FixtureRequest) -> str:
    if request.param == "postgresql":
        request.getfixturevalue("postgres_dsn")  # skips, or names the server of the backend
    return str(request.param)


@pytest.fixture
async def backend(backend_kind: str, tmp_path: Path) -> AsyncIterator[Backend]:
    helper = Backend(backend_kind, tmp_path)
    yield helper
    await helper.close_all()


@pytest.fixture
async def store(backend: Backend) -> EventLogStore:
    return await backend.open()


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


@pytest.fixture
async def proxy(postgres_dsn: str) -> AsyncIterator[FaultProxy]:
    """A :class:`~fault_proxy.FaultProxy` to the test server (connect ``through`` it)."""
    where = urlsplit(postgres_dsn)
    faulty = await FaultProxy(where.hostname or "127.0.0.1", where.port or 5432).start()
    yield faulty
    await faulty.close()
