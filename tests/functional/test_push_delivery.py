"""Push delivery end to end: our server POSTs to real webhooks on 127.0.0.1 (spec 4.3.3, 13.2).

The server tests run on every server store (``store_kind``): in memory the outbox is read by
lanes, on PostgreSQL by claims, as several processes share it (see also test_push_claims.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from push_support import (
    AUTH,
    ECHO_EVENTS,
    PUBLIC_IP,
    TOKEN,
    FakeResolver,
    Hook,
    local_settings,
    wait_until,
)
from server_support import ScriptedAgent, make_card, result, send_params, stream
from store_support import ServerStores

from a2a_wire import codec
from a2a_wire.client import A2AClient, ClientSettings, register_webhook, remove_webhook
from a2a_wire.netguard import AddressPolicy
from a2a_wire.server import (
    STORE_KEY,
    AgentExecutor,
    EventQueue,
    RequestContext,
    ServerSettings,
    TaskUpdater,
    create_app,
)
from a2a_wire.server.push import PUSH_DELIVERER_KEY, PushSettings, retry_after_seconds
from a2a_wire.server.store import PostgresTaskStore
from a2a_wire.types import ListTaskPushNotificationConfigsRequest, TaskPushNotificationConfig

Start = Callable[..., Awaitable[Any]]
"""Starts the server under test: ``start(push=None, agent=None)`` gives its test client."""


@pytest.fixture
def start(aiohttp_client: Any, store_for: ServerStores) -> Start:
    """The server with push delivery on a store of ``store_kind`` (every server store)."""

    async def started(push: PushSettings | None = None, agent: ScriptedAgent | None = None) -> Any:
        settings = ServerSettings(push=push or local_settings())
        agent = agent or ScriptedAgent()
        app = create_app(make_card(push=True), agent, settings=settings, store=store_for(settings))
        return await aiohttp_client(app)

    return started


async def serve(aiohttp_server: Any, hook: Hook) -> str:
    server = await aiohttp_server(hook.app)
    return str(server.make_url("/webhook"))


def inline(url: str, **extra: Any) -> dict[str, Any]:
    config = {"url": url, "token": TOKEN, "authentication": AUTH.to_dict(), **extra}
    return {"taskPushNotificationConfig": config}


async def test_every_event_in_order_with_the_headers(start: Start, aiohttp_server: Any) -> None:
    hook = Hook(expected=None)
    url = await serve(aiohttp_server, hook)
    client = await start()
    shared = isinstance(client.app[STORE_KEY], PostgresTaskStore)
    assert client.app[PUSH_DELIVERER_KEY].claims == shared  # by claims on PostgreSQL only
    events = await stream(client, "SendStreamingMessage", send_params("echo", inline(url)))
    await wait_until(lambda: len(hook.events) == 4)
    assert hook.kinds() == ECHO_EVENTS
    # The webhook gets exactly what the stream carried, in the same order (spec 3.5.1).
    assert [codec.loads(body) for _, body in hook.requests] == [e["result"] for e in events]
    for headers, _ in hook.requests:
        assert headers["Content-Type"] == "application/a2a+json"
        assert headers["Authorization"] == "Bearer sekrit"
        assert headers["X-A2A-Notification-Token"] == TOKEN
    ids = [headers["X-A2A-Delivery-Id"] for headers, _ in hook.requests]
    assert len(set(ids)) == 4


async def test_a_config_created_later_gets_the_later_events(
    start: Start, aiohttp_server: Any
) -> None:
    client = await start()
    task = (await result(client, "SendMessage", send_params("input")))["task"]
    hook = Hook(expected=[task["id"]])
    url = await serve(aiohttp_server, hook)
    config = {"taskId": task["id"], "url": url, "token": TOKEN, "authentication": AUTH.to_dict()}
    await result(client, "CreateTaskPushNotificationConfig", config)
    await result(client, "SendMessage", send_params("more", taskId=task["id"]))
    await wait_until(lambda: len(hook.events) == 3)
    assert hook.kinds() == ["status:TASK_STATE_WORKING", "artifact", "status:TASK_STATE_COMPLETED"]


async def test_deliveries_after_a_get_still_send_the_stored_secrets(
    start: Start, aiohttp_server: Any
) -> None:
    client = await start()
    task = (await result(client, "SendMessage", send_params("input")))["task"]
    hook = Hook(expected=[task["id"]])  # refuses a request without the token and credentials
    url = await serve(aiohttp_server, hook)
    config = {"taskId": task["id"], "url": url, "token": TOKEN, "authentication": AUTH.to_dict()}
    made = await result(client, "CreateTaskPushNotificationConfig", config)
    key = {"taskId": task["id"], "id": made["id"]}
    got = await result(client, "GetTaskPushNotificationConfig", key)
    listed = await result(client, "ListTaskPushNotificationConfigs", {"taskId": task["id"]})
    assert "token" not in got and got["authentication"] == {"scheme": AUTH.scheme}
    assert listed["configs"] == [got]
    await result(client, "SendMessage", send_params("more", taskId=task["id"]))
    await wait_until(lambda: len(hook.events) == 3)
    for headers, _ in hook.requests:
        assert headers["Authorization"] == f"Bearer {AUTH.credentials}"
        assert headers["X-A2A-Notification-Token"] == TOKEN


async def test_a_receiver_failing_three_times_still_gets_everything_once(
    start: Start, aiohttp_server: Any
) -> None:
    hook = Hook(expected=None, script=[500, 429, "drop"])
    url = await serve(aiohttp_server, hook)
    client = await start()
    await result(client, "SendMessage", send_params("echo", inline(url)))
    await wait_until(lambda: len(hook.events) == 4)
    await asyncio.sleep(0.1)
    assert hook.kinds() == ECHO_EVENTS
    assert len(hook.requests) == 7
    first = {headers["X-A2A-Delivery-Id"] for headers, _ in hook.requests[:4]}
    assert len(first) == 1  # the retries of one delivery carry its id


async def test_a_timed_out_delivery_that_arrived_is_not_handed_over_twice(
    start: Start, aiohttp_server: Any
) -> None:
    hook = Hook(expected=None)
    hook.hold_first = hold = asyncio.Event()  # the first delivery stays in its callback until set
    url = await serve(aiohttp_server, hook)
    client = await start(local_settings(timeout_seconds=0.25))
    await result(client, "SendMessage", send_params("echo", inline(url)))
    await wait_until(lambda: len(hook.requests) >= 2)  # it timed out, and was sent again
    hold.set()
    await wait_until(lambda: len(hook.events) == 4)
    await wait_until(lambda: not client.app[PUSH_DELIVERER_KEY].busy)
    assert hook.kinds() == ECHO_EVENTS
    assert len(hook.requests) > 4  # the first delivery timed out, and was sent again


async def test_giving_up_is_recorded_and_the_lane_moves_on(
    start: Start, aiohttp_server: Any
) -> None:
    hook = Hook(expected=None, script=[500] * 3 + [404])
    url = await serve(aiohttp_server, hook)
    client = await start(local_settings(max_attempts=3))
    task = (await result(client, "SendMessage", send_params("echo", inline(url))))["task"]
    await wait_until(lambda: len(hook.events) == 2)
    assert hook.kinds() == ECHO_EVENTS[2:]
    failed = await client.app[STORE_KEY].failed_deliveries(task["id"])
    assert [(f.attempts, f.last_error) for f in failed] == [(3, "HTTP 500"), (1, "HTTP 404")]
    assert [codec.loads(f.body) for f in failed] == [
        codec.loads(body) for body in (hook.requests[0][1], hook.requests[3][1])
    ]


async def test_a_hanging_receiver_slows_neither_the_agent_nor_other_receivers(
    start: Start, aiohttp_server: Any
) -> None:
    stuck = Hook(expected=None, script=["hang"] * 10)
    stuck_url = await serve(aiohttp_server, stuck)
    hook = Hook(expected=None)
    url = await serve(aiohttp_server, hook)
    # The stuck delivery would time out after an hour: everything below happens while it hangs.
    client = await start(local_settings(timeout_seconds=3600))
    task = (await result(client, "SendMessage", send_params("input", inline(stuck_url))))["task"]
    config = {"taskId": task["id"], "url": url, "token": TOKEN, "authentication": AUTH.to_dict()}
    await result(client, "CreateTaskPushNotificationConfig", config)
    await result(client, "SendMessage", send_params("more", taskId=task["id"]))  # the agent ran
    await wait_until(lambda: len(hook.events) == 3)  # the other receiver got its events
    assert len(stuck.requests) == 1  # its lane still waits for the first answer, in order
    stuck.released.set()
    await client.close()


async def test_a_deleted_config_gets_nothing_more(start: Start, aiohttp_server: Any) -> None:
    hook = Hook(expected=None, script=[503] * 1000)
    url = await serve(aiohttp_server, hook)
    client = await start()
    task = (await result(client, "SendMessage", send_params("echo", inline(url, id="c1"))))["task"]
    await wait_until(lambda: len(hook.requests) >= 2)
    await result(client, "DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": "c1"})
    await wait_until(lambda: not client.app[PUSH_DELIVERER_KEY].busy)  # the lane let go
    seen = len(hook.requests)
    await asyncio.sleep(0.2)  # a lane that went on would send again within its 0.05 s backoff
    assert len(hook.requests) == seen
    assert await client.app[STORE_KEY].failed_deliveries(task["id"]) == []


async def test_a_forbidden_address_is_refused_at_delivery(
    start: Start, aiohttp_server: Any
) -> None:
    hook = Hook(expected=None)
    url = await serve(aiohttp_server, hook)
    client = await start(local_settings(allowlist=AddressPolicy()))
    task = (await result(client, "SendMessage", send_params("input")))["task"]
    store = client.app[STORE_KEY]
    # Stored behind the validation's back (e.g. by an older version): the connect is refused.
    await store.put_push_config(TaskPushNotificationConfig(task_id=task["id"], id="x", url=url))
    await result(client, "SendMessage", send_params("more", taskId=task["id"]))
    await wait_until(lambda: not client.app[PUSH_DELIVERER_KEY].busy)
    failed = await store.failed_deliveries(task["id"])
    assert len(failed) == 3 and all(f.attempts == 1 for f in failed)
    assert "loopback" in failed[0].last_error
    assert hook.requests == []


async def test_a_name_rebound_to_a_private_address_is_refused_at_delivery(
    start: Start, aiohttp_server: Any
) -> None:
    hook = Hook(expected=None)
    server = await aiohttp_server(hook.app)
    resolver = FakeResolver({"hooks.example": [[PUBLIC_IP], ["127.0.0.1"]]})
    push = local_settings(allowlist=AddressPolicy(), resolver=resolver)
    client = await start(push)
    url = f"http://hooks.example:{server.port}/webhook"
    task = (await result(client, "SendMessage", send_params("echo", inline(url))))["task"]
    await wait_until(lambda: len(resolver.lookups) >= 2)
    await wait_until(lambda: not client.app[PUSH_DELIVERER_KEY].busy)
    failed = await client.app[STORE_KEY].failed_deliveries(task["id"])
    assert len(failed) == 4
    assert all("address guard" in f.last_error and "loopback" in f.last_error for f in failed)
    assert hook.requests == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), ("", None), ("3", 3.0), ("soon", None), ("Thu, 01 Jan 1970 00:00:10 GMT", 5.0)],
)
def test_retry_after_values(value: str | None, expected: float | None) -> None:
    assert retry_after_seconds(value, now=5.0) == expected


async def test_client_helpers_register_and_remove_a_webhook(aiohttp_server: Any) -> None:
    hook = Hook(expected=[])
    url = await serve(aiohttp_server, hook)
    settings = ServerSettings(push=local_settings())
    server = await aiohttp_server(
        create_app(make_card(push=True), ScriptedAgent(), settings=settings)
    )
    allow = ClientSettings(allow=("127.0.0.1",))
    async with await A2AClient.connect(str(server.make_url("/")), settings=allow) as client:
        task = (await client.send_text("input")).task
        assert task is not None
        config = await register_webhook(client, task.id, url, receiver=hook.receiver)
        assert config.id and config.url == url and not config.token  # secrets never shown
        assert config.authentication is not None
        assert config.authentication.scheme == AUTH.scheme and not config.authentication.credentials
        await client.send_text("more", task_id=task.id)
        await wait_until(lambda: len(hook.events) == 3)
        assert hook.kinds()[-1] == "status:TASK_STATE_COMPLETED"
        await remove_webhook(client, task.id, config.id)
        await remove_webhook(client, task.id, config.id)
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
        assert listed.configs == []


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"max_attempts": 0}, "^max_attempts must be positive, not 0$"),
        ({"timeout_seconds": 0}, "^timeout_seconds must be positive, not 0$"),
        (
            {"backoff_base_seconds": 2.0, "backoff_cap_seconds": 1.0},
            "^backoff_cap_seconds must not be below backoff_base_seconds$",
        ),
    ],
)
def test_settings_are_checked(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PushSettings(**values)


def test_https_only_unless_http_is_allowed() -> None:
    assert PushSettings().schemes == {"https"}
    assert PushSettings(allow_http=True).schemes == {"https", "http"}


class AsksTwice(AgentExecutor):
    """Asks for input in its first two turns (the same WORKING and question each time), then ends."""

    def __init__(self) -> None:
        self.turns: dict[str, int] = {}

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        updater = TaskUpdater(events, context)
        self.turns[context.task_id] = turn = self.turns.get(context.task_id, 0) + 1
        await updater.start_work()
        if turn < 3:
            await updater.require_input("need more")
        else:
            await updater.complete()


async def test_a_task_that_asks_twice_delivers_every_event_once(
    aiohttp_client: Any, store_for: ServerStores, aiohttp_server: Any
) -> None:
    hook = Hook(expected=None)
    url = await serve(aiohttp_server, hook)
    settings = ServerSettings(push=local_settings())
    app = create_app(
        make_card(push=True), AsksTwice(), settings=settings, store=store_for(settings)
    )
    client = await aiohttp_client(app)
    streamed = await stream(client, "SendStreamingMessage", send_params("hi", inline(url)))
    task_id = streamed[0]["result"]["task"]["id"]
    for text in ("Ada", "again"):
        params = send_params(text, taskId=task_id)
        streamed += await stream(client, "SendStreamingMessage", params)
    updates = [e["result"]["statusUpdate"] for e in streamed if "statusUpdate" in e["result"]]
    states = [update["status"]["state"] for update in updates]
    asked = ["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"]
    assert states == [*asked, *asked, "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    # The follow-ups' streams begin with the Task; only its first one is an event of the log.
    events = [e["result"] for e in streamed if "task" not in e["result"] or e is streamed[0]]
    await wait_until(lambda: len(hook.events) >= len(events))
    assert [e.to_dict() for e in hook.events] == events  # each once, in order
    ids = [headers["X-A2A-Delivery-Id"] for headers, _ in hook.requests]
    assert len(ids) == len(set(ids)) == len(events)
