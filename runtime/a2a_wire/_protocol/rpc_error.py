"""The wire identity of an error: :class:`ProtocolError`, its code registry and detail types.

The mechanism that :mod:`a2a_wire.errors` builds its catalogue on: a JSON-RPC error's code,
message and ``data`` details (spec 9.5), the ``google.rpc`` detail types A2A uses (ErrorInfo,
BadRequest) and :data:`ERROR_CLASSES`, filled in by each concrete class's definition. Import
the names from :mod:`a2a_wire.errors`; this module is private.
"""

from __future__ import annotations

from typing import Any, ClassVar

from a2a_wire._generated._support import A2AError

__all__ = [
    "A2A_DOMAIN",
    "BAD_REQUEST_TYPE",
    "ERROR_CLASSES",
    "ERROR_INFO_TYPE",
    "FieldViolation",
    "ProtocolError",
]

A2A_DOMAIN = "a2a-protocol.org"
ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest"

#: JSON-RPC code -> class, filled in by each concrete subclass's definition.
ERROR_CLASSES: dict[int, type[ProtocolError]] = {}

FieldViolation = tuple[str, str]
"""A ``google.rpc.BadRequest`` field violation: (field path, description)."""


class ProtocolError(A2AError):
    """An error with a JSON-RPC identity: a code, a message and ``data`` detail objects.

    The wire identity is class attributes; :class:`UnknownProtocolError` and the server's
    translations of aiohttp errors set ``code`` or ``http_status`` on the instance instead.

    Attributes:
        code: The JSON-RPC error code; concrete classes register it in :data:`ERROR_CLASSES`.
        default_message: The message when none is given.
        reason: The ErrorInfo ``reason`` (A2A errors); ``""`` sends no ErrorInfo.
        domain: The ErrorInfo ``domain``: ``a2a-protocol.org`` unless the reason is our own.
        http_status: The status of a response holding only this error (module docstring).

    Args:
        message: Human-readable text; the class default when omitted.
        metadata: String pairs for the ErrorInfo detail (A2A errors), e.g. ``{"taskId": ...}``.
        data: The ``data`` array as received from a peer; when given it is kept verbatim.
    """

    _abstract = True
    code: ClassVar[int]
    default_message: ClassVar[str]
    reason: ClassVar[str] = ""
    domain: ClassVar[str] = A2A_DOMAIN
    http_status: int = 200

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
        info["domain"] = self.domain
        if self.metadata:
            info["metadata"] = dict(self.metadata)
        return [info]

    def http_headers(self) -> list[tuple[str, str]]:
        """Headers to add to a response holding only this error (a name may repeat); none here."""
        return []

    def to_wire(self) -> dict[str, Any]:
        """The JSON-RPC error object: ``{"code", "message", "data"?}``."""
        wire: dict[str, Any] = {"code": self.code, "message": self.message}
        details = self.details()
        if details:
            wire["data"] = details
        return wire

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r})"
