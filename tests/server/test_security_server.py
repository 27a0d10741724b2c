"""Registered clients over real HTTP: 401s, the card's declarations, per-client scoping
(spec 13.1), tenants, the extended card, extensions, and failure rate limiting."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from aiohttp import web
from server_support import (
    ScriptedAgent,
    envelope,
    error,
    make_card,
    open_stream,
    plain_error,
    post,
    result,
    send_params,
    violations,
)
from store_support import ServerStores

from a2a_wire.server import (
    RUNTIME_KEY,
    RegisteredClient,
    SecurityConfig,
    ServerSettings,
    create_app,
    hash_secret,
)
from a2a_wire.types import AgentExtension, AgentInterface

TOKEN_A = "tok-A-3e1b9c7d5f"
KEY_B = "key-B-8a2d4f6b0c"
A = {"Authorization": f"Bearer {TOKEN_A}"}
B = {"X-API-Key": KEY_B}
HOOK = "https://8.8.8.8/hook"  # never called: A's tasks are finished when configs are added


def clients() -> list[RegisteredClient]:
    return [
        RegisteredClient("alice", token_hash=hash_secret(TOKEN_A, log2_n=4)),
        RegisteredClient("bob", api_key_hash=hash_secret(KEY_B, log2_n=4)),
    ]


@pytest.fixture
def app(agent: ScriptedAgent, store_for: ServerStores) -> web.Application:
    security = SecurityConfig(clients=clients(), extended_card=True)
    card = make_card(push=True, extended=True)
    return create_app(card, agent, security=security, store=store_for())


# -- authentication -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "bearer_error"),
    [
        ({}, ""),
        ({"Authorization": "Bearer wrong"}, ', error="invalid_token"'),
        ({"X-API-Key": "wrong"}, ""),
        ({"X-API-Key": TOKEN_A}, ""),
    ],
)
async def test_missing_or_wrong_credentials_are_401(
    client: Any, headers: dict[str, str], bearer_error: str
) -> None:
    response = await post(client, envelope("GetTask", {"id": "x"}), headers=headers)
    assert response.status == 401
    assert response.headers.getall("WWW-Authenticate") == [
        f'Bearer realm="a2a"{bearer_error}',
        'ApiKey realm="a2a", header="X-API-Key"',
    ]
    body = await response.json()
    assert body["id"] is None
    assert body["error"]["code"] == -32600
    [info] = body["error"]["data"]
    assert (info["reason"], info["domain"]) == ("UNAUTHENTICATED", "a2a-wire")


async def test_every_method_needs_credentials(client: Any) -> None:
    for method in ("SendMessage", "ListTasks", "GetExtendedAgentCard", "SendStreamingMessage"):
        response = await post(client, envelope(method, {}))
        assert response.status == 401, method


async def test_public_card_stays_public_and_declares_the_schemes(client: Any) -> None:
    response = await client.get("/.well-known/agent-card.json")
    assert response.status == 200
    card = await response.json()
    assert card["securitySchemes"] == {
        "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "description": "Bearer token"}},
        "apiKey": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}},
    }
    assert card["securityRequirements"] == [
        {"schemes": {"bearer": {}}},
        {"schemes": {"apiKey": {}}},
    ]


async def test_auth_failures_are_rate_limited_per_source(aiohttp_client: Any) -> None:
    settings = ServerSettings(auth_failures_per_minute=3)
    app = create_app(
        make_card(), ScriptedAgent(), settings=settings, security=SecurityConfig(clients=clients())
    )
    client = await aiohttp_client(app)
    for _ in range(3):
        assert (
            await post(client, envelope("ListTasks", {}), headers=B | {"X-API-Key": "x"})
        ).status == 401
    refused = await post(client, envelope("ListTasks", {}), headers=B)  # even a good key now
    assert refused.status == 429
    assert int(refused.headers["Retry-After"]) >= 1
    body = await refused.json()
    assert body["error"]["data"][0]["reason"] == "RATE_LIMITED"


# -- scoping: B never sees A's things -------------------------------------------------------------


def _same_shape(theirs: dict[str, Any], unknown: dict[str, Any], their_id: str, fake: str) -> None:
    """B's error for A's id equals the error for an id that never existed (ids swapped)."""
    assert theirs["code"] == -32001
    assert codec_swap(theirs, their_id, fake) == unknown


def codec_swap(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [codec_swap(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: codec_swap(v, old, new) for k, v in value.items()}
    return value


async def test_b_cannot_touch_a_task(client: Any) -> None:
    done = (await result(client, "SendMessage", send_params("hello"), headers=A))["task"]
    waiting = (await result(client, "SendMessage", send_params("input"), headers=A))["task"]
    await result(
        client, "CreateTaskPushNotificationConfig", {"taskId": done["id"], "url": HOOK}, headers=A
    )
    calls: list[tuple[str, Any]] = [
        ("GetTask", {"id": "{id}"}),
        ("CancelTask", {"id": "{id}"}),
        ("SendMessage", send_params("more", taskId="{id}")),
        ("CreateTaskPushNotificationConfig", {"taskId": "{id}", "url": HOOK}),
        ("GetTaskPushNotificationConfig", {"taskId": "{id}", "id": "c"}),
        ("ListTaskPushNotificationConfigs", {"taskId": "{id}"}),
        ("DeleteTaskPushNotificationConfig", {"taskId": "{id}", "id": "c"}),
    ]
    for task in (done, waiting):
        fake = str(uuid.uuid4())
        for method, params in calls:
            theirs = await error(client, method, codec_swap(params, "{id}", task["id"]), headers=B)
            unknown = await error(client, method, codec_swap(params, "{id}", fake), headers=B)
            _same_shape(theirs, unknown, task["id"], fake)
        subscribed = await plain_error(client, "SubscribeToTask", {"id": task["id"]}, headers=B)
        assert subscribed["code"] == -32001
    # A's things are intact and still A's
    got = await result(client, "GetTask", {"id": waiting["id"]}, headers=A)
    assert got["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    configs = await result(
        client, "ListTaskPushNotificationConfigs", {"taskId": done["id"]}, headers=A
    )
    assert len(configs["configs"]) == 1


async def test_lists_are_per_client(client: Any) -> None:
    a_task = (await result(client, "SendMessage", send_params("hello"), headers=A))["task"]
    context = a_task["contextId"]
    # B reusing A's context id gets a conversation of its own
    b_task = (
        await result(client, "SendMessage", send_params("hello", contextId=context), headers=B)
    )["task"]
    a_list = await result(client, "ListTasks", {}, headers=A)
    b_list = await result(client, "ListTasks", {"contextId": context}, headers=B)
    assert [t["id"] for t in a_list["tasks"]] == [a_task["id"]]
    assert [t["id"] for t in b_list["tasks"]] == [b_task["id"]]
    assert a_list["totalSize"] == b_list["totalSize"] == 1


async def test_agent_sees_the_caller_and_can_key_conversations(
    client: Any, agent: ScriptedAgent
) -> None:
    await result(client, "SendMessage", send_params("hello", contextId="shared"), headers=A)
    await result(client, "SendMessage", send_params("hello", contextId="shared"), headers=B)
    keys = [c.conversation_key for c in agent.contexts]
    assert keys == [("", "alice", "shared"), ("", "bob", "shared")]


async def test_page_tokens_do_not_cross_clients(client: Any) -> None:
    for _ in range(3):
        await result(client, "SendMessage", send_params("hello"), headers=A)
    page = await result(client, "ListTasks", {"pageSize": 1}, headers=A)
    err = await error(
        client, "ListTasks", {"pageSize": 1, "pageToken": page["nextPageToken"]}, headers=B
    )
    assert violations(err) == ["pageToken"]


async def test_live_task_of_another_client_takes_the_store_path(
    client: Any, agent: ScriptedAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    call = asyncio.create_task(result(client, "SendMessage", send_params("wait"), headers=A))
    await agent.started.wait()
    [task] = (await result(client, "ListTasks", {}, headers=A))["tasks"]
    runtime = client.server.app[RUNTIME_KEY]
    try:
        assert task["id"] in runtime.hubs  # the hub is live
        looked: list[tuple[str, str]] = []
        real_get = runtime.store.get

        async def spy(task_id: str, *, owner: str = "") -> Any:
            looked.append((task_id, owner))
            return await real_get(task_id, owner=owner)

        monkeypatch.setattr(runtime.store, "get", spy)
        await error(client, "CancelTask", {"id": task["id"]}, headers=B)
        assert looked == [(task["id"], "\x1fbob")]  # same lookup as for an unknown id
    finally:
        agent.gate.set()
        await call


# -- tenants --------------------------------------------------------------------------------------


@pytest.fixture
async def tenant_client(aiohttp_client: Any) -> Any:
    card = make_card()
    card.supported_interfaces = [
        AgentInterface(url="x", protocol_binding="JSONRPC", protocol_version="1.0", tenant=t)
        for t in ("t1", "t2")
    ]
    security = SecurityConfig(clients=clients())
    return await aiohttp_client(create_app(card, ScriptedAgent(), security=security))


async def test_interfaces_with_tenants_are_served_and_required(tenant_client: Any) -> None:
    card = await (await tenant_client.get("/.well-known/agent-card.json")).json()
    assert [i.get("tenant") for i in card["supportedInterfaces"]] == ["t1", "t2"]
    err = await error(tenant_client, "ListTasks", {}, headers=A)
    assert err["code"] == -32602 and violations(err) == ["tenant"]
    err = await error(tenant_client, "ListTasks", {"tenant": "t3"}, headers=A)
    assert violations(err) == ["tenant"]


async def test_data_is_partitioned_by_tenant(tenant_client: Any) -> None:
    params = send_params("hello") | {"tenant": "t1"}
    task = (await result(tenant_client, "SendMessage", params, headers=A))["task"]
    assert await result(tenant_client, "GetTask", {"id": task["id"], "tenant": "t1"}, headers=A)
    err = await error(tenant_client, "GetTask", {"id": task["id"], "tenant": "t2"}, headers=A)
    assert err["code"] == -32001
    listed = await result(tenant_client, "ListTasks", {"tenant": "t2"}, headers=A)
    assert listed["tasks"] == []


async def test_a_request_tenant_on_an_interface_without_one_is_refused(client: Any) -> None:
    err = await error(client, "ListTasks", {"tenant": "t1"}, headers=A)
    assert violations(err) == ["tenant"]


# -- extended card --------------------------------------------------------------------------------


async def test_extended_card_for_an_authenticated_caller(client: Any) -> None:
    card = await result(client, "GetExtendedAgentCard", None, headers=A)
    assert card["name"] == "scripted"
    assert card["securitySchemes"]
    assert card["supportedInterfaces"][0]["url"].startswith("http://127.0.0.1:")


async def test_extended_card_declared_but_not_configured_is_32007(aiohttp_client: Any) -> None:
    app = create_app(
        make_card(extended=True), ScriptedAgent(), security=SecurityConfig(clients=clients())
    )
    client = await aiohttp_client(app)
    assert (await error(client, "GetExtendedAgentCard", None, headers=A))["code"] == -32007


async def test_extended_card_not_declared_is_32004(aiohttp_client: Any) -> None:
    security = SecurityConfig(clients=clients(), extended_card=True)
    client = await aiohttp_client(create_app(make_card(), ScriptedAgent(), security=security))
    assert (await error(client, "GetExtendedAgentCard", None, headers=A))["code"] == -32004


def test_extended_card_needs_registered_clients() -> None:
    with pytest.raises(ValueError, match="13.3"):
        create_app(
            make_card(extended=True), ScriptedAgent(), security=SecurityConfig(extended_card=True)
        )


# -- extensions -----------------------------------------------------------------------------------


@pytest.fixture
async def ext_client(aiohttp_client: Any) -> Any:
    card = make_card(required_extension="urn:x:required")
    assert card.capabilities is not None
    card.capabilities.extensions.append(AgentExtension(uri="urn:x:optional"))
    return await aiohttp_client(create_app(card, ScriptedAgent()))


async def test_missing_required_extension_is_32008(ext_client: Any) -> None:
    err = await error(ext_client, "ListTasks", {}, headers={"A2A-Extensions": "urn:x:optional"})
    assert err["code"] == -32008


async def test_applied_extensions_are_echoed(ext_client: Any) -> None:
    sent = {"A2A-Extensions": "urn:x:unknown, urn:x:optional,urn:x:required"}
    response = await post(ext_client, envelope("ListTasks", {}), headers=sent)
    assert response.status == 200
    assert response.headers["A2A-Extensions"] == "urn:x:optional,urn:x:required"
    reader = await open_stream(ext_client, "SendStreamingMessage", send_params("hi"), headers=sent)
    assert reader.response.headers["A2A-Extensions"] == "urn:x:optional,urn:x:required"
    await reader.rest()


async def test_no_echo_without_applied_extensions(client: Any) -> None:
    response = await post(
        client, envelope("ListTasks", {}), headers=A | {"A2A-Extensions": "urn:x"}
    )
    assert response.status == 200
    assert "A2A-Extensions" not in response.headers
