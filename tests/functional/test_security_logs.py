"""A full run with credentials, through a2a-wire's own client, leaves no secret in any log."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from server_support import ScriptedAgent, make_card

from a2a_wire.client import (
    A2AClient,
    AuthenticationError,
    ClientSettings,
    StaticCredentials,
    api_key_header,
)
from a2a_wire.server import RegisteredClient, SecurityConfig, create_app, hash_secret
from a2a_wire.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)

TOKEN = "tok-LOGCHECK-5c1e7a9b3d"
API_KEY = "key-LOGCHECK-2f8d6b4a0e"
WRONG_TOKEN = "tok-WRONG-9e7c5a3b1d"
WRONG_KEY = "key-WRONG-1a3c5e7b9d"
SECRETS = (TOKEN, API_KEY, WRONG_TOKEN, WRONG_KEY)
LOCAL = ClientSettings(allow=["127.0.0.1"])


async def _session(url: str, credentials: StaticCredentials) -> None:
    async with await A2AClient.connect(url, settings=LOCAL, credentials=credentials) as client:
        done = await client.send_text("hello")
        assert done.task is not None and done.task.status is not None
        assert done.task.status.state == TaskState.COMPLETED
        await client.get_task(GetTaskRequest(id=done.task.id))
        await client.list_tasks(ListTasksRequest())
        await client.create_task_push_notification_config(
            TaskPushNotificationConfig(task_id=done.task.id, url="https://8.8.8.8/hook")
        )
        await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=done.task.id)
        )
        waiting = await client.send_text("input")
        assert waiting.task is not None
        async with client.subscribe_to_task(SubscribeToTaskRequest(id=waiting.task.id)) as events:
            async for _ in events:
                break
        await client.cancel_task(CancelTaskRequest(id=waiting.task.id))
        async with client.send_streaming_message(client.text_request("hello")) as events:
            async for _ in events:
                pass
        await client.get_extended_agent_card()
        await client.send_text("raise")  # an agent failure, logged with its traceback


async def test_no_secret_in_any_log(
    aiohttp_server: Callable[..., Awaitable[TestServer]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    security = SecurityConfig(
        clients=[
            RegisteredClient("alice", token_hash=hash_secret(TOKEN, log2_n=4)),
            RegisteredClient("bob", api_key_hash=hash_secret(API_KEY, log2_n=4)),
        ],
        extended_card=True,
    )
    app = create_app(make_card(push=True, extended=True), ScriptedAgent(), security=security)
    server = await aiohttp_server(app)
    url = str(server.make_url("/"))
    await _session(url, StaticCredentials(TOKEN))
    await _session(url, StaticCredentials(API_KEY, scheme=api_key_header()))
    for wrong in (
        StaticCredentials(WRONG_TOKEN),
        StaticCredentials(WRONG_KEY, scheme=api_key_header()),
    ):
        with pytest.raises(AuthenticationError) as caught:
            await _session(url, wrong)
        assert caught.value.status == 401
        assert not any(s in str(caught.value) or s in repr(caught.value) for s in SECRETS)

    refusals = [r for r in caplog.records if "authentication refused" in r.getMessage()]
    assert len(refusals) == 2  # the failures are logged...
    everything = caplog.text + "".join(_record_text(r) for r in caplog.records)
    assert "agent failed on task" in everything  # ...and so is the rest of the run
    for secret in SECRETS:
        assert secret not in everything  # ...but never a credential


def _record_text(record: logging.LogRecord) -> str:
    fields: dict[str, Any] = dict(record.__dict__)
    return repr(fields)
