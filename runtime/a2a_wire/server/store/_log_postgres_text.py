"""Text values with NUL characters in the PostgreSQL store's ``text`` columns.

A JSON string may hold U+0000, so a context id a client sends, an owner or a push config id
may too, but PostgreSQL's ``text`` cannot store it: the statement fails. Every connection of the store's pool therefore reads and writes
``text`` through :func:`escape` and :func:`unescape` (:func:`setup_connection`, asyncpg's type
codec for ``text``):

* U+0001 becomes U+0001 U+0002 and U+0000 becomes U+0001 U+0001. The mapping is one to one, and
  leaves every string without either character as it is (the constants of the statements, the
  states, all ordinary ids): the columns keep the values a human reads.
* It keeps code-point order (U+0000 before U+0001 before U+0002, and a string after its
  prefixes), which the listing's tie-break on the id relies on under the ``C`` collation.

Notification payloads are not decoded by asyncpg's codecs: the listener applies
:func:`unescape` itself (:mod:`._log_postgres_listen`). The bodies (``bytea``) are not affected.
"""

from __future__ import annotations

from typing import Any

__all__ = ["escape", "setup_connection", "unescape"]


def escape(value: str) -> str:
    """``value`` without U+0000, one to one and order-preserving (see the module docstring)."""
    if "\x00" not in value and "\x01" not in value:
        return value
    return value.replace("\x01", "\x01\x02").replace("\x00", "\x01\x01")


def unescape(value: str) -> str:
    """The string :func:`escape` made ``value`` from."""
    if "\x01" not in value:
        return value
    # Each U+0001 of an escaped string starts a pair, so a left-to-right scan stays aligned.
    return value.replace("\x01\x01", "\x00").replace("\x01\x02", "\x01")


async def setup_connection(conn: Any) -> None:
    """Make a new pool connection read and write ``text`` through :func:`escape` (pool ``init``)."""
    await conn.set_type_codec(
        "text", schema="pg_catalog", encoder=escape, decoder=unescape, format="text"
    )
