"""The client's byte-level stream and its exception boundary.

:func:`translate` is the one place where aiohttp's and the address guard's exceptions become
client errors (``raise ... from``); :class:`StreamConnection` reads an open ``text/event-stream``
response chunk by chunk under the stream's idle and lifetime limits (spec 9.4.2), and tells an
exchange observer what it read.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import aiohttp

from a2a_wire import netguard
from a2a_wire.client._errors import (
    AddressNotAllowedError,
    ClientTimeoutError,
    ConnectError,
    ConnectTimeoutError,
    ReadTimeoutError,
    StreamIdleTimeoutError,
    TotalTimeoutError,
    TransportError,
    TruncatedResponseError,
    safe_url,
)
from a2a_wire.client._observe import ExchangeWatch
from a2a_wire.client._settings import ClientSettings

__all__ = ["FOREIGN", "StreamConnection", "translate", "translated", "watching"]


def translate(exc: BaseException, url: str, settings: ClientSettings) -> BaseException:
    """The client error an aiohttp or guard exception stands for; ``exc`` itself otherwise.

    The caller raises the result ``from exc``. Order matters: aiohttp's timeouts are also
    ``ClientError`` subclasses.
    """
    if isinstance(exc, netguard.AddressGuardError):
        return AddressNotAllowedError(f"{exc}; allowlist it in ClientSettings.allow")
    if not isinstance(exc, aiohttp.ClientError):
        return exc
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return ConnectTimeoutError("connect_timeout", settings.connect_timeout, url)
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return ReadTimeoutError("read_timeout", settings.read_timeout or 0.0, url)
    if isinstance(exc, aiohttp.ClientPayloadError):
        return TruncatedResponseError(f"response body from {safe_url(url)} is incomplete")
    if isinstance(exc, aiohttp.ClientConnectorError):
        reason = exc.os_error.strerror or type(exc.os_error).__name__
        return ConnectError(f"cannot connect to {safe_url(url)}: {reason}")
    if isinstance(exc, aiohttp.InvalidURL):
        return TransportError(f"invalid URL {safe_url(str(exc.url))}")
    return TransportError(f"request to {safe_url(url)} failed: {type(exc).__name__}")


#: What :func:`translate` maps; the hot paths catch these and nothing else.
FOREIGN = (aiohttp.ClientError, netguard.AddressGuardError)


@contextlib.contextmanager
def translated(url: str, settings: ClientSettings) -> Iterator[None]:
    """The boundary as a block: :func:`translate` what leaves it (``raise ... from``)."""
    try:
        yield
    except FOREIGN as exc:
        raise translate(exc, url, settings) from exc


_UNWATCHED = contextlib.nullcontext()


def watching(
    watch: ExchangeWatch | None, *, open_ended: bool = False
) -> contextlib.AbstractContextManager[None]:
    """End ``watch`` with the error that leaves the block, or when it ends unless open-ended."""
    return _UNWATCHED if watch is None else _watching(watch, open_ended)


@contextlib.contextmanager
def _watching(watch: ExchangeWatch, open_ended: bool) -> Iterator[None]:
    try:
        yield
    except BaseException as exc:
        watch.end(exc)
        raise
    if not open_ended:
        watch.end(None)


def _ends_a_line(chunk: bytes) -> bool:
    """Whether ``chunk`` completes an SSE line (CRLF, LF or CR, spec 9.4.2's framing)."""
    return b"\n" in chunk or b"\r" in chunk


class StreamConnection:
    """An open ``text/event-stream`` response, read chunk by chunk.

    Its time limits are kept as deadlines on the loop's clock: ``stream_idle_timeout`` runs
    from the last chunk that completed a line (from the response headers, at first), the
    stream's own ``deadline`` (``stream_timeout``) from its request. The response is closed
    when the connection is dropped, also when nothing references the stream any more (a loop
    that broke out of ``async for`` without ``async with``).
    """

    def __init__(
        self,
        response: aiohttp.ClientResponse,
        url: str,
        settings: ClientSettings,
        watch: ExchangeWatch | None = None,
        *,
        deadline: float | None = None,
    ) -> None:
        self._response = response
        self._url = url
        self._settings = settings
        self._idle = settings.stream_idle_timeout
        self._deadline = deadline
        self._loop = asyncio.get_running_loop()
        self._idle_until = None if self._idle is None else self._loop.time() + self._idle
        self._watch = watch

    def _finish(self, error: BaseException | None) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.end(error)

    async def read_chunk(self) -> bytes:
        """Return the next chunk, or ``b""`` at the end of the stream.

        Bytes already received are returned at once; a timer is armed only for a wait.

        Raises:
            StreamIdleTimeoutError: No complete line within ``stream_idle_timeout``.
            TotalTimeoutError: The stream outlived ``stream_timeout``.
            TransportError: The connection broke.
        """
        idle_until, deadline = self._idle_until, self._deadline
        if idle_until is None or (deadline is not None and deadline < idle_until):
            until = deadline
        else:
            until = idle_until
        content = self._response.content
        try:
            chunk = content.read_nowait()
            if not chunk and not content.is_eof():
                async with asyncio.timeout_at(until):
                    chunk = await content.readany()
        except FOREIGN as exc:  # before TimeoutError: aiohttp's timeouts are both
            error = translate(exc, self._url, self._settings)
            self._finish(error)
            raise error from exc
        except TimeoutError as exc:
            timeout = self._timeout_error(until)
            self._finish(timeout)
            raise timeout from exc
        except BaseException as exc:
            self._finish(exc)
            raise
        if self._idle is not None and _ends_a_line(chunk):
            self._idle_until = self._loop.time() + self._idle
        if self._watch is not None:
            self._watch.body(chunk) if chunk else self._finish(None)
        return chunk

    def _timeout_error(self, until: float | None) -> ClientTimeoutError:
        if until == self._deadline:
            seconds = self._settings.stream_timeout or 0.0
            return TotalTimeoutError("stream_timeout", seconds, self._url)
        idle = self._idle or 0.0
        return StreamIdleTimeoutError("stream_idle_timeout", idle, self._url)

    def close(self) -> None:
        """Drop the connection (safe to call more than once)."""
        self._finish(None)
        self._response.close()

    def __del__(self) -> None:
        # A stream abandoned without aclose (``break`` out of a bare ``async for``) is freed by
        # reference counting at once; closing here releases its connection then, not at exit.
        with contextlib.suppress(Exception):
            if not self._response.closed:
                self._response.close()
