"""A task store that is unavailable is an answer a client can retry, never an internal error.

Through the real aiohttp app on 127.0.0.1, with a store whose calls fail on demand
(tests/fault_store.py): a single call gets HTTP 503 with ``Retry-After`` (the server's
``store_retry_after_seconds``) and a -32000 ``STORE_UNAVAILABLE`` body, for every method; in a
batch the error stays an entry of the HTTP 200 array; a stream refused before its first event
gets the same 503; and none of these logs a traceback (one warning per outage is the store's).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from aiohttp import web
from fault_store import ALL, FaultyStore
from push_support import local_settings
from server_support import ScriptedAgent, envelope, make_card, post, result, send_params

from a2a_wire.server import ServerSettings, create_app

HOOK = "http://127.0.0.1:9/hook"
RETRY_AFTER = 3


@pytest.fixture
def store() -> FaultyStore:
    return FaultyStore()


@pytest.fixture
def app(agent: ScriptedAgent, store: FaultyStore) -> web.Application:
    settings = ServerSettings(
        store_retry_after_seconds=RETRY_AFTER, push=local_settings(allow_http=True)
    )
    return create_app(make_card(push=True), agent, store=store, settings=settings)


def assert_unavailable(err: dict[str, Any]) -> None:
    """A -32000 error object whose ErrorInfo says the store is unavailable."""
    assert err["code"] == -32000, err
    (info,) = err["data"]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert (info["reason"], info["domain"]) == ("STORE_UNAVAILABLE", "a2a-wire")
    assert info["metadata"]["retryAfterSeconds"] == str(RETRY_AFTER)


async def unavailable(client: Any, method: str, params: Any, rid: Any = 7) -> dict[str, Any]:
    """Call ``method``; assert HTTP 503 with Retry-After and a JSON-RPC error; the error."""
    response = await post(client, envelope(method, params, rid))
    assert response.status == 503, await response.text()
    assert response.headers["Retry-After"] == str(RETRY_AFTER)
    assert response.content_type == "application/json"
    answer = await response.json()
    assert answer["jsonrpc"] == "2.0" and answer["id"] == rid and "result" not in answer
    assert_unavailable(answer["error"])
    return dict(answer["error"])


def no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    """Nothing logged with an exception attached, and nothing at ERROR."""
    bad = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert bad == [], [r.getMessage() for r in bad]


METHODS = [
    pytest.param("SendMessage", lambda t: send_params("echo"), id="new"),
    pytest.param("SendMessage", lambda t: send_params("more", taskId=t), id="follow-up"),
    pytest.param("GetTask", lambda t: {"id": t}, id="GetTask"),
    pytest.param("ListTasks", lambda t: {}, id="ListTasks"),
    pytest.param("CancelTask", lambda t: {"id": t}, id="CancelTask"),
    pytest.param(
        "CreateTaskPushNotificationConfig", lambda t: {"taskId": t, "url": HOOK}, id="Create"
    ),
    pytest.param("GetTaskPushNotificationConfig", lambda t: {"taskId": t, "id": "c1"}, id="Get"),
    pytest.param("ListTaskPushNotificationConfigs", lambda t: {"taskId": t}, id="List"),
    pytest.param(
        "DeleteTaskPushNotificationConfig", lambda t: {"taskId": t, "id": "c1"}, id="Delete"
    ),
]


@pytest.mark.parametrize(("method", "params"), METHODS)
async def test_each_method_answers_503_while_the_store_is_unavailable(
    client: Any, store: FaultyStore, caplog: pytest.LogCaptureFixture, method: str, params: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    task = (await result(client, "SendMessage", send_params("input")))["task"]
    config = {"taskId": task["id"], "id": "c1", "url": HOOK}
    await result(client, "CreateTaskPushNotificationConfig", config)
    store.failing = ALL
    await unavailable(client, method, params(task["id"]))
    no_traceback(caplog)
    store.failing = frozenset()  # back: the same call works again
    response = await post(client, envelope(method, params(task["id"])))
    assert response.status == 200
    assert "error" not in await response.json() or method == "CancelTask"


async def test_in_a_batch_the_error_stays_inside_the_200_array(
    client: Any, store: FaultyStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    task = (await result(client, "SendMessage", send_params("input")))["task"]
    store.failing = {"list"}
    body = [envelope("GetTask", {"id": task["id"]}, 1), envelope("ListTasks", {}, 2)]
    response = await post(client, body)
    assert response.status == 200 and "Retry-After" not in response.headers
    got, refused = await response.json()
    assert got["id"] == 1 and got["result"]["id"] == task["id"]
    assert refused["id"] == 2
    assert_unavailable(refused["error"])
    no_traceback(caplog)


async def test_a_notification_gets_204_even_when_the_store_is_unavailable(
    client: Any, store: FaultyStore
) -> None:
    store.failing = ALL
    body = {"jsonrpc": "2.0", "method": "ListTasks", "params": {}}
    assert (await post(client, body)).status == 204


async def test_other_errors_keep_http_200(client: Any) -> None:
    response = await post(client, envelope("GetTask", {"id": "nope"}))
    assert response.status == 200
    assert (await response.json())["error"]["code"] == -32001


@pytest.mark.parametrize("method", ["SendStreamingMessage", "SubscribeToTask"])
async def test_a_stream_refused_before_its_first_event_gets_503(
    client: Any, store: FaultyStore, caplog: pytest.LogCaptureFixture, method: str
) -> None:
    caplog.set_level(logging.DEBUG)
    task = (await result(client, "SendMessage", send_params("input")))["task"]
    store.failing = ALL
    params = send_params("echo") if method == "SendStreamingMessage" else {"id": task["id"]}
    await unavailable(client, method, params)
    no_traceback(caplog)


async def test_a_resumed_stream_refused_before_its_first_event_gets_503(
    client: Any, store: FaultyStore
) -> None:
    task = (await result(client, "SendMessage", send_params("input")))["task"]
    store.failing = {"read_events"}
    response = await post(
        client, envelope("SubscribeToTask", {"id": task["id"]}), headers={"Last-Event-ID": "1"}
    )
    assert response.status == 503 and response.headers["Retry-After"] == str(RETRY_AFTER)
    assert_unavailable((await response.json())["error"])
