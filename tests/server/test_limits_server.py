"""Each server limit crossed over real HTTP: body size, parts, history, streams, request rate."""

from __future__ import annotations

from typing import Any

from patience import poll
from server_support import (
    ScriptedAgent,
    envelope,
    error,
    make_card,
    message,
    open_stream,
    post,
    result,
    send_params,
    violations,
)
from store_support import ServerStores

from a2a_wire.server import (
    AgentExecutor,
    EventQueue,
    RegisteredClient,
    RequestContext,
    SecurityConfig,
    ServerSettings,
    TaskUpdater,
    create_app,
    hash_secret,
)

A = {"Authorization": "Bearer limit-token-a"}
B = {"Authorization": "Bearer limit-token-b"}


def security() -> SecurityConfig:
    return SecurityConfig(
        clients=[
            RegisteredClient("a", token_hash=hash_secret("limit-token-a", log2_n=4)),
            RegisteredClient("b", token_hash=hash_secret("limit-token-b", log2_n=4)),
        ]
    )


async def test_body_too_large_is_413_with_a_jsonrpc_error(aiohttp_client: Any) -> None:
    settings = ServerSettings(max_body_bytes=2000)
    client = await aiohttp_client(create_app(make_card(), ScriptedAgent(), settings=settings))
    small = await post(client, envelope("SendMessage", send_params("x" * 100)))
    assert small.status == 200
    response = await post(client, envelope("SendMessage", send_params("x" * 3000)))
    assert response.status == 413
    body = await response.json()
    assert body["error"]["code"] == -32600
    assert "2000" in body["error"]["message"]


async def test_too_many_parts_is_32602(aiohttp_client: Any) -> None:
    settings = ServerSettings(max_parts_per_message=2)
    client = await aiohttp_client(create_app(make_card(), ScriptedAgent(), settings=settings))
    two = {"message": message("a") | {"parts": [{"text": "a"}, {"text": "b"}]}}
    assert (await result(client, "SendMessage", two))["task"]
    three = {"message": message("a") | {"parts": [{"text": "a"}] * 3}}
    err = await error(client, "SendMessage", three)
    assert err["code"] == -32602
    assert violations(err) == ["message.parts"]


class AlwaysAsks(AgentExecutor):
    """Every turn ends in INPUT_REQUIRED with a status message."""

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        assert context.message is not None
        text = context.message.parts[0].text
        await TaskUpdater(events, context).require_input(f"after {text}")


async def test_history_is_capped_keeping_the_first_message(
    aiohttp_client: Any, store_for: ServerStores
) -> None:
    settings = ServerSettings(max_history_per_task=3)
    app = create_app(make_card(), AlwaysAsks(), settings=settings, store=store_for(settings))
    client = await aiohttp_client(app)
    task = (await result(client, "SendMessage", send_params("u1")))["task"]
    for turn in ("u2", "u3"):
        task = (await result(client, "SendMessage", send_params(turn, taskId=task["id"])))["task"]
    texts = [m["parts"][0]["text"] for m in task["history"]]
    assert texts == ["u1", "u3", "after u3"]
    stored = await result(client, "GetTask", {"id": task["id"]})
    assert [m["parts"][0]["text"] for m in stored["history"]] == texts


async def test_streams_per_client(aiohttp_client: Any) -> None:
    settings = ServerSettings(max_streams_per_client=1)
    app = create_app(make_card(), ScriptedAgent(), settings=settings, security=security())
    client = await aiohttp_client(app)
    task = (await result(client, "SendMessage", send_params("input"), headers=A))["task"]
    first = await open_stream(client, "SubscribeToTask", {"id": task["id"]}, headers=A)
    assert await first.next() is not None  # the task snapshot: the stream is open
    refused = await post(client, envelope("SubscribeToTask", {"id": task["id"]}), headers=A)
    assert refused.status == 429
    assert refused.headers["Retry-After"] == "1"
    assert (await refused.json())["error"]["data"][0]["reason"] == "RATE_LIMITED"
    other = await post(client, envelope("SendStreamingMessage", send_params("hi")), headers=B)
    assert other.status == 200  # another client has its own slots
    await other.read()
    first.response.close()

    async def stream_again() -> Any:
        answer = await post(client, envelope("SendStreamingMessage", send_params("hi")), headers=A)
        await answer.read()
        return answer

    # The slot is freed once the server notices the reader left.
    again = await poll(stream_again, lambda answer: answer.status != 429, pause=0.02)
    assert again.status == 200


async def test_request_rate_per_client(aiohttp_client: Any) -> None:
    settings = ServerSettings(requests_per_second=0.5, request_burst=2)
    app = create_app(make_card(), ScriptedAgent(), settings=settings, security=security())
    client = await aiohttp_client(app)
    for _ in range(2):
        assert (await post(client, envelope("ListTasks", {}), headers=A)).status == 200
    refused = await post(client, envelope("ListTasks", {}), headers=A)
    assert refused.status == 429
    assert refused.headers["Retry-After"] == "2"
    body = await refused.json()
    assert body["id"] is None and body["error"]["code"] == -32600
    assert body["error"]["data"][0]["metadata"] == {"retryAfterSeconds": "2"}
    assert (await post(client, envelope("ListTasks", {}), headers=B)).status == 200


async def test_anonymous_callers_are_limited_only_when_asked(aiohttp_client: Any) -> None:
    relaxed = ServerSettings(requests_per_second=0.5, request_burst=1)
    client = await aiohttp_client(create_app(make_card(), ScriptedAgent(), settings=relaxed))
    for _ in range(3):
        assert (await post(client, envelope("ListTasks", {}))).status == 200
    strict = ServerSettings(requests_per_second=0.5, request_burst=1, limit_anonymous=True)
    client = await aiohttp_client(create_app(make_card(), ScriptedAgent(), settings=strict))
    assert (await post(client, envelope("ListTasks", {}))).status == 200
    assert (await post(client, envelope("ListTasks", {}))).status == 429
