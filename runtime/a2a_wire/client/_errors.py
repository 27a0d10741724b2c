"""Errors the client raises on its own side: transport, HTTP framing, limits, discovery.

These have no JSON-RPC identity, so none of them is a :class:`~a2a_wire.errors.ProtocolError`;
errors an agent sends back (spec 3.3.2, 9.5) keep their classes from :mod:`a2a_wire.errors`.
Every foreign exception (aiohttp, asyncio timeouts, the address guard) is translated into one of
these at a single boundary in the client's HTTP layer, with the original kept as ``__cause__``.

Their place in the exception tree is drawn, with every other error, in :mod:`a2a_wire.errors`;
``ClientError`` and ``InvalidAgentCardError`` are defined there (card signing raises them too).

Messages never contain credentials: they name settings, statuses, URLs without user info or
query, environment variable names and file paths, never header values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import yarl

from a2a_wire._protocol.states import state_word
from a2a_wire.errors import ClientError, InvalidAgentCardError
from a2a_wire.types import TaskState

__all__ = [
    "AddressNotAllowedError",
    "AuthenticationError",
    "ClientError",
    "ClientTimeoutError",
    "ConnectError",
    "ConnectTimeoutError",
    "CredentialsError",
    "HTTPStatusError",
    "IncompleteStreamError",
    "InterfaceOffer",
    "InvalidAgentCardError",
    "NoCompatibleInterfaceError",
    "ReadTimeoutError",
    "RedirectRefusedError",
    "ResponseTooLargeError",
    "StreamIdleTimeoutError",
    "TotalTimeoutError",
    "TransportError",
    "TruncatedResponseError",
    "UnexpectedContentTypeError",
    "UnexpectedResponseError",
    "WaitTimeoutError",
    "note_task",
    "safe_url",
]


def safe_url(url: str | yarl.URL) -> str:
    """Render a URL for messages and logs: user info, query and fragment removed.

    Args:
        url: Any URL, absolute or relative.

    Returns:
        The URL text without ``user:password@``, ``?query`` or ``#fragment``.
    """
    try:
        parsed = yarl.URL(url) if isinstance(url, str) else url
        if parsed.query_string or parsed.fragment:
            parsed = parsed.with_query(None).with_fragment(None)
        if parsed.user is not None or parsed.password is not None:
            parsed = parsed.with_user(None)
    except (ValueError, TypeError):
        return "<unparsable URL>"
    return str(parsed)


class TransportError(ClientError):
    """The HTTP exchange failed below the protocol: connection refused, reset or closed early.

    Attributes:
        task_id: The task the exchange was about, when the client knew it (a stream that broke
            after its Task, a re-subscription that failed); ``""`` otherwise.
    """

    task_id: str = ""


class ConnectError(TransportError):
    """No connection to the agent could be established."""


class TruncatedResponseError(TransportError):
    """The response body ended before its declared length or final chunk."""


def note_task(exc: BaseException, task_id: str) -> None:
    """Record on ``exc`` the task it concerns, if it has a ``task_id`` not yet known.

    The errors that can strike while a task goes on at the agent (a time limit, an answer too
    large to read) carry the task id when the client knows it (from the request, or from the
    events already received), so that the caller can follow the task with GetTask.

    Args:
        exc: Any exception; only those with an empty ``task_id`` attribute are changed.
        task_id: The task id (``""``: unknown, nothing is changed).
    """
    if task_id and getattr(exc, "task_id", None) == "":
        exc.task_id = task_id  # type: ignore[attr-defined]


class ClientTimeoutError(ClientError):
    """A configured time limit was exceeded. Abstract.

    Args:
        setting: The :class:`~a2a_wire.client._client.ClientSettings` field that set the limit.
        seconds: The limit that was exceeded.
        url: Where the request went (shown without user info or query).
        task_id: The task the call was about, when known.

    Attributes:
        task_id: The task the call was about (``""`` when unknown: a first SendMessage that
            timed out before the agent answered). The task may still be running at the agent.
    """

    _abstract = True

    def __init__(self, setting: str, seconds: float, url: str = "", *, task_id: str = "") -> None:
        where = f" ({safe_url(url)})" if url else ""
        super().__init__(f"{setting}={seconds:g}s exceeded{where}")
        self.setting = setting
        self.seconds = seconds
        self.task_id = task_id


class ConnectTimeoutError(ClientTimeoutError):
    """Connecting took longer than ``connect_timeout``."""


class ReadTimeoutError(ClientTimeoutError):
    """The agent stayed silent longer than ``read_timeout`` (or ``stream_idle_timeout``)."""


class StreamIdleTimeoutError(ReadTimeoutError):
    """No complete SSE line (an event line or a keep-alive comment) for ``stream_idle_timeout``.

    Bytes that do not finish a line do not count, so a stream trickling one byte at a time
    still ends. A :class:`~a2a_wire.client._stream.ResumableStream` re-subscribes after it.
    """


class TotalTimeoutError(ClientTimeoutError):
    """A whole exchange outlived ``total_timeout``, ``card_timeout`` or ``stream_timeout``."""


class UnexpectedResponseError(ClientError):
    """The HTTP answer cannot be read as a reply of this binding. Abstract.

    Attributes:
        status: The HTTP status code.
    """

    _abstract = True

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class RedirectRefusedError(UnexpectedResponseError):
    """The agent answered with a redirect; the client never follows one.

    Attributes:
        location: The ``Location`` header as received (``""`` when absent).
    """

    def __init__(self, status: int, location: str) -> None:
        shown = safe_url(location) if location else "(no Location header)"
        super().__init__(f"HTTP {status} redirect to {shown} refused", status=status)
        self.location = location


class HTTPStatusError(UnexpectedResponseError):
    """A non-2xx status whose body is not a JSON-RPC error object.

    Attributes:
        reason: The HTTP reason phrase.
    """

    def __init__(self, status: int, reason: str = "", url: str = "") -> None:
        where = f" from {safe_url(url)}" if url else ""
        super().__init__(f"HTTP {status} {reason}".rstrip() + where, status=status)
        self.reason = reason


class AuthenticationError(HTTPStatusError):
    """HTTP 401 or 403: the credentials were missing, wrong or insufficient (spec 7.3, 7.4).

    Attributes:
        challenge: The ``WWW-Authenticate`` header, if any (a challenge, never a credential).
    """

    def __init__(self, status: int, reason: str = "", url: str = "", challenge: str = "") -> None:
        super().__init__(status, reason, url)
        self.challenge = challenge


class UnexpectedContentTypeError(UnexpectedResponseError):
    """The response has a media type this call cannot read.

    Attributes:
        content_type: The media type received (without parameters).
        expected: The media types that were acceptable.
    """

    def __init__(self, content_type: str, expected: Sequence[str], *, status: int) -> None:
        want = " or ".join(expected)
        super().__init__(
            f"expected {want}, got {content_type or '(none)'} (HTTP {status})", status=status
        )
        self.content_type = content_type
        self.expected = tuple(expected)


class ResponseTooLargeError(UnexpectedResponseError):
    """The body (or one stream event) is larger than the configured limit.

    The message names the setting to raise. A task's answer grows with its history: asking for
    less (``historyLength``) is the other way out.

    Attributes:
        limit: The limit in bytes.
        setting: The :class:`~a2a_wire.client._client.ClientSettings` field that set it.
        task_id: The task the answer was about, when known (from the request, the events
            already received, or the beginning of the body); ``""`` otherwise.
    """

    def __init__(self, setting: str, limit: int, *, status: int, task_id: str = "") -> None:
        super().__init__(
            f"response exceeds {setting}={limit} bytes; raise ClientSettings.{setting}",
            status=status,
        )
        self.setting = setting
        self.limit = limit
        self.task_id = task_id


class AddressNotAllowedError(ClientError):
    """The address guard refused the target; allowlist it in ``ClientSettings.allow``."""


class IncompleteStreamError(ClientError):
    """A stream closed before its task reached a terminal or interrupted state.

    Attributes:
        task_id: The task the stream was about (``""`` if no Task arrived).
        last_state: The last state seen (``None`` if none), possibly one this version does not know.
        cut_mid_event: Whether the stream ended inside an event (a cut-off connection).
    """

    def __init__(self, task_id: str, last_state: TaskState | None, *, cut_mid_event: bool) -> None:
        state = state_word(last_state)
        what = f"task {task_id!r} last seen in state {state}" if task_id else "no task or message"
        cut = " (cut off inside an event)" if cut_mid_event else ""
        super().__init__(f"stream ended early: {what}{cut}")
        self.task_id = task_id
        self.last_state = last_state
        self.cut_mid_event = cut_mid_event


class WaitTimeoutError(ClientError):
    """``A2AClient.wait`` ran out of time before the task settled.

    Attributes:
        task_id: The task polled.
        last_state: The last state seen, or ``None`` before the first answer.
    """

    def __init__(self, task_id: str, last_state: TaskState | None, seconds: float) -> None:
        state = state_word(last_state)
        super().__init__(f"task {task_id!r} still in state {state} after {seconds:g}s")
        self.task_id = task_id
        self.last_state = last_state


class InterfaceOffer(NamedTuple):
    """One ``supportedInterfaces`` entry as offered by a card."""

    protocol_binding: str
    protocol_version: str
    url: str


class NoCompatibleInterfaceError(ClientError):
    """The card lists no interface this client speaks (JSONRPC, protocol 1.0).

    Attributes:
        offers: Every interface the card offers, in card order.
    """

    def __init__(self, wanted: str, offers: Sequence[InterfaceOffer]) -> None:
        listed = "; ".join(
            f"{o.protocol_binding or '?'} {o.protocol_version or '?'} at {safe_url(o.url)}"
            for o in offers
        )
        super().__init__(f"no {wanted} interface; the card offers: {listed or 'nothing'}")
        self.offers = tuple(offers)


class CredentialsError(ClientError):
    """A credential provider could not produce a usable value (the value itself is never shown)."""
