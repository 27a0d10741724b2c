"""The traffic recorder (no browser): records in order, SSE events as they are framed, secrets
hidden from headers, bodies and ``curl`` lines, and the kept records bounded."""

from __future__ import annotations

import json
import shlex
from typing import Any

from a2a_wire.cli.inspect._identity import Identity
from a2a_wire.cli.inspect._outgoing import Outgoing
from a2a_wire.cli.inspect._trace import operation, trace_id_of
from a2a_wire.cli.inspect._traffic import HIDDEN, TrafficLog, curl_command
from a2a_wire.client import ConnectError, CredentialRequest, HeaderScheme, StaticCredentials

SECRET = "s3cret-value"


def recorder(**options: Any) -> tuple[TrafficLog, list[dict[str, Any]]]:
    published: list[dict[str, Any]] = []
    log = TrafficLog(lambda kind, record: published.append(record), **options)
    return log, published


def rpc(method: str, params: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).encode()


def test_a_call_is_a_request_and_a_response_with_secrets_hidden() -> None:
    log, published = recorder(secret_headers=["X-Key"])
    headers = {"Authorization": f"Bearer {SECRET}", "X-Key": SECRET, "A2A-Version": "1.0"}
    watch = log.exchange("POST", "http://a/", headers, rpc("GetTask", {"id": "t"}), stream=False)
    watch.response(200, {"Content-Type": "application/json"})
    watch.body(b'{"jsonrpc": "2.0", "id": 7, ')
    watch.body(b'"result": {"id": "t"}}')
    watch.end(None)
    request, response = published
    assert [r["seq"] for r in published] == [1, 2]
    assert (request["kind"], request["rpc"], request["rpcId"]) == ("request", "GetTask", 7)
    assert request["headers"] == [
        ["Authorization", f"Bearer {HIDDEN}"],
        ["X-Key", HIDDEN],
        ["A2A-Version", "1.0"],
    ]
    assert (response["kind"], response["status"], response["rpc"]) == ("response", 200, "GetTask")
    assert response["body"] == {"jsonrpc": "2.0", "id": 7, "result": {"id": "t"}}
    assert response["size"] == 50 and response["error"] is None
    assert SECRET not in json.dumps(published)
    words = shlex.split(request["curl"])
    assert words[:4] == ["curl", "-sS", "-N", "http://a/"]
    assert "Authorization: Bearer $A2A_WIRE_TOKEN" in words and "X-Key: $A2A_WIRE_TOKEN" in words
    assert json.loads(words[words.index("--data-raw") + 1])["method"] == "GetTask"
    assert log.records() == published


def test_push_config_secrets_in_bodies_are_hidden_also_in_curl() -> None:
    log, published = recorder()
    config = {
        "taskId": "t",
        "url": "http://hook/",
        "token": SECRET,
        "authentication": {"scheme": "Bearer", "credentials": SECRET},
    }
    body = rpc("CreateTaskPushNotificationConfig", config)
    log.exchange("POST", "http://a/", {}, body, stream=False).end(ConnectError("refused"))
    request, error = published
    params = request["body"]["params"]
    assert params["token"] == HIDDEN and params["authentication"]["credentials"] == HIDDEN
    assert SECRET not in request["curl"] and HIDDEN in request["curl"]
    assert error["kind"] == "error"
    assert error["error"] == {"name": "ConnectError", "message": "refused"}


def test_a_stream_is_recorded_event_by_event_across_chunks() -> None:
    log, published = recorder()
    watch = log.exchange("POST", "http://a/", {}, rpc("SubscribeToTask", {"id": "t"}), stream=True)
    watch.response(200, {"Content-Type": "text/event-stream"})
    first = b'data: {"jsonrpc":"2.0","id":7,"result":{"task":{"id":"t"}}}\n\n'
    second = b'data: {"jsonrpc":"2.0","id":7,"result":{"statusUpdate":{}}}\r\n\r\n'
    watch.body(first[:10])
    assert [r["kind"] for r in published] == ["request", "response"]
    watch.body(first[10:] + second[:5])
    watch.body(second[5:] + b": keepalive\n\n")
    watch.end(None)
    kinds = [r["kind"] for r in published]
    assert kinds == ["request", "response", "event", "event", "end"]
    assert published[2]["body"]["result"] == {"task": {"id": "t"}}
    assert published[2]["size"] == len(first) - len("data: ") - 2
    assert published[4]["events"] == 2 and published[4]["rpc"] == "SubscribeToTask"


