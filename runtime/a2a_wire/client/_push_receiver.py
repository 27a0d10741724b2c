"""The client side of push notifications: a webhook receiver for aiohttp, and registration helpers.

:class:`PushReceiver` checks and decodes the POSTs an agent sends to a webhook (spec 4.3.3,
13.2), drops duplicates by ``X-A2A-Delivery-Id``, and hands each event to an async callback.
Only the id identifies an event: two equal bodies are two events (a task that asks for input
twice sends the same WORKING and INPUT_REQUIRED bodies in each turn), so a POST without the
header is always handed on.
The status codes it answers are ours (the spec only asks for a 2xx): docs/client.md
("Receiving push notifications").
"""

from __future__ import annotations

import asyncio
import collections
import functools
import hmac
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Final

from aiohttp import web

from a2a_wire import codec
from a2a_wire._protocol.wire import (
    DELIVERY_ID_HEADER,
    JSON_MEDIA_TYPES,
    PUSH_CONTENT_TYPE,
    TOKEN_HEADER,
)
from a2a_wire.client._telemetry import received
from a2a_wire.telemetry import DEFAULT, Telemetry
from a2a_wire.telemetry._tracing import activated
from a2a_wire.types import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    StreamResponse,
    TaskPushNotificationConfig,
)

if TYPE_CHECKING:
    from a2a_wire.client._client import A2AClient

__all__ = [
    "DUPLICATE_WINDOW",
    "EventCallback",
    "PushReceiver",
    "create_receiver_app",
    "register_webhook",
    "remove_webhook",
    "task_id_of",
]

log = logging.getLogger("a2a_wire.client.push")

EventCallback = Callable[[StreamResponse], Awaitable[None]]
"""What the receiver calls with each new event."""

DUPLICATE_WINDOW: Final = 10_000
"""How many of the latest delivery ids a :class:`PushReceiver` keeps by default (``remember``).
An a2a-wire sender gives up on a delivery after a few minutes of retries; 10,000 ids outlast
that at well over 30 events a second."""

_MEMBERS: Final = frozenset({"task", "message", "statusUpdate", "artifactUpdate"})
_MEMBERS_SNAKE: Final = frozenset({"status_update", "artifact_update"})


def _same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


def task_id_of(event: StreamResponse) -> str:
    """The id of the task an event is about (``""`` for a Message without one)."""
    if event.task is not None:
        return event.task.id
    if event.status_update is not None:
        return event.status_update.task_id
    if event.artifact_update is not None:
        return event.artifact_update.task_id
    return event.message.task_id if event.message is not None else ""


