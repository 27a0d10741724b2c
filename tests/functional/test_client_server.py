"""Our client against our server over real HTTP on 127.0.0.1: every method, typed errors.

The server runs :class:`server_support.ScriptedAgent`; the client resolves the served card,
selects its JSON-RPC interface and is allowlisted for 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from aiohttp.test_utils import TestServer
from server_support import ScriptedAgent

from a2a_wire.client import A2AClient, AddressNotAllowedError
from a2a_wire.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a_wire.types import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)


async def test_connect_selects_the_served_jsonrpc_interface(
    client: A2AClient, server: TestServer
) -> None:
    assert client.card is not None
    interface = client.card.supported_interfaces[0]
    assert (interface.protocol_binding, interface.protocol_version) == ("JSONRPC", "1.0")
    assert interface.url.startswith(f"http://127.0.0.1:{server.port}")


async def test_send_message_blocks_until_the_task_is_done(client: A2AClient) -> None:
    response = await client.send_text("hello")
    assert response.task is not None
    assert response.task.status is not None
    assert response.task.status.state is TaskState.COMPLETED
    assert response.task.artifacts[0].parts[0].text == "hello"


async def test_send_message_return_immediately_then_wait(
    client: A2AClient, agent: ScriptedAgent
) -> None:
    response = await client.send_text("wait", return_immediately=True)
    assert response.task is not None and response.task.status is not None
    assert response.task.status.state in (TaskState.SUBMITTED, TaskState.WORKING)
    agent.gate.set()
    done = await asyncio.wait_for(client.wait(response.task.id, poll_interval=0.01), 60)
    assert done.status is not None and done.status.state is TaskState.COMPLETED


async def test_direct_message_reply(client: A2AClient) -> None:
    response = await client.send_text("reply")
    assert response.message is not None and response.task is None


async def test_streaming_message_yields_task_then_updates_in_order(client: A2AClient) -> None:
    kinds = []
    async with client.send_streaming_message(client.text_request("hi")) as stream:
        async for event in stream:
            kinds.append(event.which_payload())
    assert kinds[0] == "task"
    assert kinds[-1] == "status_update"
    assert "artifact_update" in kinds
    assert stream.state is TaskState.COMPLETED


async def test_get_task_applies_history_length(client: A2AClient) -> None:
    first = await client.send_text("input")
    assert first.task is not None
    await client.send_text("more", task_id=first.task.id)
    full = await client.get_task(GetTaskRequest(id=first.task.id))
    assert len(full.history) >= 2
    none = await client.get_task(GetTaskRequest(id=first.task.id, history_length=0))
    assert none.history == []
    last = await client.get_task(GetTaskRequest(id=first.task.id, history_length=1))
    assert last.history == full.history[-1:]


async def test_list_tasks_pages_through_everything(client: A2AClient) -> None:
    made = set()
    for i in range(5):
        response = await client.send_text(f"t{i}")
        assert response.task is not None
        made.add(response.task.id)
    seen: list[str] = []
    token = ""
    while True:
        page = await client.list_tasks(ListTasksRequest(page_size=2, page_token=token))
        assert page.page_size == 2 and page.total_size == 5
        seen += [task.id for task in page.tasks]
        token = page.next_page_token
        if not token:
            break
    assert sorted(seen) == sorted(made)


async def test_cancel_a_running_task_then_again(client: A2AClient, agent: ScriptedAgent) -> None:
    response = await client.send_text("wait", return_immediately=True)
    assert response.task is not None
    await asyncio.wait_for(agent.started.wait(), 60)
    canceled = await client.cancel_task(CancelTaskRequest(id=response.task.id))
    assert canceled.status is not None and canceled.status.state is TaskState.CANCELED
    with pytest.raises(TaskNotCancelableError, match="is canceled and cannot be canceled$"):
        await client.cancel_task(CancelTaskRequest(id=response.task.id))


async def test_subscribe_to_a_running_task(client: A2AClient, agent: ScriptedAgent) -> None:
    response = await client.send_text("wait", return_immediately=True)
    assert response.task is not None
    await asyncio.wait_for(agent.started.wait(), 60)
    kinds = []
    async with client.subscribe_to_task(SubscribeToTaskRequest(id=response.task.id)) as stream:
        async for event in stream:
            kinds.append(event.which_payload())
            if len(kinds) == 1:
                agent.gate.set()
    assert kinds[0] == "task" and stream.state is TaskState.COMPLETED


async def test_subscribe_to_a_finished_task_is_unsupported(client: A2AClient) -> None:
    response = await client.send_text("done")
    assert response.task is not None
    with pytest.raises(UnsupportedOperationError, match="nothing to subscribe to$"):
        async with client.subscribe_to_task(SubscribeToTaskRequest(id=response.task.id)) as stream:
            async for _ in stream:
                pass


async def test_unknown_task_is_task_not_found(client: A2AClient) -> None:
    with pytest.raises(TaskNotFoundError, match="^Task not found: 'no-such-task'$"):
        await client.get_task(GetTaskRequest(id="no-such-task"))


async def test_invalid_params_carry_field_violations(client: A2AClient) -> None:
    with pytest.raises(InvalidParamsError, match=r"^pageSize must be within 1\.\.100$") as caught:
        await client.list_tasks(ListTasksRequest(page_size=1000))
    assert [field for field, _ in caught.value.violations] == ["pageSize"]


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.create_task_push_notification_config(
            TaskPushNotificationConfig(task_id="t", url="https://example.com/hook")
        ),
        lambda c: c.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id="t", id="p")
        ),
        lambda c: c.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id="t")
        ),
        lambda c: c.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id="t", id="p")
        ),
    ],
)
async def test_push_methods_without_the_capability(
    client: A2AClient, call: Callable[[A2AClient], object]
) -> None:
    with pytest.raises(
        PushNotificationNotSupportedError, match="^Push notifications are not supported$"
    ):
        await call(client)  # type: ignore[misc]


async def test_extended_card_without_the_capability(client: A2AClient) -> None:
    with pytest.raises(UnsupportedOperationError, match="does not declare an extended agent card$"):
        await client.get_extended_agent_card()


async def test_loopback_is_refused_unless_allowlisted(server: TestServer) -> None:
    with pytest.raises(AddressNotAllowedError, match="127.0.0.1: loopback"):
        await A2AClient.connect(str(server.make_url("/")))