def test_a_stream_answered_with_json_is_one_response() -> None:
    log, published = recorder()
    watch = log.exchange("POST", "http://a/", {}, rpc("SubscribeToTask", {}), stream=True)
    watch.response(200, {"Content-Type": "application/json"})
    watch.body(b'{"jsonrpc": "2.0", "id": 7, "error": {"code": -32001}}')
    watch.end(None)
    assert [r["kind"] for r in published] == ["request", "response"]
    assert published[1]["body"]["error"]["code"] == -32001


def test_text_bodies_are_cut_and_the_card_fetch_is_named() -> None:
    log, published = recorder()
    watch = log.exchange("GET", "http://a/.well-known/agent-card.json", {}, None, stream=False)
    watch.response(200, {"Content-Type": "text/html"})
    watch.body(b"x" * 300_000)
    watch.end(None)
    request, response = published
    assert request["rpc"] == "agent card" and request["body"] is None
    assert request["curl"] == "curl -sS http://a/.well-known/agent-card.json"
    assert response["body"].endswith(" [cut]") and response["size"] == 300_000


def test_only_the_latest_records_are_kept() -> None:
    log, published = recorder(keep=3)
    for _ in range(3):
        log.exchange("GET", "http://a/", {}, None, stream=False).end(None)
    assert len(published) == 6 and [r["seq"] for r in log.records()] == [4, 5, 6]
    assert log.dropped == 3


def test_webhook_deliveries_are_push_records() -> None:
    log, published = recorder()
    headers = {"X-A2A-Notification-Token": SECRET, "Content-Type": "application/json"}
    log.push(headers, b'{"statusUpdate": {"taskId": "t"}}', 204)
    (record,) = published
    assert record["kind"] == "push" and record["status"] == 204
    assert record["headers"][0] == ["X-A2A-Notification-Token", HIDDEN]
    assert record["traceId"] is None
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    log.push({"Traceparent": parent}, b"{}", 204)  # the agent's trace of the task
    assert published[-1]["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736"


async def test_the_credential_headers_are_hidden_whatever_their_name() -> None:
    log, published = recorder()
    identity = Identity(StaticCredentials(SECRET, scheme=HeaderScheme("X-Custom")))
    headers = await Outgoing(identity, log).headers(CredentialRequest("http://a/", "GetTask"))
    assert dict(headers) == {"X-Custom": SECRET}  # outside an operation: no trace context
    log.exchange("POST", "http://a/", headers, b"{}", stream=False).end(None)
    assert published[0]["headers"] == [["X-Custom", HIDDEN]]
    assert published[0]["traceId"] is None


async def test_each_request_of_an_operation_carries_its_trace() -> None:
    log, published = recorder()
    outgoing = Outgoing(Identity(None), log)
    asked = CredentialRequest("http://a/", "GetTask")
    with operation() as trace_id:
        first = await outgoing.headers(asked)
        second = await outgoing.headers(asked)
    with operation() as other:
        third = await outgoing.headers(asked)
    assert trace_id != other and len(trace_id) == 32
    assert [trace_id_of(h["traceparent"]) for h in (first, second, third)] == [
        trace_id,
        trace_id,
        other,
    ]
    assert first["traceparent"].endswith("-01")  # sampled: the agent is asked to record it
    assert first["traceparent"] != second["traceparent"]  # a parent id per request
    log.exchange("POST", "http://a/", first, b"{}", stream=False).end(None)
    assert published[0]["traceId"] == trace_id
    assert ["traceparent", first["traceparent"]] in published[0]["headers"]


def test_only_a_valid_traceparent_names_a_trace() -> None:
    good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert trace_id_of(good) == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert trace_id_of(good.upper()) == "4bf92f3577b34da6a3ce929d0e0e4736"
    for bad in (
        None,
        "",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        "00-zz" + "0" * 30 + "-00f067aa0ba902b7-01",
    ):
        assert trace_id_of(bad) is None, bad


def test_curl_quotes_what_the_shell_would_expand() -> None:
    line = curl_command("POST", "http://a/?x=1&y=2", [["A", "it's"]], '{"t": "$HOME \'q\'"}')
    words = shlex.split(line)
    assert words == [
        "curl",
        "-sS",
        "-N",
        "http://a/?x=1&y=2",
        "-H",
        "A: it's",
        "--data-raw",
        '{"t": "$HOME \'q\'"}',
    ]
