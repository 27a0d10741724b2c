"""The client's byte-level stream and its exception boundary.

:func:`translated` is the one place where aiohttp's and the address guard's exceptions become
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

__all__ = ["StreamConnection", "translated", "watching"]


@contextlib.contextmanager
def translated(url: str, settings: ClientSettings) -> Iterator[None]:
    """The boundary: map aiohttp and guard exceptions to client errors (order matters)."""
    try:
        yield
    except netguard.AddressGuardError as exc:
        raise AddressNotAllowedError(f"{exc}; allowlist it in ClientSettings.allow") from exc
    except aiohttp.ConnectionTimeoutError as exc:
        raise ConnectTimeoutError("connect_timeout", settings.connect_timeout, url) from exc
    except aiohttp.ServerTimeoutError as exc:
        raise ReadTimeoutError("read_timeout", settings.read_timeout or 0.0, url) from exc
    except aiohttp.ClientPayloadError as exc:
        raise TruncatedResponseError(f"response body from {safe_url(url)} is incomplete") from exc
    except aiohttp.ClientConnectorError as exc:
        reason = exc.os_error.strerror or type(exc.os_error).__name__
        raise ConnectError(f"cannot connect to {safe_url(url)}: {reason}") from exc
    except aiohttp.InvalidURL as exc:
        raise TransportError(f"invalid URL {safe_url(str(exc.url))}") from exc
    except aiohttp.ClientError as exc:
        reason = type(exc).__name__
        raise TransportError(f"request to {safe_url(url)} failed: {reason}") from exc


@contextlib.contextmanager
def watching(watch: ExchangeWatch | None, *, open_ended: bool = False) -> Iterator[None]:
    """End ``watch`` with the error that leaves the block, or when it ends unless open-ended."""
    if watch is None:
        yield
        return
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

        Raises:
            StreamIdleTimeoutError: No complete line within ``stream_idle_timeout``.
            TotalTimeoutError: The stream outlived ``stream_timeout``.
            TransportError: The connection broke.
        """
        limits = [t for t in (self._idle_until, self._deadline) if t is not None]
        until = min(limits) if limits else None
        try:
            with translated(self._url, self._settings):
                async with asyncio.timeout_at(until):
                    chunk = await self._response.content.readany()
        except TimeoutError as exc:
            error: ClientTimeoutError
            if until == self._deadline:
                seconds = self._settings.stream_timeout or 0.0
                error = TotalTimeoutError("stream_timeout", seconds, self._url)
            else:
                idle = self._idle or 0.0
                error = StreamIdleTimeoutError("stream_idle_timeout", idle, self._url)
            self._finish(error)
            raise error from exc
        except BaseException as exc:
            self._finish(exc)
            raise
        if self._idle is not None and _ends_a_line(chunk):
            self._idle_until = self._loop.time() + self._idle
        if self._watch is not None:
            self._watch.body(chunk) if chunk else self._finish(None)
        return chunk

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
