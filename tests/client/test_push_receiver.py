"""The webhook receiver (spec 4.3.3, 13.2): credentials, task ids, lenient decoding, duplicates."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from a2a_wire import codec
from a2a_wire.client import DUPLICATE_WINDOW, PushReceiver, create_receiver_app
from a2a_wire.types import AuthenticationInfo, StreamResponse

TOKEN = "tok"
AUTH = AuthenticationInfo(scheme="Bearer", credentials="sekrit")
STATUS = {
    "statusUpdate": {
        "taskId": "t1",
        "contextId": "c1",
        "status": {"state": "TASK_STATE_WORKING"},
    }
}
GOOD = {
    "Content-Type": "application/a2a+json",
    "X-A2A-Notification-Token": TOKEN,
    "Authorization": "Bearer sekrit",
}


class Sink:
    def __init__(self) -> None:
        self.events: list[StreamResponse] = []
        self.fail = 0
        self.gate: asyncio.Event | None = None
        self.entered = asyncio.Event()

    async def __call__(self, event: StreamResponse) -> None:
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            self.fail -= 1
            raise RuntimeError("the application is not ready")
        self.events.append(event)


@pytest.fixture
def sink() -> Sink:
    return Sink()


@pytest.fixture
def receiver(sink: Sink) -> PushReceiver:
    return PushReceiver(sink, token=TOKEN, authentication=AUTH, expected_task_ids=["t1"])


@pytest.fixture
async def hook(aiohttp_client: Any, receiver: PushReceiver) -> Any:
    return await aiohttp_client(create_receiver_app(receiver))


async def post(hook: Any, body: Any = STATUS, **headers: str) -> int:
    sent = {**GOOD, **{k.replace("_", "-"): v for k, v in headers.items()}}
    sent = {k: v for k, v in sent.items() if v != "-"}
    data = body if isinstance(body, bytes) else codec.dumps(body)
    response = await hook.post("/webhook", data=data, headers=sent)
    status: int = response.status
    return status


async def test_a_good_delivery_is_acknowledged_and_handed_over(hook: Any, sink: Sink) -> None:
    assert await post(hook) == 204
    assert [e.to_dict() for e in sink.events] == [STATUS]


@pytest.mark.parametrize(
    "headers",
    [
        {"X-A2A-Notification-Token": "wrong"},
        {"X-A2A-Notification-Token": "-"},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Basic sekrit"},
        {"Authorization": "-"},
    ],
)
async def test_wrong_or_missing_credentials_are_refused(
    hook: Any, sink: Sink, headers: dict[str, str]
) -> None:
    assert await post(hook, **headers) == 401
    assert sink.events == []


async def test_the_auth_scheme_is_case_insensitive(hook: Any, sink: Sink) -> None:
    assert await post(hook, Authorization="bearer sekrit") == 204


async def test_only_expected_tasks_are_accepted(
    hook: Any, sink: Sink, receiver: PushReceiver
) -> None:
    other = {"task": {"id": "t2", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}
    assert await post(hook, other) == 403
    receiver.expect("t2")
    assert await post(hook, other) == 204
    receiver.forget("t1")
    assert await post(hook) == 403
    assert [e.task.id for e in sink.events if e.task] == ["t2"] and len(sink.events) == 1


async def test_any_task_when_asked(aiohttp_client: Any, sink: Sink) -> None:
    hook = await aiohttp_client(create_receiver_app(PushReceiver(sink, expected_task_ids=None)))
    assert await post(hook, X_A2A_Notification_Token="-", Authorization="-") == 204


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"not json", 400),
        ([STATUS], 400),
        ({}, 400),
        ({"other": 1}, 400),
        ({**STATUS, "task": {"id": "t1"}}, 400),
        ({"statusUpdate": {"taskId": 5}}, 400),
    ],
)
async def test_bad_bodies(hook: Any, sink: Sink, body: Any, status: int) -> None:
    assert await post(hook, body) == status
    assert sink.events == []


async def test_wrong_content_type(hook: Any) -> None:
    assert await post(hook, Content_Type="text/plain") == 415


async def test_too_large(aiohttp_client: Any, sink: Sink) -> None:
    small = PushReceiver(sink, expected_task_ids=None, max_body_bytes=50)
    hook = await aiohttp_client(create_receiver_app(small))
    assert await post(hook, {**STATUS, "pad": "x" * 100}) == 413


async def test_unknown_members_are_skipped_and_logged(
    hook: Any, sink: Sink, caplog: pytest.LogCaptureFixture
) -> None:
    body = {**STATUS, "futureMember": {"x": 1}}
    body["statusUpdate"] = {**STATUS["statusUpdate"], "futureField": True}
    with caplog.at_level(logging.INFO, logger="a2a_wire.client.push"):
        assert await post(hook, body) == 204
    assert [e.to_dict() for e in sink.events] == [STATUS]
    assert "futureMember" in caplog.text


async def test_duplicates_are_acknowledged_once(hook: Any, sink: Sink) -> None:
    assert await post(hook, X_A2A_Delivery_Id="d1") == 204
    assert await post(hook, X_A2A_Delivery_Id="d1") == 204
    assert await post(hook, X_A2A_Delivery_Id="d2") == 204
    assert len(sink.events) == 2


async def test_equal_bodies_with_other_ids_are_other_events(hook: Any, sink: Sink) -> None:
    # A task that asks for input twice sends the same WORKING body in each turn.
    assert await post(hook, X_A2A_Delivery_Id="turn-1") == 204
    assert await post(hook, X_A2A_Delivery_Id="turn-2") == 204
    assert [e.to_dict() for e in sink.events] == [STATUS, STATUS]


async def test_without_an_id_every_body_is_handed_on(hook: Any, sink: Sink) -> None:
    for _ in range(3):
        assert await post(hook) == 204  # no X-A2A-Delivery-Id: nothing tells a repeat
    assert len(sink.events) == 3


async def test_an_id_is_remembered_within_the_window(aiohttp_client: Any, sink: Sink) -> None:
    receiver = PushReceiver(
        sink, token=TOKEN, authentication=AUTH, expected_task_ids=["t1"], remember=2
    )
    hook = await aiohttp_client(create_receiver_app(receiver))
    for key in ("d1", "d2", "d2", "d3"):
        assert await post(hook, X_A2A_Delivery_Id=key) == 204
    assert len(sink.events) == 3  # d2 twice within the window: once
    assert await post(hook, X_A2A_Delivery_Id="d1") == 204  # d1 has left the window of 2
    assert len(sink.events) == 4
    assert DUPLICATE_WINDOW == PushReceiver(sink)._remember == 10_000


async def test_a_failing_callback_asks_for_a_retry(hook: Any, sink: Sink) -> None:
    sink.fail = 1
    assert await post(hook, X_A2A_Delivery_Id="d1") == 500
    assert await post(hook, X_A2A_Delivery_Id="d1") == 204
    assert len(sink.events) == 1


async def test_a_retry_racing_the_callback_is_told_to_come_back(hook: Any, sink: Sink) -> None:
    sink.gate = asyncio.Event()
    first = asyncio.create_task(post(hook, X_A2A_Delivery_Id="d1"))
    await asyncio.wait_for(sink.entered.wait(), 60)  # the first delivery is in the callback now
    response = await hook.post(
        "/webhook", data=codec.dumps(STATUS), headers={**GOOD, "X-A2A-Delivery-Id": "d1"}
    )
    assert (response.status, response.headers["Retry-After"]) == (503, "1")
    sink.gate.set()
    assert await first == 204
    assert len(sink.events) == 1
