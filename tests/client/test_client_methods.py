"""A2AClient operations against a scripted fake agent: requests sent, results decoded."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from client_fake import LOCAL, FakeAgent, card_json, message_json, task_json

from a2a_wire import errors
from a2a_wire.client import A2AClient, WaitTimeoutError
from a2a_wire.methods import METHODS
from a2a_wire.types import (
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Role,
    SendMessageRequest,
    TaskPushNotificationConfig,
    TaskState,
)


def assert_common_headers(agent: FakeAgent, method: str) -> dict[str, Any]:
    """The last request: method name, version, media type, credentials; returns params."""
    sent = agent.requests[-1]
    assert sent.method == method
    assert sent.body["jsonrpc"] == "2.0"
    assert sent.headers["A2A-Version"] == "1.0"
    assert sent.headers["Content-Type"] == "application/json"
    assert sent.headers["Authorization"] == "Bearer tok-1"
    return sent.params


async def test_send_message_returns_task_and_carries_tenant(
    client: A2AClient, agent: FakeAgent
) -> None:
    agent.reply("SendMessage", {"task": task_json()})
    request = A2AClient.text_request("hi")
    result = await client.send_message(request)
    assert result.task is not None and result.task.status is not None
    assert result.task.status.state is TaskState.COMPLETED
    params = assert_common_headers(agent, "SendMessage")
    assert params["tenant"] == "acme"
    assert params["message"]["parts"] == [{"text": "hi"}]
    assert request.tenant == "", "the caller's request object is not modified"


async def test_explicit_tenant_is_kept(client: A2AClient, agent: FakeAgent) -> None:
    agent.reply("GetTask", task_json())
    await client.get_task(GetTaskRequest(id="t1", tenant="other"))
    assert agent.requests[-1].params["tenant"] == "other"


async def test_no_tenant_key_when_interface_has_none(agent: FakeAgent) -> None:
    agent.reply("GetTask", task_json())
    async with A2AClient(agent.url, settings=LOCAL) as client:
        await client.get_task(GetTaskRequest(id="t1"))
    assert "tenant" not in agent.requests[-1].params
    assert "Authorization" not in agent.requests[-1].headers


async def test_send_text_builds_a_user_message(client: A2AClient, agent: FakeAgent) -> None:
    agent.reply("SendMessage", {"message": message_json("pong")})
    result = await client.send_text(
        "ping", context_id="c9", task_id="t9", return_immediately=True, history_length=2
    )
    assert result.message is not None and result.message.parts[0].text == "pong"
    message = agent.requests[-1].params["message"]
    assert message["role"] == "ROLE_USER"
    assert message["contextId"] == "c9" and message["taskId"] == "t9"
    assert uuid.UUID(message["messageId"]).version == 4
    config = agent.requests[-1].params["configuration"]
    assert config == {"returnImmediately": True, "historyLength": 2}


async def test_send_text_without_options_sends_no_configuration(
    client: A2AClient, agent: FakeAgent
) -> None:
    agent.reply("SendMessage", {"message": message_json()})
    await client.send_text("ping")
    params = agent.requests[-1].params
    assert "configuration" not in params and "contextId" not in params["message"]


async def test_request_ids_differ(client: A2AClient, agent: FakeAgent) -> None:
    agent.reply("GetTask", task_json())
    await client.get_task(GetTaskRequest(id="t1"))
    await client.get_task(GetTaskRequest(id="t1"))
    ids = [r.body["id"] for r in agent.requests]
    assert len(set(ids)) == 2


@pytest.mark.parametrize(
    ("call", "method", "result", "params"),
    [
        (
            lambda c: c.get_task(GetTaskRequest(id="t1", history_length=0)),
            "GetTask",
            task_json(),
            {"id": "t1", "historyLength": 0},
        ),
        (
            lambda c: c.list_tasks(ListTasksRequest(context_id="c1", page_size=10)),
            "ListTasks",
            {"tasks": [task_json()], "nextPageToken": "", "pageSize": 10, "totalSize": 1},
            {"contextId": "c1", "pageSize": 10},
        ),
        (
            lambda c: c.cancel_task(CancelTaskRequest(id="t1")),
            "CancelTask",
            task_json(state="TASK_STATE_CANCELED"),
            {"id": "t1"},
        ),
        (
            lambda c: c.create_task_push_notification_config(
                TaskPushNotificationConfig(
                    task_id="t1",
                    url="https://hooks.example/x",
                    authentication=AuthenticationInfo(scheme="Bearer", credentials="c"),
                )
            ),
            "CreateTaskPushNotificationConfig",
            {"id": "p1", "taskId": "t1", "url": "https://hooks.example/x"},
            {
                "taskId": "t1",
                "url": "https://hooks.example/x",
                "authentication": {"scheme": "Bearer", "credentials": "c"},
            },
        ),
        (
            lambda c: c.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id="t1", id="p1")
            ),
            "GetTaskPushNotificationConfig",
            {"id": "p1", "taskId": "t1", "url": "https://hooks.example/x"},
            {"taskId": "t1", "id": "p1"},
        ),
        (
            lambda c: c.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id="t1")
            ),
            "ListTaskPushNotificationConfigs",
            {"configs": [{"id": "p1", "taskId": "t1", "url": "https://hooks.example/x"}]},
            {"taskId": "t1"},
        ),
        (
            lambda c: c.delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest(task_id="t1", id="p1")
            ),
            "DeleteTaskPushNotificationConfig",
            {},
            {"taskId": "t1", "id": "p1"},
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
async def test_each_method(
    client: A2AClient,
    agent: FakeAgent,
    call: Callable[[A2AClient], Awaitable[Any]],
    method: str,
    result: Any,
    params: dict[str, Any],
) -> None:
    agent.reply(method, result)
    value = await call(client)
    sent = assert_common_headers(agent, method)
    assert sent == {"tenant": "acme", **params}
    if method == "DeleteTaskPushNotificationConfig":
        assert value is None
    else:
        assert type(value).__name__ == METHODS[method].result.__name__
        assert value == METHODS[method].result.from_dict(result)


async def test_get_extended_agent_card_replaces_card(client: A2AClient, agent: FakeAgent) -> None:
    agent.reply("GetExtendedAgentCard", card_json(agent.base))
    card = await client.get_extended_agent_card()
    assert card.name == "fake" and client.card is card
    assert assert_common_headers(agent, "GetExtendedAgentCard") == {"tenant": "acme"}
    await client.get_extended_agent_card(GetExtendedAgentCardRequest(tenant="t2"))
    assert agent.requests[-1].params == {"tenant": "t2"}


async def test_version_error_is_typed(client: A2AClient, agent: FakeAgent) -> None:
    info = {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "VERSION_NOT_SUPPORTED",
        "domain": "a2a-protocol.org",
        "metadata": {"supportedVersions": "0.3"},
    }
    agent.error("GetTask", -32009, "version 1.0 not served", [info])
    with pytest.raises(errors.VersionNotSupportedError) as caught:
        await client.get_task(GetTaskRequest(id="t1"))
    assert caught.value.code == -32009
    assert caught.value.message == "version 1.0 not served"
    assert caught.value.data == [info]
    assert caught.value.metadata == {"supportedVersions": "0.3"}


async def test_json_rpc_error_with_http_error_status_is_still_typed(
    client: A2AClient, agent: FakeAgent
) -> None:
    agent.error("GetTask", -32001, "no such task", status=404)
    with pytest.raises(errors.TaskNotFoundError, match="^no such task$"):
        await client.get_task(GetTaskRequest(id="t1"))


async def test_unknown_error_code(client: A2AClient, agent: FakeAgent) -> None:
    agent.error("GetTask", -32077, "from the future", {"detail": 1})
    with pytest.raises(errors.UnknownProtocolError) as caught:
        await client.get_task(GetTaskRequest(id="t1"))
    assert caught.value.code == -32077 and caught.value.data == [{"detail": 1}]


LACKS = r"^Task from the agent lacks required fields: "
NOT_FIT = r"^result does not fit GetTask: "


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ({"id": "t1"}, LACKS + "status$"),
        ({"id": "t1", "status": {"state": "TASK_STATE_UNSPECIFIED"}}, LACKS + r"status\.state$"),
        ({"status": {"state": "TASK_STATE_WORKING"}}, LACKS + "id$"),
        ({"id": "t1", "status": {"state": 42.5}}, NOT_FIT + r"status\.state: expected TaskState"),
        (["not", "an", "object"], NOT_FIT + "expected object, got array$"),
        (
            {"id": "t1", "status": {"state": "TASK_STATE_WORKING"}, "history": [{"parts": []}]},
            LACKS + r"history\[0\]\.messageId, history\[0\]\.role, history\[0\]\.parts$",
        ),
    ],
)
async def test_result_that_does_not_fit_is_invalid_agent_response(
    client: A2AClient, agent: FakeAgent, result: Any, message: str
) -> None:
    agent.reply("GetTask", result)
    with pytest.raises(errors.InvalidAgentResponseError, match=message):
        await client.get_task(GetTaskRequest(id="t1"))


async def test_send_message_result_without_known_member(
    client: A2AClient, agent: FakeAgent
) -> None:
    agent.reply("SendMessage", {"receipt": {"id": "r1"}})
    with pytest.raises(errors.InvalidAgentResponseError, match="neither a task nor a message"):
        await client.send_text("hi")


async def test_response_id_mismatch(client: A2AClient, agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        return web.json_response({"jsonrpc": "2.0", "id": 999, "result": task_json()})

    agent.on("GetTask", handler)
    with pytest.raises(errors.InvalidAgentResponseError, match="id"):
        await client.get_task(GetTaskRequest(id="t1"))


async def test_newer_fields_are_ignored_and_optional_fields_stay_optional(
    client: A2AClient, agent: FakeAgent
) -> None:
    task = {
        "id": "t1",
        "generation": 7,
        "status": {"state": "TASK_STATE_SUBMITTED", "progressHint": 0.4},
        "history": [{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "x"}]}],
        "artifacts": [{"artifactId": "a1", "parts": [{"text": "y", "weight": 3}], "origin": {}}],
    }
    agent.reply("GetTask", task)
    result = await client.get_task(GetTaskRequest(id="t1"))
    assert result.status is not None and result.status.timestamp is None
    assert result.status.state is TaskState.SUBMITTED
    assert result.context_id == "" and result.history[0].context_id == ""
    assert result.artifacts[0].parts[0].text == "y"


async def test_unknown_part_kinds_are_dropped_and_logged(
    client: A2AClient, agent: FakeAgent, caplog: pytest.LogCaptureFixture
) -> None:
    message = message_json(parts=[{"text": "keep"}, {"hologram": {"frames": 3}}])
    artifact = {"artifactId": "a1", "parts": [{"sculpture": "x"}, {"data": None}]}
    agent.reply("SendMessage", {"task": task_json(history=[message], artifacts=[artifact])})
    caplog.set_level(logging.INFO, logger="a2a_wire.client")
    result = await client.send_text("hi")
    assert result.task is not None
    assert [p.text for p in result.task.history[0].parts] == ["keep"]
    assert [p.which_content() for p in result.task.artifacts[0].parts] == ["data"]
    logged = [r.getMessage() for r in caplog.records if "unknown content kind" in r.getMessage()]
    assert len(logged) == 2 and "'m-agent'" in logged[0] and "'a1'" in logged[1]


async def test_message_with_only_unknown_parts_is_kept_empty(
    client: A2AClient, agent: FakeAgent
) -> None:
    agent.reply("SendMessage", {"message": message_json(parts=[{"hologram": {}}])})
    result = await client.send_text("hi")
    assert result.message is not None and result.message.parts == []
    assert result.message.role is Role.AGENT


async def test_wait_polls_until_interrupted(client: A2AClient, agent: FakeAgent) -> None:
    agent.reply_sequence(
        "GetTask",
        [
            task_json(state="TASK_STATE_SUBMITTED"),
            task_json(state="TASK_STATE_WORKING"),
            task_json(state="TASK_STATE_INPUT_REQUIRED"),
        ],
    )
    task = await client.wait("t1", poll_interval=0.01, timeout=60)
    assert task.status is not None and task.status.state is TaskState.INPUT_REQUIRED
    assert len(agent.requests) == 3
    assert all(r.params == {"tenant": "acme", "id": "t1"} for r in agent.requests)


async def until_requests(agent: FakeAgent, count: int) -> None:
    """Return once the agent has seen ``count`` requests."""
    while len(agent.requests) < count:
        await asyncio.sleep(0.01)


async def test_wait_does_not_finish_on_an_unknown_state(
    client: A2AClient, agent: FakeAgent
) -> None:
    agent.reply("GetTask", task_json(state="TASK_STATE_TELEPORTED"))
    waiting = asyncio.ensure_future(client.wait("t1", poll_interval=0.01, max_interval=0.02))
    await asyncio.wait_for(until_requests(agent, 4), 60)  # three unknown states, a fourth poll
    assert not waiting.done()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    # With a timeout, the error names the last state seen (one answer within a second is enough).
    with pytest.raises(WaitTimeoutError) as caught:
        await client.wait("t1", poll_interval=0.01, max_interval=0.02, timeout=1.0)
    assert caught.value.last_state is not None and not caught.value.last_state.is_known
    assert "still in state teleported" in str(caught.value)  # a newer name, as the CLI writes it


async def test_wait_raises_typed_errors(client: A2AClient, agent: FakeAgent) -> None:
    agent.error("GetTask", -32001, "gone")
    with pytest.raises(errors.TaskNotFoundError, match="^gone$"):
        await client.wait("t1", timeout=60)


async def test_connect_from_constructor_rejects_relative_urls() -> None:
    with pytest.raises(ValueError, match=r"^not an absolute http\(s\) URL: '/rpc'$"):
        A2AClient("/rpc")
    with pytest.raises(ValueError, match=r"^not an absolute http\(s\) URL: 'ftp:"):
        A2AClient("ftp://example.com/rpc")


async def test_concurrent_calls_share_the_session(client: A2AClient, agent: FakeAgent) -> None:
    agent.reply("GetTask", task_json())
    results = await asyncio.gather(*(client.get_task(GetTaskRequest(id="t1")) for _ in range(5)))
    assert len(results) == 5 and len({r.body["id"] for r in agent.requests}) == 5


async def test_send_message_request_object_roundtrip(client: A2AClient, agent: FakeAgent) -> None:
    request = SendMessageRequest.from_dict(
        {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "x"}]}}
    )
    agent.reply("SendMessage", {"message": message_json()})
    await client.send_message(request)
    assert agent.requests[-1].params["message"]["messageId"] == "m1"
