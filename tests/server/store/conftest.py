"""Fixtures of the store suites: every test taking ``store`` or ``backend`` runs on each backend
of ``store_support.BACKENDS``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from store_support import BACKENDS, Backend

from a2a_wire.server.store import EventLogStore


@pytest.fixture(params=BACKENDS)
def backend_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def backend(backend_kind: str, tmp_path: Path) -> AsyncIterator[Backend]:
    helper = Backend(backend_kind, tmp_path)
    yield helper
    await helper.close_all()


@pytest.fixture
async def store(backend: Backend) -> EventLogStore:
    return await backend.open()
