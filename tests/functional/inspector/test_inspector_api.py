"""The page's API over plain HTTP (no browser): calls, streams on the live channel, the end of
an agent's turn on a stream the agent keeps open, a subscription across turns, and one that
survives the agent's process dying and coming back."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_support import OpenAgent, ServerProcess, environment, free_port, write_config
from inspector_support import Background, Inspector, Item, Live, live_channel, message, post

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def live(inspector: Inspector) -> Iterator[Live]:
    with live_channel(inspector) as channel:
        yield channel


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


QUESTION = "What is your name?"


def _status(state: str, text: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {"state": state}
    if text:
        parts = [{"text": text}]
        status["message"] = {"messageId": f"m-{state}", "role": "ROLE_AGENT", "parts": parts}
    return {"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": status}}


def _task(state: str) -> dict[str, Any]:
    return {"task": {"id": "t1", "contextId": "c1", "status": {"state": state}}}


@pytest.fixture
def open_agent(background: Background) -> Iterator[Callable[[OpenAgent], str]]:
    agents: list[OpenAgent] = []

    def start(agent: OpenAgent) -> str:
        agents.append(agent)
        return background.serve(agent.app())

    yield start
    for agent in agents:  # the held handlers end, so their servers stop at once
        background.call(agent.gate.set)


def events_of(items: list[Item], stream_id: str) -> list[dict[str, Any]]:
    return [i["event"] for k, i in items if k == "stream" and i["streamId"] == stream_id]


def states_of(items: list[Item], stream_id: str) -> list[str]:
    """The states of the status updates of a stream, in order."""
    events = events_of(items, stream_id)
    return [e["statusUpdate"]["status"]["state"] for e in events if "statusUpdate" in e]


@pytest.mark.parametrize("state", ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"])
def test_a_message_stream_ends_with_the_turn_though_the_agent_keeps_it_open(
    inspector: Inspector, live: Live, open_agent: Callable[[OpenAgent], str], state: str
) -> None:
    agent = OpenAgent([_task("TASK_STATE_WORKING"), _status(state, QUESTION)])
    post(inspector, "connect", {"url": open_agent(agent)})
    body = {"method": "SendStreamingMessage", "params": {"message": message("hi")}}
    status, started = post(inspector, "stream", body | {"streamId": "turn"})
    assert status == 200
    items = live.until(stream_end("turn"))
    assert not agent.gate.is_set()  # the agent never ended its stream: the inspector did
    end = items[-1][1]
    assert end["turnEnded"] is True and end["taskId"] == "t1" and end["error"] is None
    events = events_of(items, "turn")
    assert events[-1]["statusUpdate"]["status"]["state"] == state
    assert events[-1]["statusUpdate"]["status"]["message"]["parts"] == [{"text": QUESTION}]
    # The agent received the trace the page was told, in a sampled traceparent.
    (received,) = agent.traceparents
    assert re.fullmatch(f"00-{started['traceId']}-[0-9a-f]{{16}}-01", received), received


def test_a_subscription_follows_the_task_across_turns(
    inspector: Inspector,
    live: Live,
    background: Background,
    open_agent: Callable[[OpenAgent], str],
) -> None:
    agent = OpenAgent(
        [_task("TASK_STATE_INPUT_REQUIRED")],
        [_status("TASK_STATE_WORKING"), _status("TASK_STATE_COMPLETED", "done")],
    )
    post(inspector, "connect", {"url": open_agent(agent)})
    body = {"method": "SubscribeToTask", "params": {"id": "t1"}, "streamId": "sub"}
    assert post(inspector, "stream", body)[0] == 200
    live.until(lambda kind, item: kind == "stream" and item["streamId"] == "sub")
    background.call(agent.gate.set)  # the next turn, on the same stream
    items = live.until(stream_end("sub"))
    assert states_of(items, "sub") == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert items[-1][1]["turnEnded"] is False and items[-1][1]["error"] is None


def test_a_follow_up_stream_that_opens_with_an_update_is_read(
    inspector: Inspector,
    live: Live,
    background: Background,
    open_agent: Callable[[OpenAgent], str],
) -> None:
    """a2a-sdk 1.3.0's idiom: the stream of a message naming its task opens with an update."""
    agent = OpenAgent(
        [_status("TASK_STATE_WORKING"), _status("TASK_STATE_COMPLETED", "Hello, Ada!")]
    )
    post(inspector, "connect", {"url": open_agent(agent)})
    background.call(agent.gate.set)  # the agent ends its stream after the task ended
    sent = message("Ada", taskId="t1", contextId="c1")
    body = {"method": "SendStreamingMessage", "params": {"message": sent}, "streamId": "next"}
    assert post(inspector, "stream", body)[0] == 200
    items = live.until(stream_end("next"))
    assert states_of(items, "next") == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert items[-1][1]["error"] is None and items[-1][1]["turnEnded"] is False


def test_without_opentelemetry_each_stream_still_carries_its_trace(
    open_agent: Callable[[OpenAgent], str],
) -> None:
    inspector = Inspector([], without_opentelemetry=True).start()
    try:
        with live_channel(inspector) as live:
            agent = OpenAgent([_task("TASK_STATE_WORKING"), _status("TASK_STATE_INPUT_REQUIRED")])
            post(inspector, "connect", {"url": open_agent(agent)})
            body = {"method": "SendStreamingMessage", "params": {"message": message("hi")}}
            status, started = post(inspector, "stream", body | {"streamId": "bare"})
            assert status == 200
            items = live.until(stream_end("bare"))
    finally:
        inspector.close()
    assert items[-1][1]["turnEnded"] is True
    (received,) = agent.traceparents
    assert re.fullmatch(f"00-{started['traceId']}-[0-9a-f]{{16}}-01", received), received
    (request,) = [
        i
        for k, i in items
        if k == "traffic" and i["rpc"] == "SendStreamingMessage" and i["kind"] == "request"
    ]
    assert request["traceId"] == started["traceId"]
