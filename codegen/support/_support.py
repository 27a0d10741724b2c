"""Codec support shared by the generated classes: ProtoJSON scalars, JSON values, errors.

The rules kept here (each has a test in ``tests/generated``):

* Decoding is lenient in what it ignores (unknown keys, ``null`` for an unset field) and strict in
  what it accepts: a value of the wrong type raises :class:`DecodeError` carrying a field path.
* 32-bit integers accept numbers, integral floats and decimal strings; 64-bit integers are written
  as strings. Out-of-range values are errors.
* ``bytes`` are written as standard padded base64 and read as standard or URL-safe, padded or not.
* ``Struct``, ``Value`` and ``ListValue`` are plain JSON, checked without recursion against
  :data:`JSON_DEPTH_LIMIT` so that whatever decodes can always be encoded again.

Timestamps, enums and value reprs are in the sibling module ``_values``.

The root of the library's exception tree, :class:`A2AError`, is defined here rather than in
``a2a_wire.errors`` because generated code imports only the standard library and
:class:`DecodeError` must derive from it; ``a2a_wire.errors`` re-exports the same class object
and draws the whole tree.
"""

from __future__ import annotations

import binascii
import enum
import math
import re
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Final, Protocol, Self, TypeVar

T = TypeVar("T")

JSON_DEPTH_LIMIT: int = 100
"""Deepest nesting of objects and arrays accepted inside a ``Struct``, ``Value`` or ``ListValue``."""


class UnsetType(enum.Enum):
    """Type of :data:`UNSET`, the marker of an absent ``google.protobuf.Value`` field."""

    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final = UnsetType.UNSET


class A2AError(Exception):
    """Root of every error a2a-wire raises (the tree is drawn in ``a2a_wire.errors``). Abstract.

    A class is abstract when its own body sets ``_abstract = True``; it then refuses direct
    instantiation with ``TypeError``, and its subclasses do not inherit the flag.
    """

    _abstract: ClassVar[bool] = True

    def __init__(self, *args: object) -> None:
        if type(self).__dict__.get("_abstract", False):
            raise TypeError(f"{type(self).__name__} is abstract; raise a subclass")
        super().__init__(*args)


class DecodeError(A2AError):
    """A JSON value does not fit the message it is decoded into.

    Attributes:
        reason: What is wrong, without the location.
        path: Where, as JSON field names from the decoded root (``message.parts[0].raw``);
            empty when the root itself is wrong.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self._segments: list[str] = []

    def under(self, segment: str) -> DecodeError:
        """Prefix the path with a field name or an ``[index]`` and return ``self``."""
        if segment:
            self._segments.append(segment)
        return self

    @property
    def path(self) -> str:
        """The field path, outermost first."""
        out = ""
        for segment in reversed(self._segments):
            out += segment if segment.startswith("[") or not out else "." + segment
        return out

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}" if self._segments else self.reason


class ProtoMessage(Protocol):
    """What every generated message class offers."""

    @classmethod
    def from_dict(cls, obj: object) -> Self: ...

    def to_dict(self) -> dict[str, Any]: ...

    def missing_fields(self, prefix: str = "", out: list[str] | None = None) -> list[str]: ...


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def wrong_type(value: object, expected: str) -> DecodeError:
    """Build the error for ``value`` where ``expected`` was wanted."""
    return DecodeError(f"expected {expected}, got {_describe(value)}")


def dec_str(value: object) -> str:
    """Decode a JSON string."""
    if type(value) is not str:
        raise wrong_type(value, "string")
    return value


def dec_bool(value: object) -> bool:
    """Decode a JSON boolean."""
    if type(value) is not bool:
        raise wrong_type(value, "boolean")
    return value


_INT_TEXT = re.compile(r"-?[0-9]{1,20}\Z")


def _dec_int(value: object, low: int, high: int, what: str) -> int:
    kind = type(value)
    if kind is int:
        number: int = value  # type: ignore[assignment]
    elif kind is float:
        if not value.is_integer():  # type: ignore[attr-defined]
            raise DecodeError(f"expected {what}, got a non-integral number")
        number = int(value)  # type: ignore[call-overload]
    elif kind is str:
        if not _INT_TEXT.match(value):  # type: ignore[call-overload]
            raise DecodeError(f"expected {what}, got a string that is not a decimal integer")
        number = int(value)  # type: ignore[call-overload]
    else:
        raise wrong_type(value, what)
    if not low <= number <= high:
        raise DecodeError(f"{what} out of range [{low}, {high}]")
    return number


def dec_int32(value: object) -> int:
    """Decode an int32 from a number or a decimal string."""
    return _dec_int(value, -(2**31), 2**31 - 1, "int32")


def dec_uint32(value: object) -> int:
    """Decode a uint32 from a number or a decimal string."""
    return _dec_int(value, 0, 2**32 - 1, "uint32")


def dec_int64(value: object) -> int:
    """Decode an int64 from a decimal string or a number."""
    return _dec_int(value, -(2**63), 2**63 - 1, "int64")


def dec_uint64(value: object) -> int:
    """Decode a uint64 from a decimal string or a number."""
    return _dec_int(value, 0, 2**64 - 1, "uint64")


_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def dec_double(value: object) -> float:
    """Decode a double from a number, a numeric string or ``NaN``/``Infinity``/``-Infinity``."""
    if type(value) is float or type(value) is int:
        return float(value)
    if type(value) is str:
        special = _SPECIAL_FLOATS.get(value)
        if special is not None:
            return special
        try:
            number = float(value)
        except ValueError:
            raise DecodeError("expected double, got a string that is not a number") from None
        if math.isfinite(number):
            return number
    raise wrong_type(value, "double")


def enc_double(value: float) -> float | str:
    """Encode a double, writing non-finite values as their ProtoJSON strings."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def enc_int64(value: int) -> str:
    """Encode a 64-bit integer as a decimal string."""
    return str(value)


