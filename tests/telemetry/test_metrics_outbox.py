"""The push outbox's gauges: deliveries waiting (depth) and the age of the oldest, read when
metrics are collected; during a webhook outage the depth holds and the age grows, and the
delivery lag of the events delivered after it covers the outage."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from push_support import AUTH, TOKEN, Hook, local_settings, wait_until
from server_support import ScriptedAgent, make_card, result, send_params
from telemetry_support import Recorded

from a2a_wire.server import ServerSettings, create_app

DEPTH = "a2a.server.push.outbox.depth"
AGE = "a2a.server.push.outbox.age"


def _inline(url: str) -> dict[str, Any]:
    config = {"url": url, "token": TOKEN, "authentication": AUTH.to_dict()}
    return {"taskPushNotificationConfig": config}


def _gauge(otel: Recorded, metric: str) -> float | None:
    """The gauge's one point as collected now (``None`` before the first count is read)."""
    points = otel.points(metric)
    assert len(points) <= 1
    return points[0].value if points else None


@pytest.fixture
async def outage(aiohttp_client: Any, aiohttp_server: Any, otel: Recorded) -> Hook:
    """An echo task sent with a webhook whose first answer hangs until ``released`` is set."""
    hook = Hook(script=["hang"])
    webhook = await aiohttp_server(hook.app)
    settings = ServerSettings(push=local_settings())
    app = create_app(
        make_card(push=True), ScriptedAgent(), settings=settings, telemetry=otel.telemetry
    )
    client = await aiohttp_client(app)
    url = str(webhook.make_url("/webhook"))
    await result(client, "SendMessage", send_params("echo", _inline(url)))
    await wait_until(lambda: len(hook.requests) == 1)  # the first attempt hangs
    return hook


async def test_an_outage_holds_the_depth_and_ages_the_oldest_delivery(
    outage: Hook, otel: Recorded
) -> None:
    hook = outage

    # Collected on another thread (as an exporter or a scrape does): a fresh count at once.
    depth = await asyncio.to_thread(_gauge, otel, DEPTH)
    assert depth == 4  # the echo's four events, none delivered
    first_age = await asyncio.to_thread(_gauge, otel, AGE)
    assert first_age is not None and first_age >= 0
    await asyncio.sleep(0.05)
    later_age = await asyncio.to_thread(_gauge, otel, AGE)
    assert later_age is not None and later_age > first_age  # the backlog ages while it waits
    reads = [  # collected on the loop: the count it asks for is not made yet
        p.count
        for p in otel.points("a2a.server.store.duration")
        if p.attributes["a2a.store.operation"] == "outbox_backlog"
    ]
    assert reads == [3]  # one query per collection, not one per gauge

    hook.released.set()  # the webhook is back: the hung attempt fails, the retry delivers
    await wait_until(lambda: len(hook.events) == 4)
    assert await asyncio.to_thread(_gauge, otel, DEPTH) == 0
    assert await asyncio.to_thread(_gauge, otel, AGE) == 0
    [lag] = otel.points("a2a.server.push.lag")
    assert lag.count == 4 and lag.max >= later_age  # the first event waited out the outage


async def test_a_collection_on_the_loop_reports_the_count_read_for_it_next(
    outage: Hook, otel: Recorded
) -> None:
    hook = outage
    assert _gauge(otel, DEPTH) is None  # cannot wait on its own loop: a count is asked for
    await wait_until(lambda: _gauge(otel, DEPTH) == 4)
    hook.released.set()
    await wait_until(lambda: len(hook.events) == 4)
    await wait_until(lambda: _gauge(otel, DEPTH) == 0)


async def test_an_app_without_push_reports_no_outbox(client: Any, otel: Recorded) -> None:
    await result(client, "SendMessage", send_params("echo"))
    assert otel.points(DEPTH) == [] and otel.points(AGE) == []
