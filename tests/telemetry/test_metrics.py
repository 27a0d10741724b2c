"""Metrics: request durations by method and ``error.type`` (seconds), tasks created,
store-unavailable answers, store call durations by operation, runs in progress and their
durations, stream events, state transitions."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web
from fault_store import FaultyStore
from patience import poll
from server_support import ScriptedAgent, error, make_card, result, send_params, stream
from telemetry_support import Recorded

from a2a_wire.server import create_app
from a2a_wire.server._store_timing import OPERATIONS
from a2a_wire.server.store import InMemoryTaskStore
from a2a_wire.telemetry import Telemetry


async def test_server_durations_by_method_and_error_type(client: Any, otel: Recorded) -> None:
    await result(client, "SendMessage", send_params("echo"))
    await result(client, "ListTasks", {})
    await error(client, "GetTask", {"id": "no-such-task"})
    points = {
        (p.attributes["a2a.method.name"], p.attributes.get("error.type")): p
        for p in otel.points("a2a.server.request.duration")
    }
    assert set(points) == {("SendMessage", None), ("ListTasks", None), ("GetTask", "-32001")}
    assert all(p.count == 1 for p in points.values())
    assert 0 < points["ListTasks", None].sum < 60  # seconds, not milliseconds


async def test_tasks_created_counts_new_tasks_only(client: Any, otel: Recorded) -> None:
    first = (await result(client, "SendMessage", send_params("input")))["task"]
    assert otel.total("a2a.server.task.created") == 1
    follow = send_params("more", taskId=first["id"], contextId=first["contextId"])
    await result(client, "SendMessage", follow)  # a follow-up: the same task
    await result(client, "SendMessage", send_params("reply"))  # a Message: no task
    await result(client, "GetTask", {"id": first["id"]})
    assert otel.total("a2a.server.task.created") == 1
    await stream(client, "SendStreamingMessage", send_params("echo"))
    assert otel.total("a2a.server.task.created") == 2


@pytest.fixture
async def faulty(aiohttp_client: Any, agent: ScriptedAgent, otel: Recorded) -> Any:
    """A client of an app whose store fails on demand, and that store."""
    store = FaultyStore()
    app: web.Application = create_app(make_card(), agent, store=store, telemetry=otel.telemetry)
    return await aiohttp_client(app), store


async def _list_tasks(client: Any) -> Any:
    return await client.post(
        "/",
        json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}},
        headers={"A2A-Version": "1.0"},
    )


async def test_store_unavailable_answers_are_counted(faulty: Any, otel: Recorded) -> None:
    client, store = faulty
    store.down = True
    response = await _list_tasks(client)
    assert response.status == 503
    assert otel.total("a2a.server.store.unavailable", **{"a2a.method.name": "ListTasks"}) == 1
    [span] = otel.spans("ListTasks")
    assert span.attributes["error.type"] == "-32000"


async def test_runs_in_progress_and_their_durations(
    client: Any, agent: ScriptedAgent, otel: Recorded
) -> None:
    sent = asyncio.create_task(result(client, "SendMessage", send_params("wait")))
    await asyncio.wait_for(agent.started.wait(), 60)
    assert otel.total("a2a.server.active_runs") == 1  # the run holds at the gate
    agent.gate.set()
    await sent
    await poll(lambda: _total(otel, "a2a.server.active_runs"), lambda n: n == 0)
    await result(client, "SendMessage", send_params("raise"))
    points = {p.attributes.get("error.type"): p for p in otel.points("a2a.server.run.duration")}
    assert set(points) == {None, "RuntimeError"}
    assert all(p.attributes["gen_ai.agent.name"] == "scripted" for p in points.values())


async def test_stream_events_are_counted_by_method(client: Any, otel: Recorded) -> None:
    events = await stream(client, "SendStreamingMessage", send_params("echo"))
    method = {"a2a.method.name": "SendStreamingMessage"}
    assert otel.total("a2a.server.stream.events", **method) == len(events) >= 3


async def _total(otel: Recorded, metric: str) -> float:
    return otel.total(metric)


async def test_state_transitions_are_counted_by_the_state_entered(
    client: Any, otel: Recorded
) -> None:
    first = (await result(client, "SendMessage", send_params("input")))["task"]
    follow = send_params("more", taskId=first["id"], contextId=first["contextId"])
    await result(client, "SendMessage", follow)

    entered = {
        p.attributes["a2a.task.state"]: p.value for p in otel.points("a2a.server.task.transitions")
    }
    # Made waiting for input; the follow-up set it working, then it completed. Each once.
    assert entered == {
        "TASK_STATE_INPUT_REQUIRED": 1,
        "TASK_STATE_WORKING": 1,
        "TASK_STATE_COMPLETED": 1,
    }


async def test_store_calls_are_timed_by_operation(faulty: Any, otel: Recorded) -> None:
    client, store = faulty
    task = (await result(client, "SendMessage", send_params("echo")))["task"]
    await result(client, "GetTask", {"id": task["id"]})
    store.down = True
    assert (await _list_tasks(client)).status == 503
    points = {
        (p.attributes["a2a.store.operation"], p.attributes.get("error.type")): p
        for p in otel.points("a2a.server.store.duration")
    }
    assert {("create", None), ("append", None), ("get", None), ("list", "-32000")} <= set(points)
    assert all(0 <= p.sum < 60 for p in points.values())  # seconds
    assert points["get", None].count >= 1
    assert all(name in OPERATIONS for name, _ in points)


async def test_the_store_is_given_its_own_methods_back_at_cleanup(
    aiohttp_client: Any, agent: ScriptedAgent, otel: Recorded
) -> None:
    store = InMemoryTaskStore()
    app: web.Application = create_app(make_card(), agent, store=store, telemetry=otel.telemetry)
    client = await aiohttp_client(app)
    assert "append" in vars(store)  # timed while the app runs
    await client.close()
    assert not set(OPERATIONS) & set(vars(store))


async def test_metrics_off_leave_the_store_untouched(
    aiohttp_client: Any, agent: ScriptedAgent
) -> None:
    store = InMemoryTaskStore()
    app = create_app(make_card(), agent, store=store, telemetry=Telemetry(enabled=False))
    client = await aiohttp_client(app)
    await result(client, "SendMessage", send_params("echo"))
    assert not set(OPERATIONS) & set(vars(store))
