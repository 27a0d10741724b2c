"""Shared pieces of the push notification tests: a scripted DNS, a recording webhook, settings."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from a2a_wire.client import PushReceiver, create_receiver_app
from a2a_wire.netguard import AddressPolicy
from a2a_wire.server.push import PushSettings
from a2a_wire.types import AuthenticationInfo, StreamResponse

PUBLIC_IP = "93.184.216.34"


class FakeResolver(AbstractResolver):
    """Answers from a script: each lookup of a host takes its next answer (the last repeats).

    An empty answer list stands for a name that does not resolve.
    """

    def __init__(self, script: dict[str, list[list[str]]]) -> None:
        self.script = {host: list(answers) for host, answers in script.items()}
        self.lookups: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.lookups.append(host)
        answers = self.script.get(host)
        if not answers:
            raise OSError(f"{host} does not resolve")
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if not answer:
            raise OSError(f"{host} does not resolve")
        return [
            {
                "hostname": host,
                "host": ip,
                "port": port,
                "family": socket.AF_INET6 if ":" in ip else socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
            for ip in answer
        ]

    async def close(self) -> None:
        pass


def local_settings(**overrides: Any) -> PushSettings:
    """Push settings for webhooks on 127.0.0.1 (allowlisted) with fast retries."""
    values: dict[str, Any] = {
        "allow_http": True,
        "allowlist": AddressPolicy.from_strings(["127.0.0.1"]),
        "backoff_base_seconds": 0.02,
        "backoff_cap_seconds": 0.05,
        "timeout_seconds": 30.0,  # never reached by a webhook that answers, even on a busy machine
    }
    values.update(overrides)
    return PushSettings(**values)


TOKEN = "tok-123"
AUTH = AuthenticationInfo(scheme="Bearer", credentials="sekrit")


class Hook:
    """A real webhook: a :class:`PushReceiver` behind a middleware that records every request.

    ``script`` lists what the first requests get before the receiver sees them: an HTTP status
    (with ``Retry-After: 0`` for 429), ``"drop"`` to close the connection unanswered, or
    ``"hang"`` to answer 503 only once :attr:`released` is set. After the script, requests
    reach the receiver. With :attr:`hold_first` set to an event, the receiver's callback for the
    first event waits for it (the test opens it), so that a delivery is still in the callback
    when the sender gives up on it, whatever the timing.
    """

    def __init__(
        self, *, expected: list[str] | None = None, script: list[Any] | None = None
    ) -> None:
        self.events: list[StreamResponse] = []
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.script = list(script or [])
        self.hold_first: asyncio.Event | None = None
        self.released = asyncio.Event()
        self.receiver = PushReceiver(
            self._on_event,
            token=TOKEN,
            authentication=AUTH,
            expected_task_ids=expected,
        )
        self.app = create_receiver_app(self.receiver)
        self.app.middlewares.append(self._record)

    async def _on_event(self, event: StreamResponse) -> None:
        if self.hold_first is not None:  # the first event only
            gate, self.hold_first = self.hold_first, None
            await gate.wait()
        self.events.append(event)

    @web.middleware
    async def _record(self, request: web.Request, handler: Any) -> web.StreamResponse:
        body = await request.read()
        self.requests.append((dict(request.headers), body))
        if self.script:
            step = self.script.pop(0)
            if step == "drop":
                assert request.transport is not None
                request.transport.close()
                raise asyncio.CancelledError
            if step == "hang":
                await self.released.wait()
                step = 503
            headers = {"Retry-After": "0"} if step == 429 else {}
            return web.Response(status=int(step), headers=headers)
        response: web.StreamResponse = await handler(request)
        return response

    def kinds(self) -> list[str]:
        return [kind(event) for event in self.events]


def kind(event: StreamResponse) -> str:
    """The member an event carries, with the state for status events."""
    if event.task is not None:
        assert event.task.status is not None
        return f"task:{event.task.status.state.value}"
    if event.status_update is not None:
        assert event.status_update.status is not None
        return f"status:{event.status_update.status.state.value}"
    if event.artifact_update is not None:
        return "artifact"
    return "message"


def task_of(event: StreamResponse) -> str:
    """The id of the task an event is about."""
    if event.task is not None:
        return event.task.id
    update = event.status_update or event.artifact_update
    assert update is not None
    return update.task_id


async def wait_until(check: Callable[[], bool], timeout: float = 60.0) -> None:
    """Poll ``check`` every 10 ms until it holds; fail after ``timeout`` seconds (only a failing
    test waits that long: the machine may be busy)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


ECHO_EVENTS = [
    "task:TASK_STATE_SUBMITTED",
    "status:TASK_STATE_WORKING",
    "artifact",
    "status:TASK_STATE_COMPLETED",
]
"""What a webhook sent inline with an ``echo`` message receives."""
