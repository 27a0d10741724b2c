"""The exception tree, one class per JSON-RPC and A2A error (spec 3.3.2, 5.4 and 9.5).

::

    A2AError                                  abstract root; every error the library raises
    ├── ProtocolError                         abstract: an error with a JSON-RPC wire identity
    │   ├── JSONParseError             -32700
    │   ├── InvalidRequestError        -32600
    │   ├── MethodNotFoundError        -32601
    │   ├── InvalidParamsError         -32602  carries google.rpc.BadRequest field violations
    │   ├── InternalError              -32603
    │   ├── TaskNotFoundError          -32001  ┐
    │   ├── TaskNotCancelableError     -32002  │
    │   ├── PushNotificationNotSupportedError  │ A2A errors: carry google.rpc.ErrorInfo
    │   ├── UnsupportedOperationError  -32004  │ (reason, domain a2a-protocol.org, metadata)
    │   ├── ContentTypeNotSupportedError -32005│
    │   ├── InvalidAgentResponseError  -32006  │
    │   ├── ExtendedAgentCardNotConfiguredError│
    │   ├── ExtensionSupportRequiredError -32008
    │   ├── VersionNotSupportedError   -32009  ┘
    │   └── UnknownProtocolError       any other code received from a peer
    └── (client transport errors live in a2a_wire.client._errors)

Each class carries its wire identity (``code``, default ``message``, ErrorInfo ``reason``) as class
attributes; the code-to-class table :data:`ERROR_CLASSES` is derived from the classes. Raised
locally, an error is turned into a JSON-RPC error object by :meth:`ProtocolError.to_wire`; received
from a peer, :func:`from_wire` rebuilds the registered class, keeping the original ``data``.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "A2A_DOMAIN",
    "ERROR_CLASSES",
    "A2AError",
    "ClientError",
    "InvalidAgentCardError",
    "ContentTypeNotSupportedError",
    "ExtendedAgentCardNotConfiguredError",
    "ExtensionSupportRequiredError",
    "FieldViolation",
    "InternalError",
    "InvalidAgentResponseError",
    "InvalidParamsError",
    "InvalidRequestError",
    "JSONParseError",
    "MethodNotFoundError",
    "ProtocolError",
    "PushNotificationNotSupportedError",
    "TaskNotCancelableError",
    "TaskNotFoundError",
    "UnknownProtocolError",
    "UnsupportedOperationError",
    "VersionNotSupportedError",
    "from_wire",
]

A2A_DOMAIN = "a2a-protocol.org"
ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest"

#: JSON-RPC code -> class, filled in by each concrete subclass's definition.
ERROR_CLASSES: dict[int, type[ProtocolError]] = {}

FieldViolation = tuple[str, str]
"""A ``google.rpc.BadRequest`` field violation: (field path, description)."""


class A2AError(Exception):
    """Root of every error a2a-wire raises. Abstract: raise a subclass.

    A class is abstract when its own body sets ``_abstract = True``; it then refuses direct
    instantiation, and its subclasses do not inherit the flag.
    """

    _abstract: ClassVar[bool] = True

    def __init__(self, *args: object) -> None:
        if type(self).__dict__.get("_abstract", False):
            raise TypeError(f"{type(self).__name__} is abstract; raise a subclass")
        super().__init__(*args)


class ClientError(A2AError):
    """A failure detected by the client itself. Abstract: raise a subclass.

    The local client errors are defined in :mod:`a2a_wire.client`; this branch and the card
    error live here because card signing, used by both roles, raises them.
    """

    _abstract = True


class InvalidAgentCardError(ClientError):
    """The agent card document is not JSON or does not decode into an ``AgentCard``."""


class ProtocolError(A2AError):
    """An error with a JSON-RPC identity: a code, a message and ``data`` detail objects.

    Args:
        message: Human-readable text; the class default when omitted.
        metadata: String pairs for the ErrorInfo detail (A2A errors), e.g. ``{"taskId": ...}``.
        data: The ``data`` array as received from a peer; when given it is kept verbatim.
    """

    _abstract = True
    code: ClassVar[int]
    default_message: ClassVar[str]
    reason: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.__dict__.get("code")
        if isinstance(code, int):
            if code in ERROR_CLASSES:
                raise TypeError(f"JSON-RPC code {code} registered twice")
            ERROR_CLASSES[code] = cls

    def __init__(
        self,
        message: str | None = None,
        *,
        metadata: dict[str, str] | None = None,
        data: list[Any] | None = None,
    ) -> None:
        self.message = message if message is not None else self.default_message
        super().__init__(self.message)
        self.metadata = dict(metadata or {})
        self.data = data

    def details(self) -> list[dict[str, Any]]:
        """The ``data`` array to send: received details verbatim, else built from this error."""
        if self.data is not None:
            return list(self.data)
        if not self.reason:
            return []
        info: dict[str, Any] = {"@type": ERROR_INFO_TYPE, "reason": self.reason}
        info["domain"] = A2A_DOMAIN
        if self.metadata:
            info["metadata"] = dict(self.metadata)
        return [info]

    def to_wire(self) -> dict[str, Any]:
        """The JSON-RPC error object: ``{"code", "message", "data"?}``."""
        wire: dict[str, Any] = {"code": self.code, "message": self.message}
        details = self.details()
        if details:
            wire["data"] = details
        return wire

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r})"


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


class UnknownProtocolError(ProtocolError):
    """An error code received from a peer that this version does not register."""

    default_message = "Unknown error"

    def __init__(
        self,
        message: str | None = None,
        *,
        code: int = 0,
        data: list[Any] | None = None,
    ) -> None:
        super().__init__(message, data=data)
        self.code = code  # type: ignore[misc]


def from_wire(error: object) -> ProtocolError:
    """Rebuild the registered exception for a received JSON-RPC error object.

    Unknown codes give :class:`UnknownProtocolError`; a malformed object gives
    :class:`InvalidAgentResponseError`. ``data`` is kept as received when it is an array.
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
    return exc
