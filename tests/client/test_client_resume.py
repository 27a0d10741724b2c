"""Resuming streams: SSE ids remembered, ``Last-Event-ID`` on every reconnect, no gap, no duplicate.

The fake agent serves one task's event log (SSE ids 1..N, as a2a-wire numbers a task's events)
a few events per connection, then drops the connection. Its SubscribeToTask either honours
``Last-Event-ID`` (the events after it), replays the last one again, or ignores the header (a
fresh Task snapshot first, as spec 3.1.6 says and as a server without resumption does). The
consumer must see every event of the log once, in order, or (after a snapshot) a sequence whose
fold is the same task.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import pytest
from aiohttp import web
from client_fake import LOCAL, FakeAgent, artifact_update, sse, status_update

from a2a_wire import codec, errors
from a2a_wire.client import (
    A2AClient,
    ClientSettings,
    IncompleteStreamError,
    Resubscription,
    TransportError,
)
from a2a_wire.types import StreamResponse, SubscribeToTaskRequest, TaskState

Body = dict[str, Any]
CHUNKS = [f"c{i}" for i in range(10)]


def chunk(i: int) -> Body:
    event = artifact_update(CHUNKS[i])
    if i > 0:
        event["artifactUpdate"]["append"] = True
    return event


#: The task's log: event i + 1 has SSE id i + 1 (1: the task as created, last: COMPLETED).
LOG: list[Body] = [
    {"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_SUBMITTED"}}},
    status_update("TASK_STATE_WORKING"),
    *(chunk(i) for i in range(len(CHUNKS))),
    status_update("TASK_STATE_COMPLETED"),
]


def fold(events: Sequence[Body]) -> Body:
    """The task the events describe (a Task replaces, chunks append, statuses set the state)."""
    task: Body = {}
    for event in events:
        if "task" in event:
            task = json.loads(json.dumps(event["task"]))
        elif "statusUpdate" in event:
            task["status"] = {"state": event["statusUpdate"]["status"]["state"]}
        else:
            update = event["artifactUpdate"]
            artifact = task.setdefault("artifacts", [{"artifactId": "a1", "parts": []}])[0]
            if not update.get("append"):
                artifact["parts"] = []
            artifact["parts"] += update["artifact"]["parts"]
    task["status"] = {"state": task["status"]["state"]}
    return task


def snapshot(through: int) -> Body:
    """The Task as of event ``through`` (what a server without resumption sends first)."""
    return {"task": fold(LOG[:through])}


def frame(rid: Any, result: Body, event_id: int | None) -> bytes:
    data = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result})
    head = "" if event_id is None else f"id: {event_id}\n"
    return f"{head}data: {data}\n\n".encode()


class LogAgent:
    """SendStreamingMessage and SubscribeToTask over :data:`LOG`, ``per_connection`` at a time.

    Args:
        agent: The fake agent to script.
        mode: ``honour`` (events after Last-Event-ID), ``replay-last`` (from Last-Event-ID
            itself), ``ignore`` (a Task snapshot first, then the events after it) or ``no-ids``
            (an old server: no ids at all, snapshot first).
        per_connection: Events sent before the connection is dropped.
        cut_mid_event: Also send half of the next event before dropping.
        clean_close: End the response properly instead of cutting the connection.
    """

    def __init__(
        self,
        agent: FakeAgent,
        mode: str,
        *,
        per_connection: int = 3,
        cut_mid_event: bool = False,
        clean_close: bool = False,
    ) -> None:
        self.mode = mode
        self.per_connection = per_connection
        self.cut_mid_event = cut_mid_event
        self.clean_close = clean_close
        self.sent = 0  # how far the "live" task has got: a snapshot covers this much
        self.headers: list[str | None] = []
        agent.on("SendStreamingMessage", self._send)
        agent.on("SubscribeToTask", self._subscribe)

    async def _send(self, request: web.Request, body: Body) -> web.StreamResponse:
        self.headers.append(request.headers.get("Last-Event-ID"))
        return await self._serve(request, body, [(i + 1, LOG[i]) for i in range(len(LOG))])

    async def _subscribe(self, request: web.Request, body: Body) -> web.StreamResponse:
        header = request.headers.get("Last-Event-ID")
        self.headers.append(header)
        after = int(header) if header is not None else None
        if self.mode == "honour" and after is not None:
            items = [(i + 1, LOG[i]) for i in range(after, len(LOG))]
        elif self.mode == "replay-last" and after is not None:
            items = [(i + 1, LOG[i]) for i in range(after - 1, len(LOG))]
        else:  # a snapshot first: the task has moved on a little since the drop
            through = min(self.sent + 1, len(LOG))
            items = [(through, snapshot(through))]
            items += [(i + 1, LOG[i]) for i in range(through, len(LOG))]
        return await self._serve(request, body, items)

    async def _serve(
        self, request: web.Request, body: Body, items: list[tuple[int, Body]]
    ) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        ids = self.mode != "no-ids"
        for seq, result in items[: self.per_connection]:
            await resp.write(frame(body["id"], result, seq if ids else None))
            self.sent = max(self.sent, seq)
        rest = items[self.per_connection :]
        if not rest:
            await resp.write_eof()
            return resp
        if self.cut_mid_event:
            seq, result = rest[0]
            whole = frame(body["id"], result, seq if ids else None)
            await resp.write(whole[: len(whole) // 2])
        if self.clean_close:
            await resp.write_eof()
        else:
            assert request.transport is not None
            request.transport.close()
        return resp


def as_json(event: StreamResponse) -> Body:
    return json.loads(codec.encode(event))


async def consume(client: A2AClient) -> tuple[list[Body], list[str | None]]:
    """Follow a resumable SendStreamingMessage; the events and the last event id after each."""
    stream = client.resumable(
        client.send_streaming_message(A2AClient.text_request("go")),
        max_resubscribes=len(LOG),
        retry_delay=0,
    )
    events: list[Body] = []
    ids: list[str | None] = []
    async with stream:
        async for event in stream:
            events.append(as_json(event))
            ids.append(stream.last_event_id)
    assert stream.state is TaskState.COMPLETED
    return events, ids


def test_the_log_folds_to_the_finished_task() -> None:
    task = fold(LOG)
    assert task["status"] == {"state": "TASK_STATE_COMPLETED"}
    assert [p["text"] for p in task["artifacts"][0]["parts"]] == CHUNKS


@pytest.mark.parametrize(
    "cut",
    [
        {},
        {"cut_mid_event": True},
        {"clean_close": True},
        {"per_connection": 1},
    ],
    ids=["connection-cut", "cut-mid-event", "clean-close", "one-per-connection"],
)
async def test_every_reconnect_sends_last_event_id_and_nothing_is_lost_or_repeated(
    client: A2AClient, agent: FakeAgent, cut: dict[str, Any]
) -> None:
    server = LogAgent(agent, "honour", **cut)
    events, ids = await consume(client)
    assert events == LOG  # each event once, in order, none missing
    assert ids == [str(i + 1) for i in range(len(LOG))]
    # The first call has no header; every reconnect names the last event the caller got.
    subscribes = [r for r in agent.requests if r.method == "SubscribeToTask"]
    assert server.headers[0] is None
    per = cut.get("per_connection", 3)
    expected = [str(n) for n in range(per, len(LOG), per)]
    assert server.headers[1:] == expected
    assert [r.params for r in subscribes] == [{"tenant": "acme", "id": "t1"}] * len(expected)


async def test_a_replayed_event_is_not_surfaced_twice(client: A2AClient, agent: FakeAgent) -> None:
    LogAgent(agent, "replay-last")
    events, ids = await consume(client)
    assert events == LOG
    assert ids == [str(i + 1) for i in range(len(LOG))]


async def test_a_server_that_ignores_the_header_restarts_from_a_snapshot(
    client: A2AClient, agent: FakeAgent
) -> None:
    server = LogAgent(agent, "ignore")
    events, ids = await consume(client)
    # The header went out, the server answered as spec 3.1.6 says: a Task first, which
    # replaces what the caller built; what follows applies to it, so the fold is the task.
    assert server.headers[1:] and all(h is not None for h in server.headers[1:])
    assert "task" in events[3]
    assert fold(events) == fold(LOG)
    assert ids[-1] == str(len(LOG))
    # The snapshot's own id counts: the next reconnect resumes after it.
    assert server.headers[2] == ids[5]


async def test_an_old_server_without_ids_gets_no_header_and_works_as_before(
    client: A2AClient, agent: FakeAgent
) -> None:
    server = LogAgent(agent, "no-ids")
    events, ids = await consume(client)
    assert server.headers == [None] * len(server.headers) and len(server.headers) > 2
    assert all(event_id is None for event_id in ids)
    assert fold(events) == fold(LOG)
    # Each re-subscription starts with the snapshot, as before resumption existed.
    assert sum("task" in event for event in events) == len(server.headers)


async def test_subscribe_to_task_resumes_after_a_given_event_id(
    client: A2AClient, agent: FakeAgent
) -> None:
    server = LogAgent(agent, "honour", per_connection=len(LOG))
    request = SubscribeToTaskRequest(id="t1")
    async with client.subscribe_to_task(request, last_event_id="5") as stream:
        events = [as_json(event) async for event in stream]
        assert stream.last_event_id == str(len(LOG)) and stream.task_id == "t1"
    assert server.headers == ["5"]
    assert events == LOG[5:]  # starts with an update: it continues the caller's earlier stream


async def test_a_resumed_stream_still_checks_its_task(client: A2AClient, agent: FakeAgent) -> None:
    async def other_task(request: web.Request, body: Body) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(frame(body["id"], status_update("TASK_STATE_WORKING", "t2"), 6))
        await resp.write_eof()
        return resp

    agent.on("SubscribeToTask", other_task)
    request = SubscribeToTaskRequest(id="t1")
    with pytest.raises(errors.InvalidAgentResponseError, match="for task 't2' in the stream"):
        async with client.subscribe_to_task(request, last_event_id="5") as stream:
            _ = [event async for event in stream]


async def test_without_last_event_id_an_update_of_another_task_first_is_still_invalid(
    client: A2AClient, agent: FakeAgent
) -> None:
    # An update of the task subscribed to is read with a warning (docs/prose-and-proto.md, 51).
    request = SubscribeToTaskRequest(id="t1")
    agent.stream("SubscribeToTask", [status_update("TASK_STATE_WORKING", "t2")])
    with pytest.raises(errors.InvalidAgentResponseError, match="not a Task or Message"):
        async with client.subscribe_to_task(request) as stream:
            _ = [event async for event in stream]


def _held_stream(agent: FakeAgent, first: list[Body], after: list[Body]) -> dict[str, bool]:
    """SendStreamingMessage answered with ``first``, held open on ``agent.release``, then ``after``."""
    seen = {"held": False, "finished": False}

    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for result in first:
            await resp.write(sse({"jsonrpc": "2.0", "id": body["id"], "result": result}))
        seen["held"] = True
        await agent.release.wait()  # the agent keeps its stream open after asking
        for result in after:
            await resp.write(sse({"jsonrpc": "2.0", "id": body["id"], "result": result}))
        seen["finished"] = True
        return resp

    agent.on("SendStreamingMessage", handler)
    return seen


@pytest.mark.parametrize("state", ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"])
async def test_the_turn_ends_at_an_interrupted_state_on_an_open_stream(
    client: A2AClient, agent: FakeAgent, state: str
) -> None:
    asked = [LOG[0], status_update(state)]
    seen = _held_stream(agent, asked, [status_update("TASK_STATE_COMPLETED")])
    stream = client.resumable(client.send_streaming_message(A2AClient.text_request("go")))
    async with stream:
        events = [event async for event in stream]  # returns although the stream is open
    assert [e.which_payload() for e in events] == ["task", "status_update"]
    assert stream.turn_ended and stream.state == TaskState(state)
    assert seen == {"held": True, "finished": False}
    assert stream.resubscribes == 0


async def test_without_end_of_turn_the_next_turn_is_read_on_the_same_stream(
    client: A2AClient, agent: FakeAgent
) -> None:
    asked = [LOG[0], status_update("TASK_STATE_INPUT_REQUIRED")]
    _held_stream(agent, asked, [status_update("TASK_STATE_WORKING"), LOG[-1]])
    stream = client.resumable(
        client.send_streaming_message(A2AClient.text_request("go")), end_of_turn=False
    )
    states = []
    async with stream:
        async for event in stream:
            assert event.task is not None or event.status_update is not None
            states.append(stream.state)
            if stream.state is TaskState.INPUT_REQUIRED:
                agent.release.set()  # the next turn comes on the same stream
    assert states[1:] == [TaskState.INPUT_REQUIRED, TaskState.WORKING, TaskState.COMPLETED]
    assert not stream.turn_ended


def _always_dropping(agent: FakeAgent) -> None:
    """Every stream sends the Task (SSE id 1), then drops: no update ever comes."""

    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        event = codec.dumps({"jsonrpc": "2.0", "id": body["id"], "result": LOG[0]})
        await resp.write(b"id: 1\ndata: " + event + b"\n\n")
        return resp

    agent.on("SendStreamingMessage", handler)
    agent.on("SubscribeToTask", handler)


async def test_the_pauses_back_off_with_jitter_within_the_budget(agent: FakeAgent) -> None:
    # Scaled down: 1 ms doubling to 8 ms, 30 ms of pauses in all, 100 attempts at most.
    settings = dataclasses.replace(
        LOCAL, resume_delay=0.001, resume_max_delay=0.008, resume_budget=0.03, resume_attempts=100
    )
    _always_dropping(agent)
    notices: list[Resubscription] = []
    async with A2AClient(agent.url, settings=settings) as client:
        stream = client.resumable(
            client.send_streaming_message(A2AClient.text_request("go")), on_resume=notices.append
        )
        with pytest.raises(IncompleteStreamError) as caught:
            _ = [event async for event in stream]
    pauses = [n.pause for n in notices]
    steps = [min(0.001 * 2**i, 0.008) for i in range(len(pauses))]
    assert all(step / 2 <= pause <= step for pause, step in zip(pauses, steps, strict=True))
    assert sum(pauses) <= 0.03 < sum(pauses) + 0.008  # it stopped where the next could not fit
    assert [n.attempt for n in notices] == list(range(1, len(notices) + 1))  # Tasks only: in a row
    assert len(set(pauses)) > 1
    note = caught.value.__notes__[0]
    assert note.startswith("gave up re-subscribing to task 't1' (last event id '1') after")
    assert "budget 0.03 s" in note and caught.value.task_id == "t1"


def test_the_default_budget_outlasts_a_restart_of_ten_seconds() -> None:
    settings = ClientSettings()
    steps = [
        min(settings.resume_delay * 2**i, settings.resume_max_delay)
        for i in range(settings.resume_attempts)
    ]
    within: list[float] = []
    for step in steps:  # the longest pauses jitter can draw: the fewest attempts
        if sum(within) + step > settings.resume_budget:
            break
        within.append(step)
    assert (settings.resume_budget, len(within), sum(within)) == (30.0, 6, 23.5)
    assert sum(s / 2 for s in steps[:6]) > 10  # even the shortest draws reach past 10 s


async def test_a_lost_connection_that_outlasts_the_budget_names_the_task(
    agent: FakeAgent,
) -> None:
    agent.stream("SendStreamingMessage", [LOG[0], LOG[1]], cut=True)

    async def hang_up(request: web.Request, body: Body) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.close()  # no answer at all: as from a server that went away
        return web.Response()

    agent.on("SubscribeToTask", hang_up)
    settings = dataclasses.replace(LOCAL, resume_delay=0.001, resume_attempts=2)
    async with A2AClient(agent.url, settings=settings) as client:
        stream = client.resumable(client.send_streaming_message(A2AClient.text_request("go")))
        with pytest.raises(TransportError) as caught:
            _ = [event async for event in stream]
    assert caught.value.task_id == "t1"
    assert "gave up re-subscribing to task 't1' (no event id)" in caught.value.__notes__[0]


async def test_the_task_that_opens_a_follow_up_is_no_end_of_turn(
    client: A2AClient, agent: FakeAgent
) -> None:
    # A follow-up's stream opens with the task as it was before the message: still asking.
    asked = {"task": {**LOG[0]["task"], "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}}
    agent.stream("SendStreamingMessage", [asked, status_update("TASK_STATE_WORKING"), LOG[-1]])
    request = A2AClient.text_request("Ada", task_id="t1")
    stream = client.resumable(client.send_streaming_message(request))
    async with stream:
        events = [event async for event in stream]
    assert len(events) == 3 and stream.state is TaskState.COMPLETED and not stream.turn_ended


@pytest.mark.parametrize("state", ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"])
async def test_a_new_task_that_opens_asking_ends_the_turn(
    client: A2AClient, agent: FakeAgent, state: str
) -> None:
    # A new message's stream whose Task already asks: that Task is this turn's answer.
    asked = {"task": {**LOG[0]["task"], "status": {"state": state}}}
    seen = _held_stream(agent, [asked], [status_update("TASK_STATE_COMPLETED")])
    stream = client.resumable(client.send_streaming_message(A2AClient.text_request("go")))
    async with stream:
        events = [event async for event in stream]  # returns although the stream is open
    assert [e.which_payload() for e in events] == ["task"]
    assert stream.turn_ended and stream.state == TaskState(state)
    assert seen == {"held": True, "finished": False}


async def test_a_task_later_in_a_follow_up_ends_the_turn(
    client: A2AClient, agent: FakeAgent
) -> None:
    # Only the Task that opens a follow-up shows the task before the message; a later one is now.
    before = {"task": {**LOG[0]["task"], "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}}
    again = {"task": {**LOG[0]["task"], "status": {"state": "TASK_STATE_AUTH_REQUIRED"}}}
    first = [before, status_update("TASK_STATE_WORKING"), again]
    seen = _held_stream(agent, first, [status_update("TASK_STATE_COMPLETED")])
    request = A2AClient.text_request("Ada", task_id="t1")
    stream = client.resumable(client.send_streaming_message(request))
    async with stream:
        events = [event async for event in stream]
    assert [e.which_payload() for e in events] == ["task", "status_update", "task"]
    assert stream.turn_ended and stream.state is TaskState.AUTH_REQUIRED
    assert seen == {"held": True, "finished": False}