class PushReceiver:
    """Checks, decodes and deduplicates webhook POSTs, and hands the events to ``on_event``.

    Args:
        on_event: Awaited with each new event, in arrival order.
        token: The ``token`` of the configs pointing here; ``""`` checks no token.
        authentication: The ``authentication`` of those configs; ``None`` checks no
            ``Authorization`` header.
        expected_task_ids: Tasks whose events are accepted (add more with :meth:`expect`);
            ``None`` accepts any task, which only suits debugging tools.
        max_body_bytes: Largest body read.
        remember: The duplicate window: how many of the latest delivery ids are kept; a
            repeated ``X-A2A-Delivery-Id`` among them is dropped (:data:`DUPLICATE_WINDOW`).
        telemetry: Where the span of each POST goes (a child of the sender's span, whose
            ``traceparent`` the POST carries; ``on_event`` runs inside it); global providers
            when omitted.
    """

    def __init__(
        self,
        on_event: EventCallback,
        *,
        token: str = "",
        authentication: AuthenticationInfo | None = None,
        expected_task_ids: Iterable[str] | None = (),
        max_body_bytes: int = 10 * 1024 * 1024,
        remember: int = DUPLICATE_WINDOW,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.on_event = on_event
        self.telemetry = telemetry if telemetry is not None else DEFAULT
        self.token = token
        self.authentication = authentication
        self.expected_task_ids = None if expected_task_ids is None else set(expected_task_ids)
        self.max_body_bytes = max_body_bytes
        self._remember = remember
        self._seen: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._working: dict[str, asyncio.Future[None]] = {}
        self._unnamed: set[asyncio.Future[None]] = set()  # callbacks of POSTs without an id

    def expect(self, task_id: str) -> None:
        """Accept events of ``task_id`` from now on."""
        if self.expected_task_ids is not None:
            self.expected_task_ids.add(task_id)

    def forget(self, task_id: str) -> None:
        """Refuse events of ``task_id`` from now on."""
        if self.expected_task_ids is not None:
            self.expected_task_ids.discard(task_id)

    def config(self, task_id: str, url: str, config_id: str = "") -> TaskPushNotificationConfig:
        """A push config for ``task_id`` pointing at ``url`` with this receiver's secrets."""
        return TaskPushNotificationConfig(
            id=config_id,
            task_id=task_id,
            url=url,
            token=self.token,
            authentication=self.authentication,
        )

    def _authorized(self, request: web.Request) -> bool:
        if self.token and not _same(request.headers.get(TOKEN_HEADER), self.token):
            return False
        auth = self.authentication
        if auth is None:
            return True
        scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
        return scheme.lower() == auth.scheme.lower() and _same(credentials, auth.credentials)

    def _decode(self, body: bytes) -> StreamResponse | None:
        try:
            obj = codec.loads(body)
        except codec.JSONSyntaxError:
            return None
        if not isinstance(obj, dict):
            return None
        unknown = sorted(str(key)[:100] for key in obj if key not in _MEMBERS | _MEMBERS_SNAKE)
        if unknown:
            log.info("webhook body: skipped unknown members %s", ", ".join(unknown))
        try:
            event = StreamResponse.from_dict(obj)
        except codec.DecodeError as exc:
            log.info("webhook body does not decode: %s", exc)
            return None
        members = (event.task, event.message, event.status_update, event.artifact_update)
        return event if sum(m is not None for m in members) == 1 else None

    async def handler(self, request: web.Request) -> web.StreamResponse:
        """The aiohttp handler for POSTs to the webhook (docs/client.md)."""
        if not self._authorized(request):
            return web.Response(status=401, text="missing or wrong credentials")
        if request.content_type not in JSON_MEDIA_TYPES:  # PUSH_CONTENT_TYPE is one of them
            return web.Response(status=415, text=f"send {PUSH_CONTENT_TYPE}")
        if (request.content_length or 0) > self.max_body_bytes:
            return web.Response(status=413)
        body = await request.read()  # the app's client_max_size bounds it as well
        if len(body) > self.max_body_bytes:
            return web.Response(status=413)
        event = self._decode(body)
        if event is None:
            return web.Response(status=400, text="not a StreamResponse")
        task_id = task_id_of(event)
        if self.expected_task_ids is not None and task_id not in self.expected_task_ids:
            log.warning("webhook event for unexpected task %r refused", task_id[:100])
            return web.Response(status=403, text="unexpected task")
        key = request.headers.get(DELIVERY_ID_HEADER) or None  # no id: every body is new
        if key is not None and key in self._seen:
            return web.Response(status=204)
        if key is not None and key in self._working:
            return web.Response(status=503, headers={"Retry-After": "1"})
        record = received(self.telemetry, request.headers, event)
        if record is None:
            return await self._deliver(key, event)
        try:
            with activated(record):  # the callback's task copies the span's context
                response = await self._deliver(key, event)
            if response.status >= 500:  # the callback raised: the sender will retry
                record.fail_because(str(response.status))
            return response
        finally:
            record.end()

    async def _deliver(self, key: str | None, event: StreamResponse) -> web.StreamResponse:
        work = asyncio.ensure_future(self.on_event(event))
        if key is not None:
            self._working[key] = work
            work.add_done_callback(functools.partial(self._settled, key))
        else:
            self._unnamed.add(work)
            work.add_done_callback(self._unnamed.discard)
            work.add_done_callback(self._log_failure)
        try:
            await asyncio.shield(work)
        except Exception:  # the application's callback is a boundary: the sender retries
            return web.Response(status=500)
        return web.Response(status=204)

    def _log_failure(self, work: asyncio.Future[None]) -> bool:
        """Log a callback that raised; whether it ran to its end without raising."""
        if work.cancelled():
            return False
        if (exc := work.exception()) is not None:
            log.error(
                "webhook callback failed; answered 500 so that the sender retries", exc_info=exc
            )
            return False
        return True

    def _settled(self, key: str, work: asyncio.Future[None]) -> None:
        del self._working[key]
        if not self._log_failure(work):
            return
        self._seen[key] = None
        while len(self._seen) > self._remember:
            self._seen.popitem(last=False)

    async def close(self) -> None:
        """Cancel the callbacks still running (their deliveries will be sent again)."""
        running = [*self._working.values(), *self._unnamed]
        for work in running:
            work.cancel()
        await asyncio.gather(*running, return_exceptions=True)


def create_receiver_app(receiver: PushReceiver, path: str = "/webhook") -> web.Application:
    """A small aiohttp application serving ``receiver`` at ``POST <path>``.

    Args:
        receiver: The receiver.
        path: The webhook path.

    Returns:
        The application, for ``web.run_app`` or a test server.
    """
    app = web.Application(client_max_size=receiver.max_body_bytes + 1024)
    app.router.add_post(path, receiver.handler)

    async def close(app: web.Application) -> None:
        await receiver.close()

    app.on_cleanup.append(close)
    return app


async def register_webhook(
    client: A2AClient,
    task_id: str,
    url: str,
    *,
    receiver: PushReceiver | None = None,
    token: str = "",
    authentication: AuthenticationInfo | None = None,
    config_id: str = "",
) -> TaskPushNotificationConfig:
    """Register ``url`` as a webhook of a task (CreateTaskPushNotificationConfig, spec 3.1.7).

    Args:
        client: The client of the agent running the task.
        task_id: The task.
        url: Where the agent POSTs the events.
        receiver: A receiver serving ``url``: its token and authentication are used, and it is
            told to expect the task's events.
        token: The token, when no receiver is given.
        authentication: The authentication, when no receiver is given.
        config_id: The config's id; the agent makes one when empty.

    Returns:
        The config as the agent answered (with its ``id``); an a2a-wire agent leaves out the
        ``token`` and ``authentication.credentials`` it stored (spec 13.2).

    Raises:
        PushNotificationNotSupportedError: the agent does not support push notifications.
        TaskNotFoundError: the task is unknown.
        InvalidParamsError: the agent refused the URL or a header value.
    """
    if receiver is not None:
        config = receiver.config(task_id, url, config_id)
        receiver.expect(task_id)
    else:
        config = TaskPushNotificationConfig(
            id=config_id, task_id=task_id, url=url, token=token, authentication=authentication
        )
    return await client.create_task_push_notification_config(config)


async def remove_webhook(client: A2AClient, task_id: str, config_id: str) -> None:
    """Remove a webhook (DeleteTaskPushNotificationConfig, spec 3.1.10); repeating is harmless.

    Raises:
        PushNotificationNotSupportedError: the agent does not support push notifications.
        TaskNotFoundError: the task is unknown.
    """
    request = DeleteTaskPushNotificationConfigRequest(task_id=task_id, id=config_id)
    await client.delete_task_push_notification_config(request)
