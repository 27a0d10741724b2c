"""The text codec of the PostgreSQL store's connections: strings holding U+0000 stored anyway.

PostgreSQL's ``text`` cannot hold U+0000, which a JSON string may; the codec maps it one to one,
keeping every ordinary string as it is and code-point order intact. See docs/internals/store.md,
"PostgreSQL: U+0000 in text".
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
