"""Client-side checks of rows of docs/prose-and-proto.md that no other test pins.

The client talks to the scripted fake agent of client_fake on 127.0.0.1; each test names its row.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from client_fake import LOCAL, FakeAgent, card_json, task_json

from a2a_wire import errors
from a2a_wire.client import A2AClient
from a2a_wire.types import (
    DeleteTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTasksRequest,
    SendMessageRequest,
)


@pytest.fixture
def client_options() -> dict[str, Any]:
    """No tenant and no credentials: the params and headers below are the bare ones."""
    return {}


async def stream_of(client: A2AClient, agent: FakeAgent, events: list[Any]) -> list[Any]:
    agent.stream("SendStreamingMessage", events)
    async with client.send_streaming_message(client.text_request("hi")) as stream:
        return [event async for event in stream]


async def test_row09_required_lists_in_results(client: A2AClient, agent: FakeAgent) -> None:
    empty_artifact = {"artifactId": "a1", "parts": []}
    agent.reply("GetTask", task_json(artifacts=[empty_artifact]))
    with pytest.raises(errors.InvalidAgentResponseError, match=r"artifacts\[0\]\.parts"):
        await client.get_task(GetTaskRequest(id="t1"))
    page = {"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0}
    agent.reply("ListTasks", page)
    assert (await client.list_tasks(ListTasksRequest())).tasks == []


async def test_row09_a_card_with_empty_skills_and_modes_is_read(agent: FakeAgent) -> None:
    card = card_json(agent.base)
    card.update(skills=[], defaultInputModes=[], defaultOutputModes=[])
    agent.card(card)
    async with await A2AClient.connect(agent.base, settings=LOCAL) as connected:
        assert connected.card is not None and connected.card.skills == []


async def test_row10_required_fields_at_their_default_may_be_left_out(
    client: A2AClient, agent: FakeAgent
) -> None:
    agent.reply("ListTasks", {"tasks": [task_json()]})  # plain ProtoJSON drops "", 0
    page = await client.list_tasks(ListTasksRequest())
    assert (page.next_page_token, page.page_size, page.total_size) == ("", 0, 0)
    assert [t.id for t in page.tasks] == ["t1"]


async def test_row15_context_id_optional_on_tasks_required_on_updates(
    client: A2AClient, agent: FakeAgent
) -> None:
    bare = task_json()
    del bare["contextId"]
    agent.reply("GetTask", bare)
    assert (await client.get_task(GetTaskRequest(id="t1"))).context_id == ""
    update = {"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_COMPLETED"}}}
    with pytest.raises(errors.InvalidAgentResponseError, match="contextId"):
        await stream_of(client, agent, [{"task": task_json(state="TASK_STATE_WORKING")}, update])


async def test_row16_missing_required_ids_are_invalid_agent_responses(
    client: A2AClient, agent: FakeAgent
) -> None:
    artifact = {"taskId": "t1", "contextId": "c1", "artifact": {"parts": [{"text": "x"}]}}
    with pytest.raises(errors.InvalidAgentResponseError, match="artifactId"):
        await stream_of(
            client,
            agent,
            [{"task": task_json(state="TASK_STATE_WORKING")}, {"artifactUpdate": artifact}],
        )
    reply = {"message": {"role": "ROLE_AGENT", "parts": [{"text": "x"}]}}
    agent.reply("SendMessage", reply)
    with pytest.raises(errors.InvalidAgentResponseError, match="messageId"):
        await client.send_message(client.text_request("hi"))


async def test_row36_the_client_always_sends_params(client: A2AClient, agent: FakeAgent) -> None:
    agent.reply("GetExtendedAgentCard", card_json(agent.base))
    await client.get_extended_agent_card()
    assert agent.requests[-1].body["params"] == {}


@pytest.mark.parametrize("data", [None, {"detail": "an object"}, "a string", [1, 2]])
async def test_row38_error_data_of_any_shape_is_tolerated(
    client: A2AClient, agent: FakeAgent, data: Any
) -> None:
    agent.error("GetTask", -32001, "Task not found", data)
    with pytest.raises(errors.TaskNotFoundError, match="^Task not found$") as caught:
        await client.get_task(GetTaskRequest(id="t1"))
    assert caught.value.code == -32001


@pytest.mark.parametrize("result", [{}, None])
async def test_row46_empty_result_may_be_null(
    client: A2AClient, agent: FakeAgent, result: Any
) -> None:
    agent.reply("DeleteTaskPushNotificationConfig", result)
    request = DeleteTaskPushNotificationConfigRequest(task_id="t1", id="c1")
    assert await client.delete_task_push_notification_config(request) is None
    agent.reply("GetTask", None)  # null stays invalid where a message is expected
    with pytest.raises(errors.InvalidAgentResponseError, match="expected object, got null$"):
        await client.get_task(GetTaskRequest(id="t1"))


def test_row01_text_request_sends_no_configuration_by_default() -> None:
    request: SendMessageRequest = A2AClient.text_request("hi")
    assert request.configuration is None
    assert "configuration" not in request.to_dict()


async def test_row51_a_follow_up_stream_may_start_with_an_update(
    client: A2AClient, agent: FakeAgent, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="a2a_wire.client")
    update = {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}
    agent.stream("SendStreamingMessage", [{"statusUpdate": update}])
    async with client.send_streaming_message(client.text_request("Ada", task_id="t1")) as stream:
        events = [event async for event in stream]
    assert [e.which_payload() for e in events] == ["status_update"]
    assert stream.task_id == "t1" and stream.finished
    assert [r.levelname for r in caplog.records] == ["WARNING"]  # one warning, no more
    with pytest.raises(errors.InvalidAgentResponseError) as caught:  # a new task: strict
        await stream_of(client, agent, [{"statusUpdate": update}])
    assert caught.value.code == -32006
