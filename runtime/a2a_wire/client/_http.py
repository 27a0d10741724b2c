"""The client's HTTP layer: settings, the owned session, and the one exception boundary.

Everything the client sends goes through :class:`Transport`, the only place where aiohttp's
(and asyncio's, and the address guard's) exceptions are translated into the client's errors.
aiohttp enforces only ``connect_timeout``; the other limits are applied here so that they mean
what the settings say (docs/internals/client.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import aiohttp
from multidict import CIMultiDictProxy

from a2a_wire import codec, errors, netguard
from a2a_wire._protocol.wire import JSON_MEDIA_TYPES, SSE_MEDIA_TYPE
from a2a_wire.client._connection import (
    FOREIGN,
    StreamConnection,
    translate,
    translated,
    watching,
)
from a2a_wire.client._errors import (
    AuthenticationError,
    ClientTimeoutError,
    HTTPStatusError,
    ReadTimeoutError,
    RedirectRefusedError,
    ResponseTooLargeError,
    TotalTimeoutError,
    UnexpectedContentTypeError,
    safe_url,
)
from a2a_wire.client._observe import ExchangeObserver, ExchangeWatch
from a2a_wire.client._settings import ClientSettings

__all__ = ["Peek", "RawResponse", "StreamConnection", "Transport", "json_body"]

logger = logging.getLogger("a2a_wire.client")

_PEEK_BYTES = 64 * 1024  # read of an oversized body, to name the task it is about
_LARGE_BODY_BYTES = 1024 * 1024  # aiohttp warns about writing more from bytes in one go

Peek = Callable[[bytes], str]
"""Finds a task id in the first bytes of a body (``""`` when it cannot)."""


@dataclass(frozen=True, slots=True)
class RawResponse:
    """A complete non-streaming HTTP response."""

    status: int
    reason: str
    content_type: str
    headers: CIMultiDictProxy[str]
    body: bytes


def _payload(body: bytes | None) -> bytes | io.BytesIO | None:
    """A large body as a buffer, which aiohttp writes in chunks, yielding to the loop between."""
    return io.BytesIO(body) if body is not None and len(body) > _LARGE_BODY_BYTES else body


def _content_type(response: aiohttp.ClientResponse) -> str:
    return response.content_type if "Content-Type" in response.headers else ""


class Transport:
    """Sends requests for one client (or card resolver) and owns its session unless injected."""

    def __init__(
        self,
        settings: ClientSettings,
        session: aiohttp.ClientSession | None,
        observer: ExchangeObserver | None = None,
    ) -> None:
        self.settings = settings
        self._session = session
        self._owns_session = session is None
        self._closed = False
        self.observer = observer
        self._checked_url = ""  # the last URL check_url accepted (the policy is fixed)
        # aiohttp enforces only the connect limit (the others are ours, see the module docstring).
        connect = settings.connect_timeout
        self._aiohttp_timeout = aiohttp.ClientTimeout(
            total=None, connect=connect, sock_connect=connect, sock_read=None
        )

    def _ensure_session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise RuntimeError("the client is closed")
        if self._session is None:
            connector = netguard.guarded_connector(self.settings.policy)
            self._session = aiohttp.ClientSession(connector=connector, trust_env=False)
        return self._session

    async def close(self) -> None:
        """Close the session if this transport created it."""
        self._closed = True
        if self._owns_session and self._session is not None:
            await self._session.close()
        self._session = None

    def _watch(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None, *, stream: bool
    ) -> ExchangeWatch | None:
        if self.observer is None:
            return None
        return self.observer.exchange(method, url, headers, body, stream=stream)

    async def _start(
        self,
        method: str,
        url: str,
        body: bytes | None,
        headers: Mapping[str, str],
        watch: ExchangeWatch | None,
    ) -> aiohttp.ClientResponse:
        """Send the request and return the response once its headers are in.

        Raises aiohttp's and the guard's exceptions as they are: the caller translates them.
        """
        session = self._ensure_session()
        if url != self._checked_url:  # a client calls one URL: checked once, not per call
            netguard.check_url(url, self.settings.policy)
            self._checked_url = url
        response = await session.request(
            method,
            url,
            data=_payload(body),
            headers=headers,
            allow_redirects=False,
            timeout=self._aiohttp_timeout,
        )
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("%s %s -> HTTP %d", method, safe_url(url), response.status)
        if watch is not None:
            watch.response(response.status, response.headers)
        if 300 <= response.status < 400 and response.status != 304:  # 304 is not a redirect
            location = response.headers.get("Location", "")
            response.close()
            raise RedirectRefusedError(response.status, location)
        return response

    async def _read_body(
        self,
        response: aiohttp.ClientResponse,
        watch: ExchangeWatch | None,
        deadline: _Deadline,
        peek: Peek | None = None,
    ) -> bytes:
        """Read the whole body, at most ``max_response_bytes``, each wait ``read_timeout``.

        Bytes already received are taken without a wait (and without arming a timer). An
        oversized body is abandoned; ``peek`` gets its first bytes (at most 64 KiB) to name the
        task it is about in the error.
        """
        limit = self.settings.max_response_bytes
        declared = response.content_length
        too_large = declared is not None and declared > limit
        cap = min(limit, _PEEK_BYTES) if too_large else limit
        content = response.content
        buf = bytearray()
        while len(buf) <= cap:
            chunk = content.read_nowait()
            if not chunk and not content.is_eof():
                deadline.before_read()
                chunk = await content.readany()
            if not chunk:
                if too_large:  # shorter than declared: still refused, as declared
                    break
                return bytes(buf)
            if watch is not None:
                watch.body(chunk)
            buf += chunk
        task_id = peek(bytes(buf[:_PEEK_BYTES])) if peek is not None else ""
        raise ResponseTooLargeError(
            "max_response_bytes", limit, status=response.status, task_id=task_id
        )

    async def request(
        self,
        method: str,
        url: str,
        body: bytes | None,
        headers: Mapping[str, str],
        *,
        total: tuple[str, float | None] | None = None,
        peek: Peek | None = None,
    ) -> RawResponse:
        """Send one request and read its whole response, under one timer.

        Args:
            method: ``"POST"`` or ``"GET"``.
            url: Absolute URL.
            body: Request body, if any.
            headers: Request headers.
            total: ``(setting name, seconds)`` bounding the exchange; default ``total_timeout``.
            peek: Finds the task id in the beginning of a body too large to read.

        Returns:
            The status, media type, headers and body.

        Raises:
            ClientError: A subclass for each transport failure, limit or redirect.
        """
        setting, seconds = total or ("total_timeout", self.settings.total_timeout)
        deadline = _Deadline(setting, seconds, self.settings.read_timeout)
        watch = self._watch(method, url, headers, body, stream=False)
        with watching(watch):
            try:
                async with deadline.timer:
                    response = await self._start(method, url, body, headers, watch)
                    try:
                        data = await self._read_body(response, watch, deadline, peek)
                    except BaseException:
                        response.close()
                        raise
                    response.release()
            except FOREIGN as exc:  # before TimeoutError: aiohttp's timeouts are both
                raise translate(exc, url, self.settings) from exc
            except TimeoutError as exc:
                raise deadline.expired(url) from exc
        return RawResponse(
            response.status, response.reason or "", _content_type(response), response.headers, data
        )

    async def open_stream(
        self, url: str, body: bytes, headers: Mapping[str, str]
    ) -> StreamConnection | RawResponse:
        """POST and return the open stream, or the whole response if it is not an event stream.

        The wait for the response headers is bounded by ``read_timeout`` (and
        ``stream_timeout``, which runs from here to the stream's end).

        Raises:
            ClientError: A subclass for each transport failure, limit or redirect.
        """
        watch = self._watch("POST", url, headers, body, stream=True)
        loop = asyncio.get_running_loop()
        lifetime = self.settings.stream_timeout
        deadline = None if lifetime is None else loop.time() + lifetime
        read = self.settings.read_timeout
        until = [t for t in (deadline, None if read is None else loop.time() + read) if t]
        with watching(watch, open_ended=True):  # a stream's connection ends it
            try:
                async with asyncio.timeout_at(min(until) if until else None):
                    with translated(url, self.settings):
                        response = await self._start("POST", url, body, headers, watch)
            except TimeoutError as exc:
                if deadline is not None and min(until) == deadline:
                    raise TotalTimeoutError("stream_timeout", lifetime or 0.0, url) from exc
                raise ReadTimeoutError("read_timeout", read or 0.0, url) from exc
        if response.status == 200 and response.content_type == SSE_MEDIA_TYPE:
            return StreamConnection(response, url, self.settings, watch, deadline=deadline)
        rest = _Deadline("total_timeout", self.settings.total_timeout, read)
        with watching(watch):
            try:
                async with rest.timer:
                    with translated(url, self.settings):
                        data = await self._read_body(response, watch, rest)
            except TimeoutError as exc:
                raise rest.expired(url) from exc
            finally:
                response.close()
        return RawResponse(
            response.status, response.reason or "", _content_type(response), response.headers, data
        )


class _Deadline:
    """The one timer of an exchange: its total limit, drawn in to ``read_timeout`` for reads.

    Once the answer started, the only waits are reads of the body; each is bounded by
    ``read_timeout`` from its start, within the total.
    """

    __slots__ = ("_read", "_seconds", "_setting", "_total_at", "reading", "timer")

    def __init__(self, setting: str, seconds: float | None, read: float | None) -> None:
        self.timer = asyncio.timeout(seconds)
        self._total_at = self.timer.when()
        self._setting, self._seconds, self._read = setting, seconds, read
        self.reading = False  # whether the timer is at the read limit

    def before_read(self) -> None:
        """Set the timer for one wait of a read: ``read_timeout`` from now, within the total."""
        if self._read is None:
            return
        at = asyncio.get_running_loop().time() + self._read
        if self._total_at is None or at < self._total_at:
            self.timer.reschedule(at)
            self.reading = True
        elif self.reading:
            self.timer.reschedule(self._total_at)
            self.reading = False

    def expired(self, url: str) -> ClientTimeoutError:
        """The error of the limit that ran out."""
        if self.reading:
            return ReadTimeoutError("read_timeout", self._read or 0.0, url)
        return TotalTimeoutError(self._setting, self._seconds or 0.0, url)


def json_body(raw: RawResponse, url: str) -> object:
    """Parse a JSON-RPC response body, or raise what the HTTP answer means instead.

    Args:
        raw: The whole response.
        url: The request URL, for messages.

    Returns:
        The parsed JSON value of a 2xx ``application/json`` body.

    Raises:
        AuthenticationError: HTTP 401 or 403.
        ProtocolError: A non-2xx answer carrying a JSON-RPC error object (its typed class).
        HTTPStatusError: Any other non-2xx answer.
        UnexpectedContentTypeError: A 2xx answer that is not JSON.
        InvalidAgentResponseError: A JSON media type whose body is not JSON.
    """
    is_json = raw.content_type in JSON_MEDIA_TYPES
    if not 200 <= raw.status < 300:
        if raw.status in (401, 403):
            challenge = raw.headers.get("WWW-Authenticate", "")
            raise AuthenticationError(raw.status, raw.reason, url, challenge)
        if is_json:
            with contextlib.suppress(codec.JSONSyntaxError):
                obj = codec.loads(raw.body)
                if isinstance(obj, dict) and "error" in obj:
                    raise _with_retry_after(errors.from_wire(obj["error"]), raw.headers)
        raise HTTPStatusError(raw.status, raw.reason, url)
    if not is_json:
        raise UnexpectedContentTypeError(raw.content_type, JSON_MEDIA_TYPES, status=raw.status)
    try:
        return codec.loads(raw.body)
    except codec.JSONSyntaxError as exc:
        raise errors.InvalidAgentResponseError(f"response body is not JSON: {exc}") from None


def _with_retry_after(
    exc: errors.ProtocolError, headers: Mapping[str, str]
) -> errors.ProtocolError:
    """``exc``, with ``retry_after`` from the ``Retry-After`` header (seconds) when needed.

    Only for an :class:`~a2a_wire.errors.UnavailableError` whose error object names no
    ``retryAfterSeconds`` of its own.
    """
    header = headers.get("Retry-After", "").strip()
    if not isinstance(exc, errors.UnavailableError) or not header.isdigit():
        return exc
    sent = [d.get("metadata") for d in exc.data or [] if isinstance(d, dict)]
    if not any(isinstance(m, dict) and "retryAfterSeconds" in m for m in sent):
        exc.retry_after = max(1, int(header))
    return exc
