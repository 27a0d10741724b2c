"""Wire rules of the JSON-RPC binding that both roles share (spec 3.2.6, 3.6, 4.3.3, 8.2, 9).

Names, strings and pure functions, each rule here once so that server, client and push delivery
cannot drift apart. Versions are read two ways on purpose: :func:`check_version` strictly for
requests, :func:`version_matches` leniently for cards (docs/internals/protocol.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import yarl

from a2a_wire.errors import VersionNotSupportedError

__all__ = [
    "A2A_JSON_MEDIA_TYPE",
    "ABSENT_VERSION",
    "ANY_ORIGIN",
    "DELIVERY_ID_HEADER",
    "EXTENSIONS_HEADER",
    "JSON_MEDIA_TYPE",
    "JSON_MEDIA_TYPES",
    "LAST_EVENT_ID_HEADER",
    "PROTOCOL_BINDING",
    "PROTOCOL_VERSION",
    "PUSH_CONTENT_TYPE",
    "SKILL_ID_KEY",
    "SSE_MEDIA_TYPE",
    "SUPPORTED_VERSIONS",
    "TOKEN_HEADER",
    "VERSION_HEADER",
    "WELL_KNOWN_PATH",
    "check_version",
    "join_extensions",
    "normalize_origin",
    "parse_extensions",
    "version_matches",
]

PROTOCOL_VERSION = "1.0"
"""The A2A protocol version this library speaks (``A2A-Version``, ``protocolVersion``)."""

SUPPORTED_VERSIONS = (PROTOCOL_VERSION,)
"""The ``Major.Minor`` versions the server serves (spec 3.6)."""

ABSENT_VERSION = "0.3"
"""The version a request without ``A2A-Version`` asks for (spec 3.6.2)."""

PROTOCOL_BINDING = "JSONRPC"
"""``AgentInterface.protocolBinding`` of this binding (spec 8.3.1)."""

WELL_KNOWN_PATH = "/.well-known/agent-card.json"
"""Where an agent publishes its public card (spec 8.2)."""

SKILL_ID_KEY = "skillId"
"""The ``message.metadata`` key naming the skill a message is for (an a2a-wire convention: the
server routes by it, the client's ``skill`` arguments set it; spec 4.4.5 leaves routing open)."""

VERSION_HEADER = "A2A-Version"
"""Header naming the protocol version of a request (spec 3.6.1)."""

EXTENSIONS_HEADER = "A2A-Extensions"
"""Header listing extension URIs: requested by the client, applied by the server (spec 3.2.6)."""

JSON_MEDIA_TYPE = "application/json"
"""The media type of JSON-RPC requests and responses (spec 9.1)."""

A2A_JSON_MEDIA_TYPE = "application/a2a+json"
"""The A2A media type for JSON bodies (spec 4.3.3); read wherever JSON is."""

JSON_MEDIA_TYPES = (JSON_MEDIA_TYPE, A2A_JSON_MEDIA_TYPE)
"""Media types read as JSON, in the order error messages name them."""

SSE_MEDIA_TYPE = "text/event-stream"
"""The media type of streamed results (spec 9.4.2)."""

PUSH_CONTENT_TYPE = A2A_JSON_MEDIA_TYPE
"""Media type of a webhook body (spec 4.3.3)."""

TOKEN_HEADER = "X-A2A-Notification-Token"
"""Header carrying ``TaskPushNotificationConfig.token``."""

DELIVERY_ID_HEADER = "X-A2A-Delivery-Id"
"""Header carrying the id of one delivery, the same on every retry (an a2a-wire extension)."""

LAST_EVENT_ID_HEADER = "Last-Event-ID"
"""Header of a reconnecting SSE client: the ``id`` of the last event it received (HTML SSE)."""

_NUMBER = r"(0|[1-9][0-9]{0,8})"
_HEADER_VERSION = re.compile(rf"{_NUMBER}\.{_NUMBER}(?:\.{_NUMBER})?\Z")


def check_version(value: str | None) -> VersionNotSupportedError | None:
    """The error for an ``A2A-Version`` value the server does not serve, else ``None``.

    Args:
        value: The header (or query parameter) value; ``None`` or blank means 0.3 (spec 3.6.2).

    Returns:
        ``None`` for 1.0 (any patch number), else the -32009 error naming the versions served.
    """
    text = (value or "").strip() or ABSENT_VERSION
    match = _HEADER_VERSION.match(text)
    if match is not None and f"{int(match[1])}.{int(match[2])}" in SUPPORTED_VERSIONS:
        return None
    served = ", ".join(SUPPORTED_VERSIONS)
    return VersionNotSupportedError(
        f"A2A-Version {text[:40]!r} is not supported; this server serves {served}",
        metadata={"requestedVersion": text[:40], "supportedVersions": served},
    )


def version_matches(offered: str, wanted: str = PROTOCOL_VERSION) -> bool:
    """Compare protocol versions by major.minor only (spec 3.6, 8.3.2).

    Args:
        offered: A card's ``protocolVersion``, e.g. ``"1.0"`` or ``"1.0.3"``.
        wanted: The version spoken, ``"major.minor"``.

    Returns:
        Whether the first two dot-separated parts are the same numbers.
    """
    parts = offered.strip().split(".")
    want = wanted.split(".")[:2]
    if len(parts) < 2 or not all(p.isascii() and p.isdigit() for p in parts[:2]):
        return False
    return [int(p) for p in parts[:2]] == [int(w) for w in want]


def parse_extensions(value: str | None) -> tuple[str, ...]:
    """The extension URIs of an ``A2A-Extensions`` header (comma-separated, spec 3.2.6).

    Args:
        value: The header value, or ``None`` when absent.

    Returns:
        The non-blank URIs, stripped, in the order given (duplicates kept).
    """
    if not value:
        return ()
    return tuple(uri for part in value.split(",") if (uri := part.strip()))


def join_extensions(uris: Sequence[str]) -> str:
    """The ``A2A-Extensions`` value naming ``uris`` (the inverse of :func:`parse_extensions`)."""
    return ",".join(uris)


ANY_ORIGIN = "*"
"""The CORS wildcard: every origin may call."""


def normalize_origin(text: str) -> str:
    """An origin as a browser sends it in ``Origin``: ``scheme://host[:port]``.

    Args:
        text: ``"*"``, or an ``http``/``https`` URL without user information, path, query or
            fragment.

    Returns:
        ``"*"``, or the origin with scheme and host in lower case and a default port left out
        (a trailing ``/`` is dropped).

    Raises:
        ValueError: ``text`` is neither.
    """
    if text == ANY_ORIGIN:
        return text
    try:
        url = yarl.URL(text)
    except ValueError:
        url = None
    if (
        url is None
        or url.scheme not in ("http", "https")
        or not url.raw_host
        or url.raw_user is not None
        or url.raw_path not in ("", "/")
        or url.raw_query_string
        or url.raw_fragment
    ):
        raise ValueError(f"{text[:100]!r} is not an origin scheme://host[:port] (or '*')")
    return str(url.origin())
