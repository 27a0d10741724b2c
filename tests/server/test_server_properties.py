"""Property: whatever body is POSTed, the server answers with well-formed JSON-RPC (or 204 for
notifications), with an expected error class, never HTTP 500 or -32603, and keeps serving."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from server_support import V1, make_card, post, result, send_params
from store_support import ServerStores

from a2a_wire import codec
from a2a_wire._protocol.sse import SSEDecoder
from a2a_wire.server import (
    AgentExecutor,
    EventQueue,
    RequestContext,
    ServerSettings,
    TaskUpdater,
    create_app,
)

EXPECTED_CODES = {
    -32700,  # only for bodies that are not JSON
    -32600,
    -32601,
    -32602,
    -32001,
    -32002,
    -32003,
    -32004,
    -32007,
    -32008,
    -32009,
}


class QuickAgent(AgentExecutor):
    """Finishes every task at once, so that no generated call waits."""

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        updater = TaskUpdater(events, context)
        await updater.start_work()
        await updater.add_artifact("ok")
        await updater.complete()


@pytest.fixture
def app(store_for: ServerStores) -> web.Application:
    settings = ServerSettings(max_batch_size=8)
    return create_app(make_card(), QuickAgent(), settings=settings, store=store_for(settings))


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)

VALID = [
    {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": send_params("a")},
    {"jsonrpc": "2.0", "id": "s", "method": "SendStreamingMessage", "params": send_params("b")},
    {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "x", "historyLength": 2}},
    {"jsonrpc": "2.0", "id": 3, "method": "ListTasks", "params": {"pageSize": 10, "status": 3}},
    {"jsonrpc": "2.0", "id": 4, "method": "CancelTask", "params": {"id": "x"}},
    {"jsonrpc": "2.0", "id": 5, "method": "SubscribeToTask", "params": {"id": "x"}},
    {"jsonrpc": "2.0", "id": 6, "method": "GetExtendedAgentCard"},
    {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "ListTaskPushNotificationConfigs",
        "params": {"taskId": "t"},
    },
]

KEYS = st.sampled_from(
    [
        "jsonrpc",
        "id",
        "method",
        "params",
        "message",
        "parts",
        "text",
        "role",
        "messageId",
        "taskId",
        "contextId",
        "configuration",
        "historyLength",
        "returnImmediately",
        "pageSize",
        "pageToken",
        "status",
        "includeArtifacts",
        "metadata",
        "data",
        "raw",
        "url",
    ]
)


@st.composite
def mutated(draw: st.DrawFn) -> Any:
    """A valid request with up to three random changes, mostly inside ``params``."""
    body = copy.deepcopy(draw(st.sampled_from(VALID)))
    for _ in range(draw(st.integers(0, 3))):
        in_params = isinstance(body.get("params"), dict) and draw(st.integers(0, 3)) > 0
        node = body["params"] if in_params else body
        while draw(st.booleans()):
            nested = [k for k, v in node.items() if isinstance(v, dict)]
            if not nested:
                break
            node = node[draw(st.sampled_from(sorted(nested)))]
        action = draw(st.sampled_from(["set", "delete", "add"]))
        if action == "delete" and node:
            node.pop(draw(st.sampled_from(sorted(node))))
        elif action == "set" and node:
            node[draw(st.sampled_from(sorted(node)))] = draw(JSON)
        else:
            node[draw(KEYS)] = draw(JSON)
    return body


BODIES = st.one_of(
    JSON,
    mutated(),
    mutated(),
    mutated(),
    st.lists(mutated(), min_size=1, max_size=4),
    st.lists(mutated() | JSON, min_size=1, max_size=4),
    st.binary(max_size=30),
)
VERSIONS = st.sampled_from(["1.0", "1.0", "1.0", "1.0.3", "0.3", "", "2.1"])


def check_response(obj: Any) -> int | None:
    """Check one response object; return its error code (None for a result)."""
    assert isinstance(obj, dict), obj
    assert obj.get("jsonrpc") == "2.0", obj
    assert "id" in obj, obj
    assert ("result" in obj) != ("error" in obj), obj
    if "result" in obj:
        return None
    err = obj["error"]
    assert type(err["code"]) is int and isinstance(err["message"], str), err
    assert err["code"] in EXPECTED_CODES, err
    return int(err["code"])


async def answer_of(client: Any, body: Any, version: str = "1.0") -> None:
    data = body if isinstance(body, bytes) else codec.dumps(body)
    response = await post(client, data, headers={"A2A-Version": version})
    assert response.status in (200, 204), (response.status, await response.text())
    raw = await response.read()
    if response.status == 204:
        assert raw == b""
        return
    if response.content_type == "text/event-stream":
        events = SSEDecoder().feed(raw)
        assert events
        codes = [check_response(codec.loads(e.data)) for e in events]
        assert all(code is None for code in codes[:-1])
        return
    assert response.content_type == "application/json"
    parsed = codec.loads(raw)
    if isinstance(parsed, list):
        assert 0 < len(parsed) <= len(codec.loads(data))
        for item in parsed:
            check_response(item)
        return
    code = check_response(parsed)
    if code == -32700:
        assert isinstance(body, bytes)


@settings(
    max_examples=150,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    deadline=None,
)
@given(body=BODIES, version=VERSIONS)
async def test_every_body_gets_a_well_formed_answer(client: Any, body: Any, version: str) -> None:
    await answer_of(client, body, version)


async def test_server_still_serves_after_fuzzing(client: Any) -> None:
    for body in (b"\xff", b"[", b"[]", b"[1,2]", b'{"jsonrpc":"2.0","id":1e400}'):
        await answer_of(client, body)
    task = (await result(client, "SendMessage", send_params("after"), headers=V1))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
