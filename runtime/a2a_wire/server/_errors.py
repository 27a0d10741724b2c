"""The server's HTTP-level refusals: errors that answer a whole HTTP request (spec 7.4, 9, 13.4).

Each keeps the JSON-RPC code of the class it refines and adds its own HTTP status and headers;
the glue's middleware is the one place that turns any ``ProtocolError`` into a response.
:func:`from_http` translates aiohttp's HTTP exceptions at that boundary. The statuses are listed
in docs/errors.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from aiohttp import hdrs, web

from a2a_wire.errors import (
    ContentTypeNotSupportedError,
    InternalError,
    InvalidRequestError,
    JSONParseError,
    ProtocolError,
    UnavailableError,
)
from a2a_wire.server._limits import retry_after_header
from a2a_wire.server.store import StoreUnavailableError

__all__ = [
    "DOMAIN",
    "BodyTimeoutError",
    "HTTPRefusalError",
    "IdentityUnavailableError",
    "InsufficientScopeError",
    "OriginNotAllowedError",
    "RateLimitedError",
    "RequestTooLargeError",
    "ServerFailureError",
    "UnauthenticatedError",
    "UnreadableBodyError",
    "UnsupportedMediaTypeError",
    "from_http",
    "with_retry_after",
]

DOMAIN = "a2a-wire"
"""The ErrorInfo domain of reasons this server defines (not A2A's)."""


class UnauthenticatedError(InvalidRequestError):
    """Missing or wrong credentials (spec 7.4): HTTP 401 with a ``WWW-Authenticate`` challenge.

    Args:
        challenges: One ``WWW-Authenticate`` value per scheme in use.
    """

    default_message = "Authentication required"
    reason = "UNAUTHENTICATED"
    domain = DOMAIN
    http_status = 401

    def __init__(self, challenges: Sequence[str] = ()) -> None:
        super().__init__()
        self.challenges = tuple(challenges)

    def http_headers(self) -> list[tuple[str, str]]:
        """One ``WWW-Authenticate`` header per challenge."""
        return [("WWW-Authenticate", challenge) for challenge in self.challenges]


class InsufficientScopeError(InvalidRequestError):
    """A valid access token without a scope the server requires: HTTP 403 (RFC 6750 section 3.1).

    Args:
        challenges: ``WWW-Authenticate`` values, the Bearer one with ``error="insufficient_scope"``.
    """

    default_message = "The access token lacks a required scope"
    reason = "INSUFFICIENT_SCOPE"
    domain = DOMAIN
    http_status = 403

    def __init__(self, challenges: Sequence[str] = ()) -> None:
        super().__init__()
        self.challenges = tuple(challenges)

    def http_headers(self) -> list[tuple[str, str]]:
        """One ``WWW-Authenticate`` header per challenge."""
        return [("WWW-Authenticate", challenge) for challenge in self.challenges]


class RateLimitedError(InvalidRequestError):
    """Over a rate or stream limit (spec 13.4): HTTP 429 with ``Retry-After``.

    Args:
        what: What there were too many of, e.g. ``"requests"``.
        wait: Seconds until the caller may try again (rounded up to whole seconds, at least 1).

    Attributes:
        retry_after: The ``Retry-After`` value, also sent as ErrorInfo ``retryAfterSeconds``.
    """

    reason = "RATE_LIMITED"
    domain = DOMAIN
    http_status = 429

    def __init__(self, what: str, wait: float) -> None:
        retry = retry_after_header(wait)
        message = f"Too many {what}; retry after {retry} s"
        super().__init__(message, metadata={"retryAfterSeconds": retry})
        self.retry_after = retry

    def http_headers(self) -> list[tuple[str, str]]:
        """The ``Retry-After`` header."""
        return [("Retry-After", self.retry_after)]


class IdentityUnavailableError(UnavailableError):
    """A credential could not be checked: its issuer's keys cannot be fetched now. HTTP 503.

    Not the caller's fault, so neither a 401 nor a failed authentication; the caller may send
    the same request again after ``retry_after`` seconds.
    """

    default_message = "The identity provider cannot be reached; retry later"
    reason = "IDENTITY_PROVIDER_UNAVAILABLE"


class UnsupportedMediaTypeError(ContentTypeNotSupportedError):
    """The request body is not JSON by its ``Content-Type``: HTTP 415, refused before parsing.

    Args:
        content_type: The header as received (already shortened by the caller).
    """

    http_status = 415

    def __init__(self, content_type: str) -> None:
        super().__init__(
            f"Content-Type {content_type!r} is not supported; send application/json",
            metadata={"contentType": content_type},
        )


class UnreadableBodyError(JSONParseError):
    """The body could not be read, e.g. its ``Content-Encoding`` does not decode: HTTP 400.

    Args:
        problem: What went wrong, as reported by aiohttp.
    """

    http_status = 400

    def __init__(self, problem: object) -> None:
        super().__init__(f"Request body could not be read: {problem}")


class RequestTooLargeError(InvalidRequestError):
    """The body is over ``ServerSettings.max_body_bytes``: HTTP 413.

    Args:
        limit: The limit in bytes.
    """

    http_status = 413

    def __init__(self, limit: int) -> None:
        super().__init__(f"Request body too large (limit {limit} bytes)")


class BodyTimeoutError(InvalidRequestError):
    """The body did not arrive within ``ServerSettings.body_timeout_seconds``: HTTP 408.

    The connection is closed once the answer is sent (:mod:`a2a_wire.server._body`).

    Args:
        seconds: The limit.
    """

    http_status = 408

    def __init__(self, seconds: float) -> None:
        super().__init__(f"Request body not received within {seconds:g} s")


class OriginNotAllowedError(InvalidRequestError):
    """A CORS preflight from an origin not in ``ServerSettings.cors_origins``: HTTP 403.

    Args:
        origin: The ``Origin`` header (already shortened; ``""`` when absent).
    """

    http_status = 403

    def __init__(self, origin: str) -> None:
        super().__init__(f"Origin {origin!r} is not allowed")


class HTTPRefusalError(InvalidRequestError):
    """aiohttp refused the request: no route (404), wrong method (405 with ``Allow``), ...

    Translated by :func:`from_http`; the status is aiohttp's, so it is set on the instance.

    Args:
        message: ``HTTP <status> <reason>: <method> <path>``.
        status: The 4xx status of aiohttp's exception.
        allow: Its ``Allow`` header (``""`` when absent).
    """

    def __init__(self, message: str, *, status: int, allow: str = "") -> None:
        super().__init__(message)
        self.http_status = status
        self.allow = allow

    def http_headers(self) -> list[tuple[str, str]]:
        """The ``Allow`` header, when aiohttp named the allowed methods."""
        return [(hdrs.ALLOW, self.allow)] if self.allow else []


class ServerFailureError(InternalError):
    """The server failed outside any call: HTTP 500, no detail (it is in the log).

    Answers an unexpected exception at the outermost boundary, or an aiohttp 5xx exception,
    whose status it keeps.

    Args:
        message: The message; ``"Internal error"`` when omitted.
        status: The HTTP status (500 unless translated from aiohttp).
    """

    http_status = 500

    def __init__(self, message: str | None = None, *, status: int = 500) -> None:
        super().__init__(message)
        self.http_status = status


def from_http(exc: web.HTTPException, request: web.Request, max_body: int) -> ProtocolError:
    """Translate aiohttp's HTTP exception (status 400 or more) into the tree.

    Args:
        exc: The exception aiohttp (or a handler) raised.
        request: The request it answers.
        max_body: ``ServerSettings.max_body_bytes``, named in the 413 message.

    Returns:
        The error to answer with; it keeps ``exc``'s status.
    """
    if exc.status == RequestTooLargeError.http_status:
        return RequestTooLargeError(max_body)
    message = f"HTTP {exc.status} {exc.reason}: {request.method} {request.path[:200]}"
    if exc.status >= 500:
        return ServerFailureError(message, status=exc.status)
    return HTTPRefusalError(message, status=exc.status, allow=exc.headers.get(hdrs.ALLOW, ""))


def with_retry_after(exc: ProtocolError, seconds: float) -> ProtocolError:
    """``exc``, or for a :class:`StoreUnavailableError` the same one telling ``seconds``.

    Args:
        exc: The error that answers a call.
        seconds: ``ServerSettings.store_retry_after_seconds``.

    Returns:
        The error to send: a store's unavailability with ``retry_after`` (and ErrorInfo
        ``retryAfterSeconds``) from ``seconds`` and its other metadata kept; anything else as is.
    """
    if not isinstance(exc, StoreUnavailableError):
        return exc
    told = StoreUnavailableError(exc.message, retry_after=seconds)
    kept = {key: value for key, value in exc.metadata.items() if key != "retryAfterSeconds"}
    told.metadata.update(kept)
    told.__cause__ = exc.__cause__
    return told
