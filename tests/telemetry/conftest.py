"""Fixtures of the telemetry tests: an SDK tracer and meter provider per test, never global.

Each test gets its own :class:`~opentelemetry.sdk.trace.TracerProvider` (spans exported to
memory as they end) and :class:`~opentelemetry.sdk.metrics.MeterProvider` (read on demand), and
hands them to the server and client through a :class:`~a2a_wire.telemetry.Telemetry`; the
process's global providers stay untouched, so other tests (and parallel workers) see nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web
from server_support import ScriptedAgent, make_card
from telemetry_support import Recorded

from a2a_wire.server import create_app


@pytest.fixture
def otel() -> Iterator[Recorded]:
    recorded = Recorded.new()
    yield recorded
    recorded.shutdown()


@pytest.fixture
def app(agent: ScriptedAgent, otel: Recorded) -> web.Application:
    return create_app(make_card(), agent, telemetry=otel.telemetry)


@pytest.fixture
async def client(aiohttp_client: Any, app: web.Application) -> Any:
    return await aiohttp_client(app)
