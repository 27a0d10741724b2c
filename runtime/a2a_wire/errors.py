"""The root of the exception tree and the protocol errors: every exception raised is an A2AError.

Here: one class per JSON-RPC and A2A error (spec 3.3.2, 5.4, 9.5), :func:`from_wire`, and
``ClientError`` with the card errors, which card signing (used by both roles) raises. The other
branches are defined where they are raised; ``docs/errors.md`` draws the whole tree, each class
with its module and the HTTP status of each refusal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from a2a_wire._generated._support import A2AError
from a2a_wire._protocol.rpc_error import (
    A2A_DOMAIN,
    BAD_REQUEST_TYPE,
    ERROR_CLASSES,
    ERROR_INFO_TYPE,
    FieldViolation,
    ProtocolError,
)

__all__ = [
    "A2A_DOMAIN",
    "ERROR_CLASSES",
    "A2AError",
    "CardSignatureError",
    "ClientError",
    "ContentTypeNotSupportedError",
    "ExtendedAgentCardNotConfiguredError",
    "ExtensionSupportRequiredError",
    "FieldViolation",
    "InternalError",
    "InvalidAgentCardError",
    "InvalidAgentResponseError",
    "InvalidParamsError",
    "InvalidRequestError",
    "JSONParseError",
    "MethodNotFoundError",
    "ProtocolError",
    "PushNotificationNotSupportedError",
    "TaskNotCancelableError",
    "TaskNotFoundError",
    "UnavailableError",
    "UnknownProtocolError",
    "UnsupportedOperationError",
    "VersionNotSupportedError",
    "from_wire",
]


class ClientError(A2AError):
    """A failure the client detects; defined here since card signing (both roles) raises some."""

    _abstract = True


class InvalidAgentCardError(ClientError):
    """The agent card document is not JSON or does not decode into an ``AgentCard``."""


class CardSignatureError(InvalidAgentCardError):
    """A card's signatures do not establish trust (spec 8.4.3); raised by the card verifier.

    Attributes:
        reasons: One text per signature tried (or the single reason there were none).
    """

    def __init__(self, reasons: Sequence[str]) -> None:
        self.reasons = tuple(reasons)
        super().__init__("agent card signature not verified: " + "; ".join(self.reasons))


class JSONParseError(ProtocolError):
    """The body is not valid JSON (strict: no NaN/Infinity, valid UTF-8)."""

    code = -32700
    default_message = "Invalid JSON payload"


class InvalidRequestError(ProtocolError):
    """The JSON is not a valid JSON-RPC 2.0 request object."""

    code = -32600
    default_message = "Request payload validation error"


class MethodNotFoundError(ProtocolError):
    """The method is not one of the A2A 1.0 JSON-RPC methods."""

    code = -32601
    default_message = "Method not found"


class InvalidParamsError(ProtocolError):
    """The params do not decode, or REQUIRED fields are missing (spec 3.3.2, 9.5).

    Args:
        message: Human-readable summary.
        violations: (field path, description) pairs, sent as a ``google.rpc.BadRequest`` detail.
    """

    code = -32602
    default_message = "Invalid parameters"

    def __init__(
        self,
        message: str | None = None,
        *,
        violations: list[FieldViolation] | None = None,
        data: list[Any] | None = None,
    ) -> None:
        super().__init__(message, data=data)
        self.violations = list(violations or [])

    def details(self) -> list[dict[str, Any]]:
        """A BadRequest detail listing each field violation."""
        if self.data is not None:
            return list(self.data)
        if not self.violations:
            return []
        fields = [{"field": f, "description": d} for f, d in self.violations]
        return [{"@type": BAD_REQUEST_TYPE, "fieldViolations": fields}]


class InternalError(ProtocolError):
    """The server failed; the details are in its log, not in the answer."""

    code = -32603
    default_message = "Internal error"


class TaskNotFoundError(ProtocolError):
    """No task with that id is visible to the caller (spec 3.3.2)."""

    code = -32001
    default_message = "Task not found"
    reason = "TASK_NOT_FOUND"


class TaskNotCancelableError(ProtocolError):
    """The task is in a state that cannot be canceled (spec 3.1.5)."""

    code = -32002
    default_message = "Task cannot be canceled"
    reason = "TASK_NOT_CANCELABLE"


class PushNotificationNotSupportedError(ProtocolError):
    """The agent card does not declare ``capabilities.pushNotifications`` (spec 3.3.4)."""

    code = -32003
    default_message = "Push notifications are not supported"
    reason = "PUSH_NOTIFICATION_NOT_SUPPORTED"


class UnsupportedOperationError(ProtocolError):
    """The operation, or this use of it, is not supported (spec 3.3.4)."""

    code = -32004
    default_message = "Unsupported operation"
    reason = "UNSUPPORTED_OPERATION"


class ContentTypeNotSupportedError(ProtocolError):
    """A media type (of the request or of a part) is not accepted (spec 3.3.2)."""

    code = -32005
    default_message = "Content type not supported"
    reason = "CONTENT_TYPE_NOT_SUPPORTED"


class InvalidAgentResponseError(ProtocolError):
    """The agent answered with something that does not fit the method (spec 3.3.2)."""

    code = -32006
    default_message = "Invalid agent response"
    reason = "INVALID_AGENT_RESPONSE"


class ExtendedAgentCardNotConfiguredError(ProtocolError):
    """The card declares an extended card but none is configured (spec 3.3.4)."""

    code = -32007
    default_message = "Extended agent card is not configured"
    reason = "EXTENDED_AGENT_CARD_NOT_CONFIGURED"


class ExtensionSupportRequiredError(ProtocolError):
    """A required extension was not declared by the client (spec 3.3.4)."""

    code = -32008
    default_message = "Extension support required"
    reason = "EXTENSION_SUPPORT_REQUIRED"


class VersionNotSupportedError(ProtocolError):
    """The ``A2A-Version`` asked for is not served (spec 3.6.2)."""

    code = -32009
    default_message = "Protocol version not supported"
    reason = "VERSION_NOT_SUPPORTED"


class UnavailableError(ProtocolError):
    """The server cannot serve the call now, but may soon: retry after ``retry_after`` seconds.

    Code -32000 is the one code of JSON-RPC's implementation-defined server range (-32000 to
    -32099) that A2A does not claim (spec 9.5). Sent alone, it is answered with HTTP 503 and a
    ``Retry-After`` header; the ErrorInfo ``reason`` says what is unavailable.

    Args:
        message: Human-readable text; the class default when omitted.
        retry_after: Whole seconds the caller should wait (at least 1), also sent as ErrorInfo
            ``retryAfterSeconds``.
        metadata: More string pairs for the ErrorInfo detail.
        data: The ``data`` array as received from a peer; kept verbatim.
    """

    code = -32000
    default_message = "The server is unavailable for now; retry later"
    reason = "UNAVAILABLE"
    domain = "a2a-wire"
    http_status = 503

    def __init__(
        self,
        message: str | None = None,
        *,
        retry_after: float = 1.0,
        metadata: dict[str, str] | None = None,
        data: list[Any] | None = None,
    ) -> None:
        self.retry_after = max(1, math.ceil(retry_after))
        info = {"retryAfterSeconds": str(self.retry_after), **(metadata or {})}
        super().__init__(message, metadata=info, data=data)

    def http_headers(self) -> list[tuple[str, str]]:
        """The ``Retry-After`` header."""
        return [("Retry-After", str(self.retry_after))]


class UnknownProtocolError(ProtocolError):
    """An error code received from a peer that this version does not register."""

    default_message = "Unknown error"

    def __init__(
        self, message: str | None = None, *, code: int = 0, data: list[Any] | None = None
    ) -> None:
        super().__init__(message, data=data)
        self.code = code  # type: ignore[misc]


def from_wire(error: object) -> ProtocolError:
    """Rebuild the registered exception for a received JSON-RPC error object (spec 9.5).

    Args:
        error: The ``error`` member of a response, as parsed JSON.

    Returns:
        The class registered for the code, or :class:`UnknownProtocolError` for another code,
        or :class:`InvalidAgentResponseError` for a malformed object. ``data`` is kept verbatim
        (a value that is not an array is wrapped in one); ErrorInfo ``metadata`` and BadRequest
        field violations are read back into the error's attributes.
    """
    if not isinstance(error, dict):
        return InvalidAgentResponseError("error member is not an object")
    code, message, data = error.get("code"), error.get("message"), error.get("data")
    if type(code) is not int or not isinstance(message, str):
        return InvalidAgentResponseError("error object lacks an integer code or a message")
    details = data if isinstance(data, list) else ([data] if data is not None else None)
    cls = ERROR_CLASSES.get(code)
    if cls is None:
        return UnknownProtocolError(message, code=code, data=details)
    exc = cls(message, data=details)
    for detail in details or []:
        if isinstance(detail, dict) and detail.get("@type") == ERROR_INFO_TYPE:
            meta = detail.get("metadata")
            if isinstance(meta, dict):
                exc.metadata = {str(k): str(v) for k, v in meta.items()}
        if isinstance(exc, InvalidParamsError) and isinstance(detail, dict):
            for v in detail.get("fieldViolations") or []:
                if isinstance(v, dict):
                    exc.violations.append((str(v.get("field", "")), str(v.get("description", ""))))
    if isinstance(exc, UnavailableError) and exc.metadata.get("retryAfterSeconds", "").isdigit():
        exc.retry_after = max(1, int(exc.metadata["retryAfterSeconds"]))
    return exc
