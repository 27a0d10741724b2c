"""A2AClient methods whose request has one required field take that id as well as the request.

Anything else is a TypeError at the call, before a request is sent; the overloads say the same
to mypy (checked by running it over a snippet).
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from client_fake import FakeAgent, status_update, task_json
from mypy import api as mypy_api

from a2a_wire.client import A2AClient
from a2a_wire.types import (
    CancelTaskRequest,
    GetTaskRequest,
)

CONFIGS = {"configs": [{"id": "p1", "taskId": "t1", "url": "https://hooks.example/x"}]}


@pytest.mark.parametrize(
    ("call", "method", "result", "params"),
    [
        (lambda c: c.get_task("t1"), "GetTask", task_json(), {"id": "t1"}),
        (
            lambda c: c.get_task("t1", history_length=0),
            "GetTask",
            task_json(),
            {"id": "t1", "historyLength": 0},
        ),
        (
            lambda c: c.cancel_task("t1"),
            "CancelTask",
            task_json(state="TASK_STATE_CANCELED"),
            {"id": "t1"},
        ),
        (
            lambda c: c.list_task_push_notification_configs("t1"),
            "ListTaskPushNotificationConfigs",
            CONFIGS,
            {"taskId": "t1"},
        ),
    ],
    ids=["get_task", "get_task-history_length", "cancel_task", "list_push_configs"],
)
async def test_a_plain_id_is_the_request_with_that_id(
    client: A2AClient,
    agent: FakeAgent,
    call: Callable[[A2AClient], Awaitable[Any]],
    method: str,
    result: Any,
    params: dict[str, Any],
) -> None:
    agent.reply(method, result)
    await call(client)
    sent = agent.requests[-1]
    assert sent.method == method
    assert sent.params == {"tenant": "acme", **params}


async def test_subscribe_to_a_plain_id(client: A2AClient, agent: FakeAgent) -> None:
    agent.stream(
        "SubscribeToTask",
        [{"task": task_json(state="TASK_STATE_WORKING")}, status_update("TASK_STATE_COMPLETED")],
    )
    async with client.subscribe_to_task("t1") as stream:
        events = [event async for event in stream]
    assert len(events) == 2
    assert agent.requests[-1].params == {"tenant": "acme", "id": "t1"}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda c: c.get_task(5),
            "get_task() takes a task id (str) or a GetTaskRequest, not int",
        ),
        (
            lambda c: c.get_task(CancelTaskRequest(id="t1")),
            "get_task() takes a task id (str) or a GetTaskRequest, not CancelTaskRequest",
        ),
        (
            lambda c: c.get_task(GetTaskRequest(id="t1"), history_length=2),
            "get_task(): history_length goes with a task id, not a GetTaskRequest",
        ),
        (
            lambda c: c.cancel_task(None),
            "cancel_task() takes a task id (str) or a CancelTaskRequest, not NoneType",
        ),
        (
            lambda c: c.list_task_push_notification_configs(GetTaskRequest(id="t1")),
            "list_task_push_notification_configs() takes a task id (str) or a "
            "ListTaskPushNotificationConfigsRequest, not GetTaskRequest",
        ),
        (
            lambda c: c.send_message("hello"),
            "send_message() takes a SendMessageRequest, not str",
        ),
        (
            lambda c: c.list_tasks({"pageSize": 3}),
            "list_tasks() takes a ListTasksRequest, not dict",
        ),
        (
            lambda c: c.get_task_push_notification_config("t1"),
            "get_task_push_notification_config() takes a GetTaskPushNotificationConfigRequest, "
            "not str",
        ),
    ],
    ids=[
        "get_task-int",
        "get_task-other-request",
        "get_task-request-and-history_length",
        "cancel_task-None",
        "list_push_configs-other-request",
        "send_message-str",
        "list_tasks-dict",
        "get_push_config-str",
    ],
)
async def test_anything_else_is_a_type_error_at_the_call(
    client: A2AClient, agent: FakeAgent, call: Callable[[A2AClient], Awaitable[Any]], message: str
) -> None:
    with pytest.raises(TypeError) as caught:
        await call(client)
    assert str(caught.value) == message
    assert agent.requests == [], "nothing was sent"


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.subscribe_to_task(7),
        lambda c: c.send_streaming_message("hello"),
    ],
    ids=["subscribe_to_task-int", "send_streaming_message-str"],
)
async def test_a_stream_of_anything_else_fails_before_it_is_opened(
    client: A2AClient, agent: FakeAgent, call: Callable[[A2AClient], Any]
) -> None:
    with pytest.raises(TypeError, match=r"takes a .*, not (int|str)$"):
        call(client)  # not awaited, not entered: the call itself refuses
    assert agent.requests == []


SNIPPET = """
from a2a_wire.client import A2AClient
from a2a_wire.types import GetTaskRequest, SubscribeToTaskRequest

async def use(client: A2AClient) -> None:
    reveal_type(await client.get_task("t1"))
    reveal_type(await client.get_task("t1", history_length=2))
    reveal_type(await client.get_task(GetTaskRequest(id="t1")))
    reveal_type(await client.cancel_task("t1"))
    reveal_type(client.subscribe_to_task("t1", last_event_id="3"))
    reveal_type(client.subscribe_to_task(SubscribeToTaskRequest(id="t1")))
    reveal_type(await client.list_task_push_notification_configs("t1"))
    await client.get_task(5)  # E
    await client.get_task(GetTaskRequest(id="t1"), history_length=2)  # E
    await client.cancel_task(GetTaskRequest(id="t1"))  # E
"""


PROJECT_CACHE = Path(__file__).parents[2] / ".mypy_cache"
"""What ``make typecheck`` (run before the tests by ``make test``) left: a copy seeds the snippet's
cache, so mypy checks only the snippet instead of the package and aiohttp again (it still
re-checks any module whose source changed since)."""


def test_the_overloads_type_both_forms(tmp_path: Path) -> None:
    source = tmp_path / "use_ids.py"
    source.write_text(textwrap.dedent(SNIPPET))
    cache = tmp_path / "cache"
    if PROJECT_CACHE.is_dir():
        shutil.copytree(PROJECT_CACHE, cache)
    out, err, status = mypy_api.run(
        ["--strict", "--no-error-summary", "--cache-dir", str(cache), str(source)]
    )
    assert status == 1, (out, err)
    lines = out.splitlines()
    revealed = [line.split("Revealed type is ")[1] for line in lines if "Revealed type" in line]
    assert revealed == [
        '"a2a_wire._generated.types.Task"',
        '"a2a_wire._generated.types.Task"',
        '"a2a_wire._generated.types.Task"',
        '"a2a_wire._generated.types.Task"',
        '"a2a_wire.client._stream.EventStream"',
        '"a2a_wire.client._stream.EventStream"',
        '"a2a_wire._generated.types.ListTaskPushNotificationConfigsResponse"',
    ]
    errors = {int(line.split(":")[1]) for line in lines if ": error:" in line}
    marked = {n for n, line in enumerate(source.read_text().splitlines(), 1) if "# E" in line}
    assert errors == marked, out
