"""Watching what a client sends and receives, byte for byte (for debugging tools).

An :class:`ExchangeObserver` given to :class:`~a2a_wire.client._client.A2AClient` is told about
every HTTP exchange of that client, card fetches included: the request as sent (method, URL,
headers, body), then the response head, then each chunk of the body as it is read (a
``text/event-stream`` response chunk by chunk as the events arrive), then the end, with the
error that ended it if any. The transport does nothing more than call it; a client without an
observer pays one ``None`` check per request and per chunk.

The headers are the real ones, credentials included: an observer that shows or stores them
must hide what it must not reveal (the inspector, :mod:`a2a_wire.cli.inspect`, does). The calls
are made from the client's coroutines and must not block; an observer that raises breaks the
request it observes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

__all__ = ["ExchangeObserver", "ExchangeWatch"]


class ExchangeWatch(Protocol):
    """The observer's handle on one exchange; :meth:`end` is called exactly once."""

    def response(self, status: int, headers: Mapping[str, str]) -> None:
        """The response head arrived."""
        ...

    def body(self, chunk: bytes) -> None:
        """A chunk of the response body was read (never empty)."""
        ...

    def end(self, error: BaseException | None) -> None:
        """The exchange is over: the body was read whole, the stream closed, or ``error``."""
        ...


class ExchangeObserver(Protocol):
    """Told about each exchange a client starts (see the module docstring)."""

    def exchange(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        *,
        stream: bool,
    ) -> ExchangeWatch:
        """A request is about to be sent.

        Args:
            method: ``"POST"`` or ``"GET"``.
            url: The absolute URL.
            headers: The request headers, credentials included.
            body: The request body, if any.
            stream: Whether the response is expected to be an event stream.

        Returns:
            The handle the rest of the exchange is reported to.
        """
        ...
