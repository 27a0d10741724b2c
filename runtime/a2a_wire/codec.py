"""JSON text <-> A2A value classes (the ProtoJSON mapping of spec section 5).

Parsing is strict JSON (orjson): ``NaN``/``Infinity`` literals, invalid UTF-8 and lone surrogates
are rejected as :class:`JSONSyntaxError`, so everything that decodes can be encoded again. The
mapping itself lives in the generated classes; see ``docs/codec.md`` for its rules. The codec's
errors are part of the tree drawn in :mod:`a2a_wire.errors`.

Numbers: :func:`loads` reads an integer within 64 bits as ``int`` and every other number (a
fraction, an exponent, an integer beyond 64 bits) as a ``float``, which may not give the same text
back. :func:`loads_exact` keeps those as :class:`JSONNumber`, the exact text, which :func:`dumps`
writes unchanged (the JSON-RPC layer uses it for request ids, which must be echoed as sent).
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

import orjson

from a2a_wire._generated import _support
from a2a_wire._generated._support import UNSET, A2AError, DecodeError, ProtoMessage, UnsetType

__all__ = [
    "UNSET",
    "DecodeError",
    "EncodeError",
    "JSONNumber",
    "JSONSyntaxError",
    "ProtoMessage",
    "UnsetType",
    "decode",
    "dumps",
    "encode",
    "json_depth_limit",
    "loads",
    "loads_exact",
    "set_json_depth_limit",
]

M = TypeVar("M", bound=ProtoMessage)

#: orjson refuses to write more than 254 levels; leave room for the envelope around a value.
MAX_JSON_DEPTH_LIMIT = 200
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")  # RFC 8259 section 6
_INT_RANGE = range(-(2**63), 2**64)  # the integers orjson reads exactly


class JSONSyntaxError(A2AError, ValueError):
    """The text is not strict JSON (RFC 8259 without NaN/Infinity, valid UTF-8, no lone surrogates)."""


class EncodeError(A2AError, ValueError):
    """A value cannot be written as JSON (a lone surrogate, an integer beyond 64 bits, ...)."""


class JSONNumber:
    """A JSON number kept as the exact text it was read as; :func:`dumps` writes that text.

    Not a dataclass on purpose: orjson would write a dataclass as an object.

    Args:
        text: The number as it appeared in the JSON text (RFC 8259 section 6 syntax).

    Raises:
        ValueError: ``text`` is not a JSON number.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        if not _NUMBER.fullmatch(text):
            raise ValueError(f"not a JSON number: {text[:40]!r}")
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JSONNumber) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"JSONNumber({self.text!r})"


def _exact_int(text: str) -> int | JSONNumber:
    value = int(text)
    return value if value in _INT_RANGE else JSONNumber(text)


def _refuse_constant(name: str) -> Any:
    raise JSONSyntaxError(f"{name} is not JSON")


def _write_number(value: Any) -> Any:
    """The ``default`` hook of orjson: a :class:`JSONNumber` is written as its text."""
    if isinstance(value, JSONNumber):
        return orjson.Fragment(value.text.encode())
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse JSON text into plain Python values.

    Raises:
        JSONSyntaxError: the text is not strict JSON, or nests deeper than 1024 levels.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise JSONSyntaxError(str(exc)) from None


def loads_exact(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse JSON text like :func:`loads`, keeping the exact text of numbers a float would alter.

    Integers within 64 bits are ``int`` as with :func:`loads`; every other number is a
    :class:`JSONNumber`. Slower than :func:`loads` (the text is parsed twice, the second time by
    the standard library), so it is meant for the rare text that needs it.

    Raises:
        JSONSyntaxError: the text is not strict JSON, or nests too deeply for the second parse.
    """
    loads(data)  # the strict rules (UTF-8, surrogates, NaN, depth) are orjson's
    text = data if isinstance(data, str) else bytes(data).decode("utf-8")
    try:
        return json.loads(
            text,
            parse_float=JSONNumber,
            parse_int=_exact_int,
            parse_constant=_refuse_constant,
        )
    except RecursionError:
        raise JSONSyntaxError("JSON text nests too deeply") from None


def dumps(value: Any) -> bytes:
    """Write plain Python values (and :class:`JSONNumber`) as compact UTF-8 JSON.

    The bytes hold no more memory than their length. (orjson 3.12 and later hand out their
    write buffer as it is: at least 4 KiB, and a power of two above that, whatever the length
    of the JSON. Stores and caches keep this output, one snapshot and event after another, so it
    is copied once here: about 0.1 µs for a small event.)

    Raises:
        EncodeError: a value has no JSON form.
    """
    try:
        return _join((orjson.dumps(value, default=_write_number), b""))
    except orjson.JSONEncodeError as exc:
        raise EncodeError(str(exc)) from None


_join = b"".join  # of two items: always a new bytes object of exactly their length


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
