"""JSON-RPC 2.0 handling of the server over real HTTP: envelope, batches, notifications, HTTP
errors, content type, body size and version negotiation (spec 3.6, 9)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from aiohttp import web
from server_support import (
    ScriptedAgent,
    envelope,
    error,
    make_card,
    post,
    reason,
    result,
    rpc,
    send_params,
    violations,
)
from store_support import ServerStores

from a2a_wire.server import ServerSettings, create_app
from a2a_wire.server import _admission as guard_module
from a2a_wire.server.store import InMemoryTaskStore
from a2a_wire.types import Task


@pytest.fixture
def app(agent: ScriptedAgent, store_for: ServerStores) -> web.Application:
    settings = ServerSettings(max_body_bytes=4096, max_batch_size=6)
    return create_app(make_card(), agent, settings=settings, store=store_for(settings))


async def answer(client: Any, body: Any, **kwargs: Any) -> Any:
    response = await post(client, body, **kwargs)
    assert response.status == 200, await response.text()
    assert response.content_type == "application/json"
    return await response.json()


# -- envelope ------------------------------------------------------------------------------------


async def test_invalid_json_is_parse_error_with_null_id(client: Any) -> None:
    got = await answer(client, b'{"jsonrpc": "2.0", "id": 1,')
    assert got["id"] is None
    assert got["error"]["code"] == -32700


@pytest.mark.parametrize("body", [b"42", b'"text"', b"null", b"true"])
async def test_non_object_body_is_invalid_request(client: Any, body: bytes) -> None:
    got = await answer(client, body)
    assert got == {"jsonrpc": "2.0", "id": None, "error": got["error"]}
    assert got["error"]["code"] == -32600


@pytest.mark.parametrize(
    ("body", "rid"),
    [
        ({"id": 7, "method": "GetTask", "params": {"id": "x"}}, 7),
        ({"jsonrpc": "1.0", "id": "a", "method": "GetTask"}, "a"),
        ({"jsonrpc": "2.0", "id": {"x": 1}, "method": "GetTask"}, None),
        ({"jsonrpc": "2.0", "id": 3, "method": 12}, 3),
    ],
)
async def test_bad_request_objects_are_invalid_request(client: Any, body: Any, rid: Any) -> None:
    got = await answer(client, body)
    assert got["id"] == rid
    assert got["error"]["code"] == -32600


@pytest.mark.parametrize("method", ["message/send", "sendMessage", "tasks/get", "Nope"])
async def test_unknown_method(client: Any, method: str) -> None:
    err = await error(client, method, {})
    assert err["code"] == -32601


async def test_params_that_are_not_an_object(client: Any) -> None:
    err = await error(client, "GetTask", [1, 2])
    assert err["code"] == -32602
    assert violations(err) == ["params"]


@pytest.mark.parametrize(
    ("params", "paths"),
    [
        ({}, ["message"]),
        ({"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}, ["message.messageId"]),
        ({"message": {"messageId": "m", "parts": [{"text": "x"}]}}, ["message.role"]),
        ({"message": {"messageId": "m", "role": "ROLE_USER", "parts": 5}}, ["message.parts"]),
        (
            {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": 1}]}},
            ["message.parts[0].text"],
        ),
    ],
)
async def test_params_failing_decoding_or_required_checks(
    client: Any, params: Any, paths: list[str]
) -> None:
    err = await error(client, "SendMessage", params)
    assert err["code"] == -32602
    assert violations(err) == paths


async def test_missing_params_are_an_empty_object(client: Any) -> None:
    err = await error(client, "GetTask")
    assert err["code"] == -32602
    assert violations(err) == ["id"]


# -- notifications and batches ------------------------------------------------------------------


async def test_notification_runs_and_gets_no_body(client: Any) -> None:
    body = {"jsonrpc": "2.0", "method": "SendMessage", "params": send_params("echo")}
    response = await post(client, body)
    assert response.status == 204
    assert await response.read() == b""
    listed = await result(client, "ListTasks", {})
    assert listed["totalSize"] == 1
    assert listed["tasks"][0]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize(
    "body",
    [
        {"jsonrpc": "2.0", "method": "NoSuchMethod"},
        {"jsonrpc": "2.0", "method": "GetTask", "params": {"id": "missing"}},
        {"jsonrpc": "2.0", "method": "SubscribeToTask", "params": {"id": "missing"}},
        [{"jsonrpc": "2.0", "method": "GetTask", "params": {}}],
    ],
)
async def test_failing_notifications_get_no_body_either(client: Any, body: Any) -> None:
    response = await post(client, body)
    assert response.status == 204
    assert await response.read() == b""


async def test_batch_is_answered_in_order_with_per_member_errors(client: Any) -> None:
    body = [
        envelope("GetTask", {"id": "missing"}, "a"),
        envelope("SendMessage", send_params("echo"), "b"),
        {"jsonrpc": "2.0", "method": "SendMessage", "params": send_params("echo")},
        5,
        envelope("SendStreamingMessage", send_params("echo"), "c"),
        envelope("SendMessage", {"message": {}}, "d"),
    ]
    got = await answer(client, body)
    assert isinstance(got, list), got
    assert [a["id"] for a in got] == ["a", "b", None, "c", "d"]
    assert got[0]["error"]["code"] == -32001
    assert got[1]["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert got[2]["error"]["code"] == -32600
    assert got[3]["error"]["code"] == -32600
    assert "batch" in got[3]["error"]["message"]
    assert got[4]["error"]["code"] == -32602
    # the notification ran, the streaming member did not
    assert (await result(client, "ListTasks", {}))["totalSize"] == 2


async def test_empty_batch_is_one_invalid_request(client: Any) -> None:
    got = await answer(client, [])
    assert got["id"] is None
    assert got["error"]["code"] == -32600


async def test_batch_over_the_limit_is_refused_whole(client: Any) -> None:
    got = await answer(client, [envelope("GetTask", {"id": "x"}, i) for i in range(7)])
    assert got["error"]["code"] == -32600
    assert "exceeds 6" in got["error"]["message"]


# -- HTTP level -----------------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
async def test_non_json_content_type_is_refused_before_parsing(
    client: Any, content_type: str | None
) -> None:
    headers = {"A2A-Version": "1.0"}
    if content_type is not None:
        headers["Content-Type"] = content_type
    data = b"this is not even JSON"
    response = await client.post(
        "/", data=data, headers=headers, skip_auto_headers=["Content-Type"]
    )
    assert response.status == 415
    got = await response.json()
    assert got["error"]["code"] == -32005
    assert reason(got["error"]) == "CONTENT_TYPE_NOT_SUPPORTED"


@pytest.mark.parametrize(
    "content_type", ["application/a2a+json", "application/json; charset=utf-8"]
)
async def test_json_content_types_are_accepted(client: Any, content_type: str) -> None:
    body = envelope("GetTask", {"id": "missing"})
    got = await answer(client, body, headers={"Content-Type": content_type})
    assert got["error"]["code"] == -32001


async def test_body_too_large_is_413_with_json_rpc_body(client: Any) -> None:
    response = await post(client, envelope("SendMessage", send_params("x" * 5000)))
    assert response.status == 413
    got = await response.json()
    assert got["error"]["code"] == -32600
    assert "4096" in got["error"]["message"]


async def test_unknown_path_answers_json(client: Any) -> None:
    for response in (await client.get("/nope"), await post(client, b"{}", path="/nope")):
        assert response.status == 404
        assert response.content_type == "application/json"
        assert (await response.json())["error"]["code"] == -32600


async def test_wrong_http_method_answers_json(client: Any) -> None:
    response = await client.get("/")
    assert response.status == 405
    assert response.headers["Allow"] == "POST"
    assert (await response.json())["error"]["code"] == -32600


async def test_unexpected_exception_is_500_json_without_detail(
    client: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(value: str | None) -> tuple[str, ...]:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(guard_module, "parse_extensions", explode)
    with caplog.at_level(logging.ERROR, "a2a_wire.server"):
        response = await post(client, envelope("GetTask", {"id": "x"}))
    assert response.status == 500
    got = await response.json()
    assert got["error"] == {"code": -32603, "message": "Internal error"}
    assert "secret detail" in caplog.text


class BrokenStore(InMemoryTaskStore):
    """Fails every read of task ``x``."""

    async def get(self, task_id: str, *, owner: str = "") -> Task | None:
        if task_id == "x":
            raise RuntimeError("disk on fire")
        return await super().get(task_id, owner=owner)


async def test_failing_call_is_internal_error_and_server_keeps_serving(
    aiohttp_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    client = await aiohttp_client(create_app(make_card(), ScriptedAgent(), store=BrokenStore()))
    with caplog.at_level(logging.ERROR, "a2a_wire.server"):
        err = await error(client, "GetTask", {"id": "x"})
    assert err == {"code": -32603, "message": "Internal error"}
    assert "disk on fire" in caplog.text
    assert "task" in await result(client, "SendMessage", send_params("echo"))


async def test_custom_rpc_path(aiohttp_client: Any) -> None:
    settings = ServerSettings(rpc_path="/a2a/v1")
    client = await aiohttp_client(create_app(make_card(), ScriptedAgent(), settings=settings))
    assert "task" in await result(client, "SendMessage", send_params("echo"), path="/a2a/v1")
    assert (await post(client, envelope("GetTask", {"id": "x"}))).status == 404


# -- version negotiation (spec 3.6) ---------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.0", "1.0.5", " 1.0 ", "1.0.0"])
async def test_served_versions(client: Any, version: str) -> None:
    err = await error(client, "GetTask", {"id": "x"}, headers={"A2A-Version": version})
    assert err["code"] == -32001


@pytest.mark.parametrize("version", ["", "0.3", "1.1", "2.0", "1", "v1.0", "1.0-beta"])
async def test_unserved_versions(client: Any, version: str) -> None:
    err = await error(client, "GetTask", {"id": "x"}, headers={"A2A-Version": version})
    assert err["code"] == -32009
    assert reason(err) == "VERSION_NOT_SUPPORTED"
    assert "1.0" in err["message"]
    assert err["data"][0]["metadata"]["supportedVersions"] == "1.0"


async def test_absent_version_means_0_3(client: Any) -> None:
    body = envelope("GetTask", {"id": "x"})
    response = await client.post("/", json=body)
    got = await response.json()
    assert got["error"]["code"] == -32009
    assert "'0.3'" in got["error"]["message"]


async def test_version_as_query_parameter(client: Any) -> None:
    body = envelope("GetTask", {"id": "x"})
    ok = await (await client.post("/?A2A-Version=1.0", json=body)).json()
    assert ok["error"]["code"] == -32001
    old = await (await client.post("/?A2A-Version=0.3", json=body)).json()
    assert old["error"]["code"] == -32009


async def test_version_error_answers_every_batch_member(client: Any) -> None:
    body = [envelope("GetTask", {"id": "x"}, 1), envelope("NoSuch", {}, 2)]
    got = await answer(client, body, headers={"A2A-Version": "0.3"})
    assert [(a["id"], a["error"]["code"]) for a in got] == [(1, -32009), (2, -32009)]


# -- extensions (spec 3.3.4) ----------------------------------------------------------------------


async def test_required_extension_must_be_declared(aiohttp_client: Any) -> None:
    agent = ScriptedAgent()
    card = make_card(required_extension="https://ext.example/geo/v1")
    client = await aiohttp_client(create_app(card, agent))
    err = await error(client, "SendMessage", send_params("echo"))
    assert err["code"] == -32008
    assert reason(err) == "EXTENSION_SUPPORT_REQUIRED"
    header = {"A2A-Extensions": "https://other.example/x , https://ext.example/geo/v1"}
    assert "task" in await result(client, "SendMessage", send_params("echo"), headers=header)
    assert agent.contexts[-1].requested_extensions == (
        "https://other.example/x",
        "https://ext.example/geo/v1",
    )


async def test_raw_answer_shapes(client: Any) -> None:
    got = await rpc(client, "GetTask", {"id": "x"})
    assert set(got) == {"jsonrpc", "id", "error"}
    assert got["error"]["data"][0]["metadata"] == {"taskId": "x"}
