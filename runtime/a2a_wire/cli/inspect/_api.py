"""The page's API: JSON in, JSON out, every call made by a2a-wire's client.

The routes and the error shape are listed in docs/internals/cli.md. An agent's failure is
answered with HTTP 200, since it is a result worth showing; 400 and 409 are the page's own
mistakes. Each operation that calls the agent runs in a trace of its own and answers its
``traceId`` (:mod:`a2a_wire.cli.inspect._trace`); a stream of a message ends with the agent's
turn (spec 11.7), a subscription follows the task across turns.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from a2a_wire import codec
from a2a_wire.cli.inspect._agent import AgentSession, NotConnectedError
from a2a_wire.cli.inspect._identity import IdentityError
from a2a_wire.cli.inspect._live import LiveHub
from a2a_wire.cli.inspect._trace import operation
from a2a_wire.cli.inspect._traffic import HIDDEN, describe_error
from a2a_wire.client import A2AClient, PushReceiver
from a2a_wire.errors import A2AError
from a2a_wire.methods import (
    METHODS,
    SEND_STREAMING_MESSAGE,
    SUBSCRIBE_TO_TASK,
)
from a2a_wire.types import StreamResponse

__all__ = ["Api", "Streams"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_STREAMING = {SEND_STREAMING_MESSAGE.name, SUBSCRIBE_TO_TASK.name}
#: Re-subscriptions after a drop, 0.5 s apart and doubling: about half a minute in all.
RESUBSCRIBES = 6


class BadRequestError(A2AError):
    """What the page sent cannot be used."""


def _json(value: Any, status: int = 200) -> web.Response:
    return web.Response(body=codec.dumps(value), status=status, content_type="application/json")


async def _body(request: web.Request) -> dict[str, Any]:
    try:
        value = codec.loads(await request.read())
    except codec.JSONSyntaxError as exc:
        raise BadRequestError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadRequestError("send a JSON object")
    return value


def _params(method_name: object, params: object, streaming: bool) -> Any:
    method = METHODS.get(str(method_name))
    if method is None or (method.name in _STREAMING) != streaming:
        raise BadRequestError(f"{method_name!r} is not a method this endpoint calls")
    try:
        return method, method.params.from_dict(params if params is not None else {})
    except codec.DecodeError as exc:
        raise BadRequestError(f"params {exc.path or '(root)'}: {exc.reason}") from None


def _answer(handler: Handler) -> Handler:
    """Turn the errors of a handler into the JSON answers of docs/internals/cli.md."""

    async def wrapper(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except BadRequestError as exc:
            return _json({"error": {"name": "BadRequest", "message": str(exc)}}, 400)
        except IdentityError as exc:
            return _json({"error": describe_error(exc)}, 400)
        except NotConnectedError as exc:
            return _json({"error": describe_error(exc)}, 409)
        except A2AError as exc:
            return _json({"error": describe_error(exc)})

    return wrapper


class Streams:
    """The streams the page follows, each a task stopped on request or at shutdown."""

    def __init__(self, hub: LiveHub) -> None:
        self._hub = hub
        self._running: dict[str, asyncio.Task[None]] = {}

    def start(self, client: A2AClient, method_name: str, params: Any, stream_id: str) -> str:
        """Open the stream and follow it in the background (in the current trace); its id.

        A message's stream ends with the agent's turn (INPUT_REQUIRED or AUTH_REQUIRED, spec
        11.7) even if the agent keeps it open; a subscription follows the task across turns.
        """
        if not stream_id or len(stream_id) > 100 or stream_id in self._running:
            raise BadRequestError("give a new streamId of at most 100 characters")
        first = getattr(client, METHODS[method_name].py_name)(params)
        events = client.resumable(
            first,
            max_resubscribes=RESUBSCRIBES,
            end_of_turn=method_name == SEND_STREAMING_MESSAGE.name,
        )
        work = asyncio.create_task(self._follow(stream_id, events))
        self._running[stream_id] = work
        work.add_done_callback(lambda _: self._running.pop(stream_id, None))
        return stream_id

    async def _follow(self, stream_id: str, events: Any) -> None:
        end: dict[str, Any] = {"streamId": stream_id, "error": None, "stopped": False}
        end["turnEnded"] = False
        try:
            async with events:
                async for event in events:
                    item = {"streamId": stream_id, "event": event.to_dict()}
                    item["resubscribes"] = events.resubscribes
                    self._hub.publish("stream", item)
        except A2AError as exc:
            end["error"] = describe_error(exc)
        except asyncio.CancelledError:
            end["stopped"] = True
            raise
        finally:
            end["resubscribes"] = events.resubscribes
            if events.turn_ended:
                end["turnEnded"] = True
                end["taskId"] = events.task_id
            self._hub.publish("stream-end", end)

    def stop(self, stream_id: str) -> bool:
        """Stop following ``stream_id``; whether it was running."""
        work = self._running.get(stream_id)
        if work is not None:
            work.cancel()
        return work is not None

    async def close(self) -> None:
        """Stop every stream and wait for them to end."""
        running = list(self._running.values())
        for work in running:
            work.cancel()
        await asyncio.gather(*running, return_exceptions=True)


class Api:
    """The routes of docs/internals/cli.md, over one :class:`AgentSession`."""

    def __init__(self, session: AgentSession, hub: LiveHub, *, initial_url: str) -> None:
        self.session = session
        self.hub = hub
        # Accepts only the tasks whose configs the page created, with their token.
        self.receiver = PushReceiver(self.on_push, token=secrets.token_urlsafe(24))
        self.streams = Streams(hub)
        self.initial_url = initial_url
        self.webhook_url = ""

    def routes(self) -> list[web.RouteDef]:
        """The routes, under the token prefix."""
        prefix = "/{token}/api/"
        return [
            web.get(prefix + "state", _answer(self.state)),
            web.post(prefix + "connect", _answer(self.connect)),
            web.post(prefix + "extended", _answer(self.extended)),
            web.post(prefix + "call", _answer(self.call)),
            web.post(prefix + "stream", _answer(self.stream)),
            web.post(prefix + "stop", _answer(self.stop)),
            web.post(prefix + "push", _answer(self.push)),
            web.post(prefix + "identity", _answer(self.identity)),
            web.get(prefix + "live", self.hub.handler),
        ]

    async def close(self) -> None:
        """Stop the streams and close the client (at shutdown)."""
        await self.streams.close()
        await self.session.close()
        self.hub.close()

    async def state(self, request: web.Request) -> web.StreamResponse:
        """What the page needs on load."""
        opts = self.session.opts
        return _json(
            {
                "agent": self.session.view,
                "initialUrl": self.initial_url,
                "webhook": self.webhook_url,
                "identity": self.session.outgoing.identity.summary(),
                "timeout": opts.timeout,
            }
        )

    async def connect(self, request: web.Request) -> web.StreamResponse:
        """Open the agent at ``url``."""
        url = str((await _body(request)).get("url") or "").strip()
        if not url.startswith(("http://", "https://")):
            raise BadRequestError("give the agent's http(s) URL")
        return _json(await self.session.open(url))

    async def extended(self, request: web.Request) -> web.StreamResponse:
        """The extended card of the open agent."""
        with operation() as trace_id:
            extended = await self.session.extended()
        return _json({**extended, "traceId": trace_id})

    async def call(self, request: web.Request) -> web.StreamResponse:
        """One non-streaming operation."""
        body = await _body(request)
        method, params = _params(body.get("method"), body.get("params"), streaming=False)
        calling = getattr(self.session.client, method.py_name)  # 409 before any call
        with operation() as trace_id:
            try:
                result = await calling(params)
            except A2AError as exc:
                return _json({"error": describe_error(exc), "traceId": trace_id})
        shown = result.to_dict() if result is not None else {}
        return _json({"result": shown, "traceId": trace_id})

    async def stream(self, request: web.Request) -> web.StreamResponse:
        """Start following a stream."""
        body = await _body(request)
        method, params = _params(body.get("method"), body.get("params"), streaming=True)
        stream_id = str(body.get("streamId") or "")
        with operation() as trace_id:
            self.streams.start(self.session.client, method.name, params, stream_id)
        return _json({"streamId": stream_id, "traceId": trace_id})

    async def stop(self, request: web.Request) -> web.StreamResponse:
        """Stop following a stream."""
        stream_id = str((await _body(request)).get("streamId") or "")
        return _json({"stopped": self.streams.stop(stream_id)})

    async def push(self, request: web.Request) -> web.StreamResponse:
        """Point a push config of ``taskId`` at the inspector's webhook."""
        task_id = str((await _body(request)).get("taskId") or "").strip()
        if not task_id:
            raise BadRequestError("give the task id")
        client = self.session.client
        self.receiver.expect(task_id)
        config = self.receiver.config(task_id, self.webhook_url)
        with operation() as trace_id:
            stored = await client.create_task_push_notification_config(config)
        shown = stored.to_dict()
        if shown.get("token"):
            shown["token"] = HIDDEN
        return _json({"result": shown, "traceId": trace_id})

    async def identity(self, request: web.Request) -> web.StreamResponse:
        """Pick a security scheme of the card (or the command line's credential again)."""
        return _json({"identity": await self.session.use(await _body(request))})

    async def on_push(self, event: StreamResponse) -> None:
        """The receiver's callback: show the notification on the page."""
        self.hub.publish("push", {"event": event.to_dict()})
