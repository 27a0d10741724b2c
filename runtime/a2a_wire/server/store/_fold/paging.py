"""One page-size rule and one signed page-token scheme for every paged method.

A token is a position with an HMAC tag over it and its scope (method, caller, filters), so a
client can neither forge a position nor reuse a token elsewhere; the key belongs to the store
instance. See docs/internals/store.md, "Page sizes and page tokens".
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from typing import Any

from a2a_wire import codec
from a2a_wire.errors import InvalidParamsError
from a2a_wire.methods import Method

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "MAX_PAGE_TOKEN_LENGTH",
    "PAGE_TOKEN_KEY_BYTES",
    "PageTokens",
    "Position",
    "check_page_size",
    "page_size",
    "page_scope",
]

DEFAULT_PAGE_SIZE = 50
"""Page size when the request names none (proto ``ListTasksRequest.page_size``)."""

MAX_PAGE_SIZE = 100
"""Largest page size a request may ask for (proto ``ListTasksRequest.page_size``)."""

MAX_PAGE_TOKEN_LENGTH = 4096
"""Longest page token read; anything longer is rejected without decoding it."""

PAGE_TOKEN_KEY_BYTES = 32
"""Length of the random HMAC key a store makes when none is given."""

_MAC_BYTES = 16

Position = tuple[int | str, ...]
"""Where a page ends: the sort key of its last item, as JSON numbers and strings."""


def page_size(requested: int | None) -> int:
    """The page size a request asks for, by the rule of the module docstring.

    Args:
        requested: The request's ``pageSize``; ``None`` when it names none.

    Returns:
        :data:`DEFAULT_PAGE_SIZE` for ``None``, else ``requested``.

    Raises:
        InvalidParamsError: ``requested`` is outside 1 to :data:`MAX_PAGE_SIZE`.
    """
    size = DEFAULT_PAGE_SIZE if requested is None else requested
    if not 1 <= size <= MAX_PAGE_SIZE:
        raise InvalidParamsError(
            f"pageSize must be within 1..{MAX_PAGE_SIZE}",
            violations=[("pageSize", f"must be within 1..{MAX_PAGE_SIZE}")],
        )
    return size


def check_page_size(size: int) -> None:
    """Reject a page size the handler should have refused (a store's guard against bugs).

    Raises:
        ValueError: ``size`` is outside 1 to :data:`MAX_PAGE_SIZE`.
    """
    if not 1 <= size <= MAX_PAGE_SIZE:
        raise ValueError(f"page_size must be within 1..{MAX_PAGE_SIZE}, not {size}")


def page_scope(method: Method[Any, Any], *parts: Any) -> bytes:
    """What a token is bound to besides its position: the method, then caller and filters.

    Args:
        method: The list method the token pages.
        parts: JSON values: the owner, then the request's filters.

    Returns:
        The bytes the tag covers.
    """
    return codec.dumps([method.name, *parts])


class PageTokens:
    """Issues and checks the signed page tokens of both list methods.

    Args:
        key: The HMAC key; a random :data:`PAGE_TOKEN_KEY_BYTES`-byte key when ``None``. Pass the
            same key to a new store to keep tokens valid across restarts.
    """

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key if key is not None else secrets.token_bytes(PAGE_TOKEN_KEY_BYTES)

    def _tag(self, scope: bytes, payload: bytes) -> bytes:
        signed = len(scope).to_bytes(4, "big") + scope + payload
        return hmac.new(self._key, signed, hashlib.sha256).digest()[:_MAC_BYTES]

    def issue(self, position: Position, scope: bytes) -> str:
        """The token for the page after ``position``, valid only with ``scope``."""
        payload = codec.dumps(list(position))
        raw = payload + self._tag(scope, payload)
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    def read(self, token: str, scope: bytes) -> Position:
        """The position a token names, as it was issued.

        Raises:
            InvalidParamsError: the token is malformed, was not issued by this key, or was
                issued for another scope (method, owner or filters).
        """
        invalid = InvalidParamsError(
            "Invalid page token",
            violations=[("pageToken", "not a token issued for this query by this server")],
        )
        if len(token) > MAX_PAGE_TOKEN_LENGTH or not token.isascii():
            raise invalid
        try:
            raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True)
        except (binascii.Error, ValueError):
            raise invalid from None
        payload, tag = raw[:-_MAC_BYTES], raw[-_MAC_BYTES:]
        if not payload or not hmac.compare_digest(tag, self._tag(scope, payload)):
            raise invalid
        return tuple(codec.loads(payload))  # our own JSON: the tag matched
