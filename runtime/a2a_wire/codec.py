"""JSON text <-> A2A value classes (the ProtoJSON mapping of spec section 5).

Parsing is strict JSON (orjson): ``NaN``/``Infinity`` literals, invalid UTF-8 and lone surrogates
are rejected as :class:`JSONSyntaxError`, so everything that decodes can be encoded again. The
mapping itself lives in the generated classes; see ``docs/codec.md`` for its rules. The codec's
errors are part of the tree drawn in :mod:`a2a_wire.errors`.
"""

from __future__ import annotations

from typing import Any, TypeVar

import orjson

from a2a_wire._generated import _support
from a2a_wire._generated._support import UNSET, A2AError, DecodeError, ProtoMessage, UnsetType

__all__ = [
    "UNSET",
    "DecodeError",
    "EncodeError",
    "JSONSyntaxError",
    "ProtoMessage",
    "UnsetType",
    "decode",
    "dumps",
    "encode",
    "json_depth_limit",
    "loads",
    "set_json_depth_limit",
]

M = TypeVar("M", bound=ProtoMessage)

#: orjson refuses to write more than 254 levels; leave room for the envelope around a value.
MAX_JSON_DEPTH_LIMIT = 200


class JSONSyntaxError(A2AError, ValueError):
    """The text is not strict JSON (RFC 8259 without NaN/Infinity, valid UTF-8, no lone surrogates)."""


class EncodeError(A2AError, ValueError):
    """A value cannot be written as JSON (a lone surrogate, an integer beyond 64 bits, ...)."""


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse JSON text into plain Python values.

    Raises:
        JSONSyntaxError: the text is not strict JSON, or nests deeper than 1024 levels.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise JSONSyntaxError(str(exc)) from None


def dumps(value: Any) -> bytes:
    """Write plain Python values as compact UTF-8 JSON.

    Raises:
        EncodeError: a value has no JSON form.
    """
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError as exc:
        raise EncodeError(str(exc)) from None


def decode(cls: type[M], data: bytes | bytearray | memoryview | str) -> M:
    """Decode JSON text into an instance of the message class ``cls``.

    Raises:
        JSONSyntaxError: not strict JSON.
        DecodeError: the JSON does not fit ``cls``; ``path`` names the field.
    """
    return cls.from_dict(loads(data))


def encode(message: ProtoMessage) -> bytes:
    """Encode a message as ProtoJSON text (UTF-8 bytes).

    Raises:
        EncodeError: a value has no JSON form.
    """
    try:
        obj = message.to_dict()
    except ValueError as exc:  # a Timestamp outside years 1..9999
        raise EncodeError(str(exc)) from None
    return dumps(obj)


def json_depth_limit() -> int:
    """Deepest nesting accepted inside ``Struct``/``Value``/``ListValue`` fields."""
    return _support.JSON_DEPTH_LIMIT


def set_json_depth_limit(levels: int) -> None:
    """Set the nesting limit for ``Struct``/``Value``/``ListValue`` fields (1 to 200; default 100).

    Raises:
        ValueError: ``levels`` is outside 1..200 (deeper values could not be written back).
    """
    if not 1 <= levels <= MAX_JSON_DEPTH_LIMIT:
        raise ValueError(f"JSON depth limit must be within 1..{MAX_JSON_DEPTH_LIMIT}")
    _support.JSON_DEPTH_LIMIT = levels
