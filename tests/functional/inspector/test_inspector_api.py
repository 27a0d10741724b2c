"""The page's API over plain HTTP (no browser): calls, streams on the live channel, and a
subscription that survives the agent's process dying and coming back."""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_support import ServerProcess, environment, free_port, write_config
from inspector_support import Inspector, http

from a2a_wire._protocol.sse import SSEDecoder, SSEEvent

pytestmark = pytest.mark.timeout(90)

Item = tuple[str, dict[str, Any]]


class Live:
    """The inspector's live channel, read one SSE event at a time."""

    def __init__(self, inspector: Inspector) -> None:
        self.response = urllib.request.urlopen(inspector.url + "api/live", timeout=60)
        self.decoder = SSEDecoder()
        self.pending: deque[SSEEvent] = deque()

    def next(self) -> Item:
        while not self.pending:
            chunk = self.response.read1(65536)
            assert chunk, "the live channel closed"
            self.pending.extend(self.decoder.feed(chunk))
        event = self.pending.popleft()
        return event.event or "", json.loads(event.data)

    def until(self, wanted: Callable[[str, dict[str, Any]], bool]) -> list[Item]:
        items = []
        while True:
            kind, item = self.next()
            items.append((kind, item))
            if wanted(kind, item):
                return items

    def close(self) -> None:
        self.response.close()


@pytest.fixture
def live(inspector: Inspector) -> Iterator[Live]:
    channel = Live(inspector)
    try:
        channel.until(lambda kind, _: kind == "ready")
        yield channel
    finally:
        channel.close()


def post(inspector: Inspector, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    status, raw = http(
        inspector.url + "api/" + path,
        method="POST",
        headers={"Content-Type": "application/json"},
        body=json.dumps(body).encode(),
    )
    return status, json.loads(raw)


def message(text: str, skill: str = "", **fields: Any) -> dict[str, Any]:
    sent = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    if skill:
        sent["metadata"] = {"skillId": skill}
    return sent | fields


def stream_end(stream_id: str) -> Callable[[str, dict[str, Any]], bool]:
    return lambda kind, item: kind == "stream-end" and item["streamId"] == stream_id


def test_calls_and_streams(inspector: Inspector, agent: ServerProcess, live: Live) -> None:
    status, view = post(inspector, "connect", {"url": agent.url})
    assert status == 200 and view["interface"]["url"] == agent.url + "/"
    params = {"message": message("abcdefgh")}
    status, started = post(
        inspector, "stream", {"method": "SendStreamingMessage", "params": params, "streamId": "a"}
    )
    assert status == 200 and started["streamId"] == "a"
    items = live.until(stream_end("a"))
    events = [item["event"] for kind, item in items if kind == "stream"]
    assert list(events[0]) == ["task"] and "artifactUpdate" in events[2]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    end = {"streamId": "a", "error": None, "stopped": False, "resubscribes": 0}
    assert items[-1][1] == end | {"turnEnded": False}
    traffic = [item for kind, item in items if kind == "traffic"]
    streamed = [r["kind"] for r in traffic if r["rpc"] == "SendStreamingMessage"]
    assert streamed[:2] == ["request", "response"] and streamed[-1] == "end"
    assert streamed.count("event") == len(events)
    (request,) = [
        r for r in traffic if r["kind"] == "request" and r["rpc"] == "SendStreamingMessage"
    ]
    assert request["traceId"] == started["traceId"]  # the trace of the stream's request
    status, page = post(inspector, "call", {"method": "ListTasks", "params": {"pageSize": 1}})
    assert status == 200 and len(page["result"]["tasks"]) == 1
    assert page["traceId"] not in (None, started["traceId"])  # a trace per operation


@pytest.mark.parametrize(
    ("path", "body", "text"),
    [
        ("call", {"method": "SendStreamingMessage"}, "is not a method this endpoint calls"),
        ("stream", {"method": "GetTask", "streamId": "x"}, "is not a method this endpoint calls"),
        ("call", {"method": "Nope"}, "is not a method"),
        ("call", {"method": "GetTask", "params": {"id": 5}}, "params id:"),
        ("stream", {"method": "SubscribeToTask", "params": {"id": "t"}}, "give a new streamId"),
        ("connect", {"url": "ftp://x"}, "give the agent's http(s) URL"),
        ("push", {}, "give the task id"),
    ],
)
def test_bad_requests_say_why(
    inspector: Inspector, agent: ServerProcess, path: str, body: Any, text: str
) -> None:
    post(inspector, "connect", {"url": agent.url})
    status, answer = post(inspector, path, body)
    assert status == 400 and text in answer["error"]["message"], answer


def test_agent_errors_are_answers(inspector: Inspector, agent: ServerProcess) -> None:
    post(inspector, "connect", {"url": agent.url})
    status, answer = post(inspector, "call", {"method": "GetTask", "params": {"id": "none"}})
    assert status == 200 and answer["error"]["name"] == "TaskNotFoundError"
    assert answer["error"]["code"] == -32001


DURABLE = """
[server]
host = "127.0.0.1"
port = {port}
data_dir = "{data}"
shutdown_grace_seconds = 1.0

[[skills]]
id = "hold"
executor = "inspector_agents:Hold"
options = {{ gate_dir = "{data}" }}
"""


@pytest.fixture
def durable(tmp_path: Path) -> Iterator[ServerProcess]:
    port = free_port()
    config = write_config(tmp_path / "serve.toml", DURABLE, port=port, data=tmp_path)
    server = ServerProcess(["--config", str(config)], tmp_path / "serve.log", port, environment())
    try:
        yield server.start()
    finally:
        server.close()


def test_a_subscription_resumes_after_the_connection_dropped(durable: ServerProcess) -> None:
    inspector = Inspector([]).start()
    live = Live(inspector)
    try:
        live.until(lambda kind, _: kind == "ready")
        post(inspector, "connect", {"url": durable.url})
        config = {"returnImmediately": True}
        sent = {"message": message("held", "hold"), "configuration": config}
        task = post(inspector, "call", {"method": "SendMessage", "params": sent})[1]
        task_id = task["result"]["task"]["id"]
        subscribe = {"method": "SubscribeToTask", "params": {"id": task_id}, "streamId": "r"}
        assert post(inspector, "stream", subscribe)[0] == 200
        live.until(lambda kind, item: kind == "stream" and item["streamId"] == "r")
        assert durable.proc is not None
        durable.proc.kill()  # the connection drops mid-stream
        durable.proc.wait(timeout=10)
        live.until(lambda kind, item: kind == "traffic" and item["kind"] == "end" and item["error"])
        durable.start()  # the same port and data: the task left WORKING is now FAILED
        items = live.until(stream_end("r"))
    finally:
        live.close()
        inspector.close()
    end = items[-1][1]
    assert end["error"] is None and end["resubscribes"] >= 1, end
    last = [item["event"] for kind, item in items if kind == "stream"][-1]
    # The re-subscription carries Last-Event-ID, so the server replays what the drop lost: the
    # recovery's FAILED status update (docs/server.md, "Resuming a stream").
    assert last["statusUpdate"]["taskId"] == task_id
    assert last["statusUpdate"]["status"]["state"] == "TASK_STATE_FAILED"