def dec_bytes(value: object) -> bytes:
    """Decode standard or URL-safe base64, padded or not."""
    if type(value) is not str:
        raise wrong_type(value, "base64 string")
    text = value.rstrip("=")
    if "-" in text or "_" in text:
        text = text.replace("-", "+").replace("_", "/")
    try:
        return binascii.a2b_base64(text + "=" * (-len(text) % 4), strict_mode=True)
    except (binascii.Error, ValueError):
        raise DecodeError("invalid base64") from None


def enc_bytes(value: bytes) -> str:
    """Encode bytes as standard padded base64."""
    return binascii.b2a_base64(value, newline=False).decode("ascii")


def _check_json(value: Any, what: str) -> None:
    """Check a JSON tree without recursion: JSON types only, finite numbers, bounded depth."""
    limit = JSON_DEPTH_LIMIT
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise DecodeError(f"{what} nests deeper than {limit} levels")
        if type(node) is dict:
            for key, item in node.items():
                if type(key) is not str:
                    raise DecodeError(f"{what} has a non-string key")
                if type(item) is dict or type(item) is list:
                    stack.append((item, depth + 1))
                else:
                    _check_scalar(item, what)
        else:
            for item in node:
                if type(item) is dict or type(item) is list:
                    stack.append((item, depth + 1))
                else:
                    _check_scalar(item, what)


def _check_scalar(item: object, what: str) -> None:
    kind = type(item)
    if kind is str or kind is bool or item is None:
        return
    if kind is int:
        if not -(2**63) <= item < 2**64:  # type: ignore[operator]
            raise DecodeError(f"{what} holds an integer beyond 64 bits")
        return
    if kind is float:
        if not math.isfinite(item):  # type: ignore[arg-type]
            raise DecodeError(f"{what} holds a non-finite number")
        return
    raise DecodeError(f"{what} holds a {_describe(item)}, which is not JSON")


def dec_struct(value: object) -> dict[str, Any]:
    """Decode a ``google.protobuf.Struct``: a JSON object, kept as it is."""
    if type(value) is not dict:
        raise wrong_type(value, "object")
    _check_json(value, "Struct")
    return value


def dec_list_value(value: object) -> list[Any]:
    """Decode a ``google.protobuf.ListValue``: a JSON array, kept as it is."""
    if type(value) is not list:
        raise wrong_type(value, "array")
    _check_json(value, "ListValue")
    return value


def dec_value(value: object) -> Any:
    """Decode a ``google.protobuf.Value``: any JSON value, ``null`` included."""
    if type(value) is dict or type(value) is list:
        _check_json(value, "Value")
    else:
        _check_scalar(value, "Value")
    return value


def dec_list(value: object, decode: Callable[[object], T]) -> list[T]:
    """Decode a JSON array element by element; an error names the element's index."""
    if type(value) is not list:
        raise wrong_type(value, "array")
    out: list[T] = []
    append = out.append
    index = 0
    try:
        for index, item in enumerate(value):  # noqa: B007 - index is read by the handler
            append(decode(item))
    except DecodeError as exc:
        raise exc.under(f"[{index}]") from None
    return out


def dec_map(value: object, decode: Callable[[object], T]) -> dict[str, T]:
    """Decode a JSON object of values; an error names the key."""
    if type(value) is not dict:
        raise wrong_type(value, "object")
    out: dict[str, T] = {}
    key = ""
    try:
        for key, item in value.items():
            out[key] = decode(item)
    except DecodeError as exc:
        raise exc.under(f"[{key!r}]") from None
    return out


def oneof_error(group: str, members: Iterable[str], present: Iterable[bool]) -> DecodeError:
    """Build the error for a oneof with more than one member set, naming the members that are."""
    names = [name for name, is_set in zip(members, present, strict=True) if is_set]
    return DecodeError(f"more than one member of oneof {group} is set: {', '.join(names)}")
