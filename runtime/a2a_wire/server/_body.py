"""Reading a request body, and ending the requests whose body was not read (spec 13.4).

:func:`read_body` enforces ``max_body_bytes`` and ``body_timeout_seconds``; :func:`settle` sends
a refusal and disposes of the body it left unread itself, because aiohttp left alone would
linger on it for ten seconds and log a traceback when it fails to decode (docs/internals/server.md).
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import StreamReader, web
from aiohttp.http_exceptions import HttpProcessingError

from a2a_wire.errors import ProtocolError
from a2a_wire.server._errors import BodyTimeoutError, RequestTooLargeError, UnreadableBodyError

__all__ = ["CLIENT_LEFT", "client_left", "read_body", "settle"]

log = logging.getLogger("a2a_wire.server")

CLIENT_LEFT = 499
"""The status recorded for a request whose client hung up before it could be answered."""

_BROKEN = (UnreadableBodyError, BodyTimeoutError)


async def read_body(request: web.Request, limit: int, seconds: float) -> bytes:
    """The whole body of ``request``.

    Args:
        request: The HTTP request.
        limit: ``ServerSettings.max_body_bytes``.
        seconds: ``ServerSettings.body_timeout_seconds``.

    Returns:
        The body bytes (decoded per ``Content-Encoding``).

    Raises:
        RequestTooLargeError: the declared length is over ``limit`` (aiohttp raises its own 413
            when an undeclared length goes over it).
        BodyTimeoutError: the body did not arrive in time.
        UnreadableBodyError: the body does not decode.
        ConnectionResetError: the client hung up while sending it.
    """
    if request.content_length is not None and request.content_length > limit:
        raise RequestTooLargeError(limit)
    try:
        if request.content.is_eof():  # the whole body is in already: nothing to wait for
            return await request.read()
        async with asyncio.timeout(seconds):
            return await request.read()
    except TimeoutError:
        raise BodyTimeoutError(seconds) from None
    except web.RequestPayloadError as exc:
        raise UnreadableBodyError(exc) from exc


def client_left(request: web.Request) -> web.Response:
    """The (unsent) answer to a request whose client hung up: status 499, one debug line."""
    log.debug("client hung up during %s %s", request.method, request.path[:200])
    return web.Response(status=CLIENT_LEFT)


async def settle(
    request: web.Request, response: web.Response, exc: ProtocolError, seconds: float
) -> web.StreamResponse:
    """Send the refusal ``response`` (for ``exc``) and settle the unread body (module doc).

    Args:
        request: The refused request.
        response: Its answer, not yet sent.
        exc: The refusal.
        seconds: ``ServerSettings.body_timeout_seconds``, the time left to drop the body.

    Returns:
        ``response``, sent already unless nothing was left to settle.
    """
    broken = isinstance(exc, _BROKEN)
    if not broken and request.content.is_eof():  # no body, or read whole: aiohttp answers
        return response
    if broken:
        response.force_close()  # says Connection: close
    try:
        await response.prepare(request)
        await response.write_eof()
        ended = not broken and await _discard(request.content, seconds)
    except ConnectionError:
        ended = False
    if not ended:
        log.debug("closing the connection of %s %s: unread body", request.method, request.path)
        request.protocol.force_close()  # the answer is flushed first; aiohttp reads no more
    return response


async def _discard(content: StreamReader, seconds: float) -> bool:
    """Read and drop the rest of a body; whether it ended, decoded, within ``seconds``."""
    try:
        async with asyncio.timeout(seconds):
            while await content.readany():
                pass
    except (TimeoutError, ConnectionError, web.RequestPayloadError, HttpProcessingError):
        return False
    return content.is_eof()
