"""Push delivery from any process: two servers on one PostgreSQL schema share the outbox.

Two applications in this test process, each with its own :class:`PostgresTaskStore` on one schema
(two processes, as far as the database can tell), deliver to one real webhook on 127.0.0.1.
Each task is created on one server and continued on the other, so each lane holds rows written
by both; each server reads the shared outbox by claims (:mod:`a2a_wire.server.push._claimed`).
The webhook must get every event of every task exactly once (no process dies here) and in the
order of the task's events. Rows written by a process that does not deliver (a bare store) are
found by the servers' claim poll (``push.poll_seconds``). The kill of a delivering process is
``tests/functional/test_e2e_push_takeover.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from push_support import AUTH, TOKEN, Hook, kind, local_settings, task_of, wait_until
from server_support import ScriptedAgent, make_card, result, send_params

from a2a_wire import codec
from a2a_wire.server import ServerSettings, create_app
from a2a_wire.server.push import PUSH_DELIVERER_KEY
from a2a_wire.server.store import EventKind, PostgresTaskStore
from a2a_wire.types import (
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

pytestmark = pytest.mark.slow

TASKS = 24

FIRST_TURN = ["task:TASK_STATE_SUBMITTED", "status:TASK_STATE_INPUT_REQUIRED"]
SECOND_TURN = ["status:TASK_STATE_WORKING", "artifact", "status:TASK_STATE_COMPLETED"]


@pytest.fixture
async def servers(
    aiohttp_client: Any, postgres_dsn: str, postgres_schema: str
) -> AsyncIterator[list[tuple[Any, PostgresTaskStore]]]:
    """Two servers on one schema, with their stores (opened and closed by the apps)."""
    settings = ServerSettings(push=local_settings())
    made = []
    for _ in range(2):
        store = PostgresTaskStore(postgres_dsn, schema=postgres_schema, recover=False)
        app = create_app(make_card(push=True), ScriptedAgent(), store=store, settings=settings)
        made.append((await aiohttp_client(app), store))
    yield made


async def test_two_servers_deliver_every_event_once_in_order(
    servers: list[tuple[Any, PostgresTaskStore]], aiohttp_server: Any
) -> None:
    clients = [client for client, _ in servers]
    hook = Hook(expected=None)
    url = str((await aiohttp_server(hook.app)).make_url("/webhook"))
    assert all(client.app[PUSH_DELIVERER_KEY].claims for client in clients)
    config = {"url": url, "token": TOKEN, "authentication": AUTH.to_dict()}
    inline = {"taskPushNotificationConfig": config}

    async def one_task(index: int) -> str:
        first, second = clients[index % 2], clients[1 - index % 2]
        task = (await result(first, "SendMessage", send_params("input", inline)))["task"]
        await result(second, "SendMessage", send_params("more", taskId=task["id"]))
        return str(task["id"])

    task_ids = await asyncio.gather(*(one_task(i) for i in range(TASKS)))
    expected = FIRST_TURN + SECOND_TURN
    await wait_until(lambda: len(hook.events) >= TASKS * len(expected))
    await wait_until(lambda: not any(c.app[PUSH_DELIVERER_KEY].busy for c in clients))

    ids = [headers["X-A2A-Delivery-Id"] for headers, _ in hook.requests]
    assert len(ids) == len(set(ids)) == TASKS * len(expected)  # exactly once each
    by_task: dict[str, list[bytes]] = {task_id: [] for task_id in task_ids}
    for _, body in hook.requests:
        by_task[task_of(codec.decode(StreamResponse, body))].append(body)
    store = servers[0][1]
    for task_id, bodies in by_task.items():
        logged = await store.read_events(task_id, 0)
        assert logged is not None
        streamed = [e.body for e in logged.events if e.kind is not EventKind.MESSAGE]
        assert bodies == streamed  # in the order of the task's log, both turns included
        assert [kind_of(body) for body in bodies] == expected


def kind_of(body: bytes) -> str:
    return kind(codec.decode(StreamResponse, body))


async def test_rows_no_local_write_announced_are_found_by_the_poll(
    servers: list[tuple[Any, PostgresTaskStore]],
    aiohttp_server: Any,
    postgres_dsn: str,
    postgres_schema: str,
) -> None:
    hooks = {"p": Hook(expected=None), "q": Hook(expected=None)}
    configs = [
        TaskPushNotificationConfig(
            task_id="quiet",
            id=name,
            url=str((await aiohttp_server(hook.app)).make_url("/webhook")),
            token=TOKEN,
            authentication=AUTH,
        )
        for name, hook in hooks.items()
    ]
    writer = PostgresTaskStore(postgres_dsn, schema=postgres_schema, recover=False)
    await writer.open()
    try:  # a process without a deliverer: nothing wakes the servers' deliverers but their poll
        waiting = Task(
            id="quiet", context_id="c", status=TaskStatus(state=TaskState.INPUT_REQUIRED)
        )
        await writer.create(waiting, push_configs=configs, push=True)
        done = TaskStatusUpdateEvent(status=TaskStatus(state=TaskState.COMPLETED))
        await writer.append("quiet", [done], push=True)
        await wait_until(lambda: all(len(hook.events) >= 2 for hook in hooks.values()))
        await wait_until(lambda: not any(c.app[PUSH_DELIVERER_KEY].busy for c, _ in servers))
    finally:
        await writer.close()
    for hook in hooks.values():
        assert hook.kinds() == ["task:TASK_STATE_INPUT_REQUIRED", "status:TASK_STATE_COMPLETED"]
        assert len(hook.requests) == 2  # once each
