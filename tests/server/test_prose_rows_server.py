"""Server-side checks of rows of docs/prose-and-proto.md that no other test pins.

Raw JSON-RPC over real HTTP on 127.0.0.1 (see server_support); each test names its row.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from patience import poll
from server_support import (
    ScriptedAgent,
    error,
    make_card,
    message,
    result,
    send_params,
    violations,
)

from a2a_wire.netguard import AddressPolicy
from a2a_wire.server import ServerSettings, create_app
from a2a_wire.server.push import PushSettings
from a2a_wire.types import Part


async def test_row07_an_unknown_role_spelling_is_refused(client: Any) -> None:
    err = await error(client, "SendMessage", send_params("echo", role="user"))
    assert err["code"] == -32602 and violations(err) == ["message.role"]


async def test_row08_unspecified_role_is_missing_and_unspecified_status_is_no_filter(
    client: Any,
) -> None:
    err = await error(client, "SendMessage", send_params("echo", role="ROLE_UNSPECIFIED"))
    assert err["code"] == -32602 and violations(err) == ["message.role"]
    await result(client, "SendMessage", send_params("echo"))
    await result(client, "SendMessage", send_params("reject"))
    listed = await result(client, "ListTasks", {"status": "TASK_STATE_UNSPECIFIED"})
    assert listed["totalSize"] == 2


async def test_row09_a_message_needs_at_least_one_part(client: Any) -> None:
    err = await error(client, "SendMessage", {"message": message("x", parts=[])})
    assert err["code"] == -32602 and violations(err) == ["message.parts"]


async def test_row12_an_artifact_only_change_does_not_reorder(
    client: Any, agent: ScriptedAgent
) -> None:
    config = {"returnImmediately": True}
    older = (await result(client, "SendMessage", send_params("chunks", config)))["task"]
    await agent.started.wait()
    await asyncio.sleep(0.01)  # distinct millisecond stamps
    newer = (await result(client, "SendMessage", send_params("echo")))["task"]
    agent.gate.set()  # the older task gets its first chunk, and no status change
    got = await poll(
        lambda: result(client, "GetTask", {"id": older["id"]}), lambda t: "artifacts" in t
    )
    assert got["status"]["state"] == "TASK_STATE_WORKING" and len(got["artifacts"]) == 1
    listed = await result(client, "ListTasks", {})
    assert [t["id"] for t in listed["tasks"]] == [newer["id"], older["id"]]


async def test_row19_content_members_of_incoming_parts(client: Any, agent: ScriptedAgent) -> None:
    two = {"message": message("x", parts=[{"text": "a", "url": "https://b"}])}
    err = await error(client, "SendMessage", two)
    assert err["code"] == -32602 and violations(err) == ["message.parts[0]"]
    none = {"message": message("echo", parts=[{"text": "echo"}, {}, {"hologram": {}}])}
    task = (await result(client, "SendMessage", none))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    received = agent.contexts[-1].message
    assert received is not None
    assert [p.which_content() for p in received.parts] == ["text"]
    only_unknown = {"message": message("echo", parts=[{}, {"hologram": {}}])}
    err = await error(client, "SendMessage", only_unknown)
    assert err["code"] == -32602 and violations(err) == ["message.parts"]
    null = {"message": message("echo", parts=[{"text": "echo"}, {"data": None}])}
    await result(client, "SendMessage", null)
    last = agent.contexts[-1].message
    assert last is not None and last.parts[1] == Part(data=None)


async def test_row22_timestamps_in_requests(client: Any) -> None:
    await result(client, "SendMessage", send_params("echo"))
    offset = await result(
        client, "ListTasks", {"statusTimestampAfter": "2000-01-01T01:00:00+01:00"}
    )
    assert offset["totalSize"] == 1
    future = await result(client, "ListTasks", {"statusTimestampAfter": "9999-01-01T00:00:00Z"})
    assert future["totalSize"] == 0
    err = await error(client, "ListTasks", {"statusTimestampAfter": "yesterday"})
    assert err["code"] == -32602 and violations(err) == ["statusTimestampAfter"]
    stamp = offset["tasks"][0]["status"]["timestamp"]
    assert stamp.endswith("Z")


HOOK = "http://127.0.0.1:9/hook"  # never called: no event happens while a config exists


@pytest.fixture
async def push_client(aiohttp_client: Any) -> Any:
    allow = AddressPolicy.from_strings(["127.0.0.1"])
    settings = ServerSettings(push=PushSettings(allow_http=True, allowlist=allow))
    return await aiohttp_client(
        create_app(make_card(push=True), ScriptedAgent(), settings=settings)
    )


async def test_row02_create_takes_the_flat_config_only(push_client: Any) -> None:
    task = (await result(push_client, "SendMessage", send_params("input")))["task"]
    nested = {"taskId": task["id"], "pushNotificationConfig": {"url": HOOK}}  # the 0.3 shape
    err = await error(push_client, "CreateTaskPushNotificationConfig", nested)
    assert err["code"] == -32602 and violations(err) == ["url"]
    flat = {"taskId": task["id"], "url": HOOK}
    made = await result(push_client, "CreateTaskPushNotificationConfig", flat)
    assert made["taskId"] == task["id"] and made["id"] and made["url"] == HOOK


async def test_row03_only_task_push_notification_config_is_read(push_client: Any) -> None:
    old = {"pushNotificationConfig": {"url": HOOK}}
    task = (await result(push_client, "SendMessage", send_params("input", old)))["task"]
    listed = await result(push_client, "ListTaskPushNotificationConfigs", {"taskId": task["id"]})
    assert listed == {}
    new = {"taskPushNotificationConfig": {"url": HOOK}}
    task = (await result(push_client, "SendMessage", send_params("input", new)))["task"]
    listed = await result(push_client, "ListTaskPushNotificationConfigs", {"taskId": task["id"]})
    assert [c["taskId"] for c in listed["configs"]] == [task["id"]]
