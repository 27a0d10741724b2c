"""Writing a task's events to an aiohttp response as Server-Sent Events (spec 9.4.2, 3.5.2).

Each event is an ``id:`` line (its number in the task's log) and one ``data:`` line wrapping the
logged result bytes, encoded once by the store, in this stream's JSON-RPC envelope. A new task's
response is prepared only when the first event (or a keep-alive) is due, so an error before it
is still a plain JSON answer (:func:`error_answer`). The rules: docs/server.md, "Methods".
"""

from __future__ import annotations

import logging

from aiohttp import web

from a2a_wire import codec
from a2a_wire._protocol import jsonrpc as _jsonrpc
from a2a_wire._protocol import sse as _sse
from a2a_wire._protocol.jsonrpc import RequestId
from a2a_wire._protocol.wire import JSON_MEDIA_TYPE, SSE_MEDIA_TYPE
from a2a_wire.errors import ProtocolError, UnavailableError
from a2a_wire.server._errors import with_retry_after
from a2a_wire.server._report import ERROR_CODES_KEY
from a2a_wire.server._settings import ServerSettings
from a2a_wire.server._subscriber import END, KEEPALIVE, Frame, Item, Subscription
from a2a_wire.server._telemetry import ServerCall

__all__ = ["error_answer", "stream_events"]

log = logging.getLogger("a2a_wire.server")

SSE_HEADERS = {
    "Content-Type": SSE_MEDIA_TYPE,
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}
_KEEPALIVE_FRAME = _sse.encode_comment("keep-alive")


def _open(request: web.Request) -> web.StreamResponse:
    return web.StreamResponse(headers=SSE_HEADERS)


def error_answer(rid: RequestId, exc: ProtocolError) -> web.Response:
    """The plain JSON-RPC answer to a streaming call refused before its first event.

    Args:
        rid: The JSON-RPC request id.
        exc: The error.

    Returns:
        ``application/json``, the error object (its code under ``ERROR_CODES_KEY``): HTTP 200,
        or for an :class:`~a2a_wire.errors.UnavailableError` its 503 and ``Retry-After``.
    """
    body = codec.dumps(_jsonrpc.error(rid, exc))
    unavailable = isinstance(exc, UnavailableError)
    status = exc.http_status if unavailable else 200
    response = web.Response(body=body, status=status, content_type=JSON_MEDIA_TYPE)
    if unavailable:
        for name, value in exc.http_headers():
            response.headers.add(name, value)
    response[ERROR_CODES_KEY] = (exc.code,)
    return response


async def stream_events(
    request: web.Request,
    rid: RequestId,
    subscription: Subscription,
    settings: ServerSettings,
    watch: ServerCall | None = None,
) -> web.StreamResponse:
    """Write a subscription's events until it ends or the client leaves.

    Args:
        request: The HTTP request.
        rid: The JSON-RPC request id, repeated in every event.
        subscription: The open subscription; closed when this returns.
        settings: Its ``keepalive_seconds`` (silence before a keep-alive comment),
            ``stream_outage_seconds`` and ``store_retry_after_seconds``.
        watch: The call's telemetry, told of each event and of the error that ends the stream.

    Returns:
        The finished response.
    """
    prefix = b'{"jsonrpc":"2.0","id":' + codec.dumps(rid) + b',"result":'
    sub = subscription.subscriber
    keepalive, outage = settings.keepalive_seconds, settings.stream_outage_seconds
    retry = settings.store_retry_after_seconds
    try:
        # A new task's stream waits for the agent's first event before it answers, so that a
        # failure before it is a plain answer; any other stream has its first event at hand.
        item: Item | None = await sub.next(keepalive, outage) if sub.awaits_task else sub.ready()
        if isinstance(item, ProtocolError):  # before the first event: a plain answer
            return _refused(rid, with_retry_after(item, retry), watch)
        response = _open(request)
        await response.prepare(request)
        if watch is not None:
            watch.opened()
        ended = False
        while not ended:
            # Events already at hand go out in one write (one syscall, one HTTP chunk); the
            # last write carries the end of the body with it.
            chunks: list[bytes] = []
            while item is not None and not ended:
                if isinstance(item, ProtocolError):  # the error event that ends the stream
                    item = with_retry_after(item, retry)
                    response[ERROR_CODES_KEY] = (item.code,)
                if watch is not None:
                    watch.sent(item)
                frame, ended = _frame(item, prefix, rid)
                chunks.append(frame)
                item = sub.ready()
            if ended:
                await response.write_eof(b"".join(chunks))
            else:
                if chunks:
                    await response.write(b"".join(chunks))
                item = await sub.next(keepalive, outage)
    except ConnectionError:
        log.debug("stream reader left")
    finally:
        subscription.close()
    return response


def _refused(rid: RequestId, exc: ProtocolError, watch: ServerCall | None) -> web.Response:
    if watch is not None:
        watch.failed(exc)
    return error_answer(rid, exc)


def _frame(item: Item, prefix: bytes, rid: RequestId) -> tuple[bytes, bool]:
    """The bytes to send for one subscriber item, and whether the stream ends with it."""
    if type(item) is Frame:
        event = _sse.encode_event(prefix + item.body + b"}")
        return (event if item.seq is None else b"id: %d\n" % item.seq + event), False
    if item is KEEPALIVE:
        return _KEEPALIVE_FRAME, False
    if item is END:
        return b"", True
    assert isinstance(item, ProtocolError)
    return _sse.encode_event(codec.dumps(_jsonrpc.error(rid, item))), True
