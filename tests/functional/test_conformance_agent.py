"""The conformance-kit agent (examples/conformance_agent.py), row by row, through our own client.

The server is :func:`examples.conformance_agent.conformance_app` on 127.0.0.1; the client is
allowlisted for 127.0.0.1 and declares the card's required extension. Also here: the card and
JSON-RPC details a conformance run checks (caching headers and 304s, a text/plain POST refused
with -32005 before parsing, snake_case parameter names).
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from push_support import wait_until
from store_support import ServerStores

from a2a_wire import codec
from a2a_wire.client import A2AClient, ClientSettings
from a2a_wire.errors import ExtensionSupportRequiredError, InvalidParamsError
from a2a_wire.server import create_app
from a2a_wire.types import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from examples.conformance_agent import (
    BEHAVIOURS,
    REQUIRED_EXTENSION,
    ConformanceAgent,
    conformance_app,
    conformance_card,
    match_prefix,
)

SETTINGS = ClientSettings(allow=("127.0.0.1",), extensions=(REQUIRED_EXTENSION,))
S = TaskState


@pytest.fixture
def app(store_for: ServerStores) -> web.Application:
    return conformance_app(store_for(), resubscribe_hold_seconds=0.2)


@pytest.fixture
def client_settings() -> ClientSettings:
    return SETTINGS


def request(
    prefix: str, *, task_id: str = "", context_id: str = "", return_immediately: bool = False
) -> SendMessageRequest:
    message = Message(
        message_id=f"{prefix}-{uuid.uuid4().hex[:8]}",
        role=Role.USER,
        parts=[Part(text="hi")],
        task_id=task_id,
        context_id=context_id,
    )
    config = SendMessageConfiguration(return_immediately=True) if return_immediately else None
    return SendMessageRequest(message=message, configuration=config)


async def send_task(client: A2AClient, prefix: str, **kwargs: Any) -> Task:
    result = await client.send_message(request(prefix, **kwargs))
    assert result.task is not None, result
    return result.task


def state(task: Task) -> TaskState:
    assert task.status is not None
    return task.status.state


def status_text(task: Task) -> str:
    assert task.status is not None and task.status.message is not None
    assert task.status.message.role == Role.AGENT
    return task.status.message.parts[0].text or ""


def only_part(task: Task) -> Part:
    [artifact] = task.artifacts
    [part] = artifact.parts
    return part


async def stream_events(client: A2AClient, prefix: str) -> list[StreamResponse]:
    async with client.send_streaming_message(request(prefix)) as stream:
        return [event async for event in stream]


def kinds(events: list[StreamResponse]) -> list[str]:
    out = []
    for event in events:
        kind = event.which_payload()
        if event.status_update is not None and event.status_update.status is not None:
            kind = f"{kind}:{event.status_update.status.state.value}"
        out.append(str(kind))
    return out


# -- routing --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message_id", "prefix"),
    [
        ("tck-artifact-file-url-001", "tck-artifact-file-url"),
        ("tck-artifact-file-001", "tck-artifact-file"),
        ("tck-stream-artifact-file-9", "tck-stream-artifact-file"),
        ("tck-stream-artifact-chunked", "tck-stream-artifact-chunked"),
        ("test-resubscribe-message-id-7", "test-resubscribe-message-id"),
        ("tck-stream-0010", "tck-stream-001"),
        ("tck-stream", None),
        ("hello", None),
    ],
)
def test_longest_prefix_wins(message_id: str, prefix: str | None) -> None:
    assert match_prefix(message_id) == prefix


def test_every_prefix_is_reachable() -> None:
    assert all(match_prefix(prefix) == prefix for prefix in BEHAVIOURS)


# -- the table, row by row ------------------------------------------------------------------------


async def test_complete_task(client: A2AClient) -> None:
    task = await send_task(client, "tck-complete-task")
    assert state(task) == S.COMPLETED and status_text(task) == "Hello from TCK"


async def test_complete_task_as_a_follow_up_completes_that_task(client: A2AClient) -> None:
    waiting = await send_task(client, "tck-input-required")
    done = await send_task(
        client, "tck-complete-task", task_id=waiting.id, context_id=waiting.context_id
    )
    assert done.id == waiting.id and state(done) == S.COMPLETED
    assert status_text(done) == "Hello from TCK"


async def test_artifact_text(client: A2AClient) -> None:
    task = await send_task(client, "tck-artifact-text")
    assert state(task) == S.COMPLETED
    assert only_part(task).to_dict() == {"text": "Generated text content"}


async def test_artifact_file_url(client: A2AClient) -> None:
    part = only_part(await send_task(client, "tck-artifact-file-url"))
    assert part.to_dict() == {
        "url": "https://example.com/output.txt",
        "mediaType": "text/plain",
        "filename": "output.txt",
    }


async def test_artifact_file(client: A2AClient) -> None:
    part = only_part(await send_task(client, "tck-artifact-file"))
    assert part.raw == b"tck"
    assert part.to_dict() == {
        "raw": base64.b64encode(b"tck").decode(),
        "mediaType": "text/plain",
        "filename": "output.txt",
    }


async def test_artifact_data(client: A2AClient) -> None:
    part = only_part(await send_task(client, "tck-artifact-data"))
    assert part.to_dict() == {"data": {"key": "value", "count": 42}}


async def test_message_response_makes_no_task(client: A2AClient) -> None:
    result = await client.send_message(request("tck-message-response"))
    assert result.task is None and result.message is not None
    assert result.message.role == Role.AGENT
    assert [p.text for p in result.message.parts] == ["Direct message response"]


async def test_input_required_stays_there_on_a_follow_up(client: A2AClient) -> None:
    task = await send_task(client, "tck-input-required")
    assert state(task) == S.INPUT_REQUIRED
    again = await send_task(
        client, "tck-input-required", task_id=task.id, context_id=task.context_id
    )
    assert again.id == task.id and state(again) == S.INPUT_REQUIRED


async def test_reject_task(client: A2AClient) -> None:
    task = await send_task(client, "tck-reject-task")
    assert state(task) == S.REJECTED and status_text(task) == "rejected"


@pytest.mark.parametrize(
    ("prefix", "text"),
    [
        ("tck-stream-001", "Stream hello from TCK"),
        ("tck-stream-003", "Stream task lifecycle"),
        ("tck-stream-ordering-001", "Ordered output"),
        ("tck-stream-artifact-text", "Streamed text content"),
    ],
)
async def test_stream_working_artifact_completed(client: A2AClient, prefix: str, text: str) -> None:
    events = await stream_events(client, prefix)
    assert kinds(events) == [
        "task",
        "status_update:TASK_STATE_WORKING",
        "artifact_update",
        "status_update:TASK_STATE_COMPLETED",
    ]
    artifact = events[2].artifact_update
    assert artifact is not None and artifact.artifact is not None
    assert [p.text for p in artifact.artifact.parts] == [text]


async def test_stream_002_completes_at_once(client: A2AClient) -> None:
    events = await stream_events(client, "tck-stream-002")
    assert kinds(events) == ["task", "status_update:TASK_STATE_COMPLETED"]


async def test_stream_artifact_file(client: A2AClient) -> None:
    events = await stream_events(client, "tck-stream-artifact-file")
    assert kinds(events)[1:] == [
        "status_update:TASK_STATE_WORKING",
        "artifact_update",
        "status_update:TASK_STATE_COMPLETED",
    ]
    update = events[2].artifact_update
    assert update is not None and update.artifact is not None
    [part] = update.artifact.parts
    assert (part.raw, part.media_type, part.filename) == (b"tck", "text/plain", "output.txt")


async def test_stream_artifact_chunked(client: A2AClient) -> None:
    events = await stream_events(client, "tck-stream-artifact-chunked")
    assert kinds(events) == [
        "task",
        "status_update:TASK_STATE_WORKING",
        "artifact_update",
        "artifact_update",
        "status_update:TASK_STATE_COMPLETED",
    ]
    first, last = events[2].artifact_update, events[3].artifact_update
    assert first is not None and last is not None
    assert first.artifact is not None and last.artifact is not None
    assert (first.append, first.last_chunk, [p.text for p in first.artifact.parts]) == (
        True,
        False,
        ["chunk-1 "],
    )
    assert (last.append, last.last_chunk, [p.text for p in last.artifact.parts]) == (
        True,
        True,
        ["chunk-2"],
    )
    assert first.artifact.artifact_id == last.artifact.artifact_id
    stored = await client.get_task(GetTaskRequest(id=first.task_id))
    assert [p.text for p in stored.artifacts[0].parts] == ["chunk-1 ", "chunk-2"]


async def test_resubscribe_task_stays_working_then_completes(client: A2AClient) -> None:
    task = await send_task(client, "test-resubscribe-message-id", return_immediately=True)
    async with client.subscribe_to_task(SubscribeToTaskRequest(id=task.id)) as stream:
        events = [event async for event in stream]
    assert events[0].task is not None and state(events[0].task) == S.WORKING
    assert kinds(events)[-1] == "status_update:TASK_STATE_COMPLETED"


async def test_anything_else_echoes_the_message_id(client: A2AClient) -> None:
    req = request("hello")
    result = await client.send_message(req)
    assert result.task is not None and state(result.task) == S.COMPLETED
    assert req.message is not None
    assert req.message.message_id in status_text(result.task)


# -- card and wire details a conformance run checks -----------------------------------------------


async def test_card_declares_streaming_push_and_the_required_extension(
    client: A2AClient, server: TestServer
) -> None:
    card = client.card
    assert card is not None and card.capabilities is not None
    assert card.capabilities.streaming and card.capabilities.push_notifications
    [extension] = card.capabilities.extensions
    assert (extension.uri, extension.required) == (REQUIRED_EXTENSION, True)
    [iface] = card.supported_interfaces
    assert iface.url == str(server.make_url("/"))
    assert conformance_card().capabilities == card.capabilities


async def test_send_without_the_required_extension_is_refused(server: TestServer) -> None:
    settings = ClientSettings(allow=("127.0.0.1",))
    async with await A2AClient.connect(str(server.make_url("/")), settings=settings) as bare:
        with pytest.raises(
            ExtensionSupportRequiredError,
            match="requires the extension urn:a2a:tck:required-extension",
        ) as caught:
            await bare.send_message(request("tck-complete-task"))
    assert caught.value.code == -32008


async def test_card_caching_headers_and_revalidation(server: TestServer) -> None:
    async with aiohttp.ClientSession() as http:
        url = server.make_url("/.well-known/agent-card.json")
        async with http.get(url) as response:
            assert response.status == 200
            assert "max-age=" in response.headers["Cache-Control"]
            etag, modified = response.headers["ETag"], response.headers["Last-Modified"]
        for headers in ({"If-None-Match": etag}, {"If-Modified-Since": modified}):
            async with http.get(url, headers=headers) as response:
                assert response.status == 304, headers
                assert await response.read() == b""


async def test_text_plain_post_is_refused_before_parsing(server: TestServer) -> None:
    async with aiohttp.ClientSession() as http:
        headers = {"Content-Type": "text/plain", "A2A-Version": "1.0"}
        async with http.post(server.make_url("/"), data=b"not even json", headers=headers) as r:
            assert r.content_type == "application/json"
            answer = codec.loads(await r.read())
    assert answer["jsonrpc"] == "2.0" and answer["id"] is None
    assert answer["error"]["code"] == -32005
    [info] = [d for d in answer["error"]["data"] if d["@type"].endswith("ErrorInfo")]
    assert info["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"


async def test_snake_case_parameter_names_are_accepted(server: TestServer) -> None:
    headers = {
        "Content-Type": "application/json",
        "A2A-Version": "1.0",
        "A2A-Extensions": REQUIRED_EXTENSION,
    }
    message = {
        "message_id": "tck-complete-task-snake",
        "role": "ROLE_USER",
        "parts": [{"text": "x"}],
    }
    params = {"message": message, "configuration": {"history_length": 0}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    async with aiohttp.ClientSession() as http:
        async with http.post(server.make_url("/"), json=body, headers=headers) as response:
            task = (await response.json())["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert "history" not in task  # history_length 0 was read
        get = {"jsonrpc": "2.0", "id": 2, "method": "GetTask"}
        get["params"] = {"id": task["id"], "history_length": 1}
        async with http.post(server.make_url("/"), json=get, headers=headers) as response:
            fetched = (await response.json())["result"]
    assert [m["messageId"] for m in fetched["history"]] == [
        fetched["status"]["message"]["messageId"]
    ]


# -- webhooks: the kit's receiver is plain http on loopback ---------------------------------------


@pytest.fixture
async def webhook() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []

    async def receive(request: web.Request) -> web.Response:
        received.append(await request.json())
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/webhook", receive)
    receiver = TestServer(app, host="127.0.0.1")
    await receiver.start_server()
    yield str(receiver.make_url("/webhook")), received
    await receiver.close()


async def test_webhooks_on_plain_http_loopback_are_delivered(
    client: A2AClient, webhook: tuple[str, list[dict[str, Any]]]
) -> None:
    url, received = webhook
    task = await send_task(client, "tck-input-required")
    config = TaskPushNotificationConfig(task_id=task.id, url=url, token="tck-token")
    created = await client.create_task_push_notification_config(config)
    assert created.id and created.url == url
    await send_task(client, "tck-complete-task", task_id=task.id, context_id=task.context_id)

    def states() -> list[str]:
        return [b["statusUpdate"]["status"]["state"] for b in received if "statusUpdate" in b]

    await wait_until(lambda: "TASK_STATE_COMPLETED" in states())  # not just the first update
    assert states()[-1] == "TASK_STATE_COMPLETED"


async def test_the_default_configuration_refuses_such_webhooks(
    webhook: tuple[str, list[dict[str, Any]]],
) -> None:
    url, _ = webhook
    app = create_app(conformance_card(), ConformanceAgent())
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        async with await A2AClient.connect(str(server.make_url("/")), settings=SETTINGS) as a2a:
            task = await send_task(a2a, "tck-input-required")
            with pytest.raises(
                InvalidParamsError, match="url: must be an absolute https URL$"
            ) as caught:
                await a2a.create_task_push_notification_config(
                    TaskPushNotificationConfig(task_id=task.id, url=url)
                )
    finally:
        await server.close()
    assert caught.value.code == -32602
