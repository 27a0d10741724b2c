"""Leases on PostgreSQL, two servers on one schema standing for two processes: a takeover is
counted by the server that ended the expired lease, a lost lease by the one that held it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from server_support import ScriptedAgent, make_card, result, send_params
from telemetry_support import Recorded

from a2a_wire.server import create_app
from a2a_wire.server.store import PostgresTaskStore

LEASE_SECONDS = 10.0


@dataclass
class Server:
    client: Any
    store: PostgresTaskStore
    agent: ScriptedAgent
    otel: Recorded


@dataclass
class Clock:
    """The lease clock of both stores: it moves only when the test moves it."""

    now: float = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def servers(
    aiohttp_client: Any, postgres_dsn: str, postgres_schema: str, clock: Clock
) -> AsyncIterator[list[Server]]:
    """Two servers on the test's schema whose keepers do not beat (the test beats and scans)."""
    made: list[Server] = []
    for first in (True, False):
        store = PostgresTaskStore(
            postgres_dsn,
            schema=postgres_schema,
            lease_seconds=LEASE_SECONDS,
            lease_clock=clock,
            heartbeat_seconds=None,
            recover=first,
        )
        otel = Recorded.new()
        agent = ScriptedAgent()
        app = create_app(make_card(), agent, store=store, telemetry=otel.telemetry)
        made.append(Server(await aiohttp_client(app), store, agent, otel))
    yield made
    for server in made:
        server.otel.shutdown()


async def test_a_takeover_and_the_lost_lease_are_counted_where_each_happens(
    servers: list[Server], clock: Clock
) -> None:
    a, b = servers
    sent = asyncio.create_task(result(a.client, "SendMessage", send_params("wait")))
    await asyncio.wait_for(a.agent.started.wait(), 60)  # A runs the task and holds its lease
    [task] = (await result(a.client, "ListTasks", {}))["tasks"]
    assert a.store.holds(task["id"])
    clock.now += LEASE_SECONDS + 1  # A's lease expires (its keeper does not renew it)

    assert await b.store.take_over() == [task["id"]]  # B fails the task A stopped renewing
    takeovers = "a2a.server.lease.takeovers"
    assert b.otel.total(takeovers, **{"a2a.lease.outcome": "failed"}) == 1
    assert a.otel.total(takeovers) == 0

    assert await a.store.heartbeat() == [task["id"]]  # A finds its lease gone; its run stops
    assert a.otel.total("a2a.server.lease.lost") == 1
    assert b.otel.total("a2a.server.lease.lost") == 0
    answer = await asyncio.wait_for(sent, 60)
    assert answer["task"]["status"]["state"] == "TASK_STATE_FAILED"
    scans = [
        p
        for p in b.otel.points("a2a.server.store.duration")
        if p.attributes["a2a.store.operation"] == "take_over"
    ]
    assert [p.count for p in scans] == [1]  # the scan is timed as a store call too
