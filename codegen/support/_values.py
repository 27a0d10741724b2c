"""Codec support for the generated classes: timestamps, enums and bounded reprs.

The rules kept here (each has a test in ``tests/generated``):

* ``Timestamp`` is written in UTC with ``Z`` and 0, 3, 6 or 9 fractional digits; offsets and up to
  nine fractional digits are read.
* An enum value this version does not know is kept as a distinct member that is not one of the
  declared ones and encodes back to the same string or number.
* A repr shows at most a bounded number of characters and items, so logging a large message
  stays cheap.
"""

from __future__ import annotations

import copy
import datetime
import enum
import re
from collections.abc import Iterable
from typing import Any, TypeVar

from ._support import DecodeError, wrong_type

E = TypeVar("E", bound="ProtoEnum")
T = TypeVar("T")

# Timestamps: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z, as protobuf allows.
_EPOCH = datetime.datetime(1970, 1, 1)
_MIN_SECONDS = -62135596800
_MAX_SECONDS = 253402300799
_TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]{1,9}))?(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))\Z"
)


_MEMO_SIZE = 256
"""Most entries each timestamp memo keeps; a full memo is emptied and starts again."""

# Memos of the whole-second part, keyed by its text (parse) or its seconds (format): under load
# most timestamps fall in a few recent seconds, and the datetime arithmetic is most of the cost.
# Only pure results are kept (ints and strings), so a hit returns what the full path would.
_PARSED: dict[str, int] = {}
_FORMATTED: dict[int, str] = {}


def _remember(memo: dict[Any, Any], key: object, value: object) -> None:
    if len(memo) >= _MEMO_SIZE:
        memo.clear()
    memo[key] = value


def parse_timestamp(value: object) -> tuple[int, int]:
    """Parse an RFC 3339 timestamp into (seconds since the epoch, nanoseconds)."""
    if type(value) is not str:
        raise wrong_type(value, "RFC 3339 timestamp string")
    seconds = _PARSED.get(value[:19])
    if seconds is not None:
        rest = value[19:]
        if rest in ("Z", "z"):
            return seconds, 0
        digits = rest[1:-1]
        if (
            rest[:1] == "."
            and rest[-1:] in ("Z", "z")
            and 0 < len(digits) <= 9
            and digits.isascii()
            and digits.isdigit()
        ):
            return seconds, int(digits.ljust(9, "0"))
    match = _TIMESTAMP.match(value)
    if match is None:
        raise DecodeError("invalid RFC 3339 timestamp")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    try:
        moment = datetime.datetime(year, month, day, hour, minute, second)
    except ValueError:
        raise DecodeError("invalid date or time in timestamp") from None
    seconds = (moment - _EPOCH) // datetime.timedelta(seconds=1)
    fraction, sign, off_hours, off_minutes = match.groups()[6:]
    if sign is not None:
        if int(off_hours) > 23 or int(off_minutes) > 59:
            raise DecodeError("invalid UTC offset in timestamp")
        offset = int(off_hours) * 3600 + int(off_minutes) * 60
        seconds -= offset if sign == "+" else -offset
    if not _MIN_SECONDS <= seconds <= _MAX_SECONDS:
        raise DecodeError("timestamp out of range")
    if sign is None:
        _remember(_PARSED, value[:19], seconds)
    return seconds, int(fraction.ljust(9, "0")) if fraction else 0


def format_timestamp(seconds: int, nanos: int) -> str:
    """Format (seconds, nanoseconds) as RFC 3339 in UTC with ``Z``.

    Raises:
        ValueError: the instant is outside years 1 to 9999 or ``nanos`` is outside [0, 1e9).
    """
    if not _MIN_SECONDS <= seconds <= _MAX_SECONDS or not 0 <= nanos < 1_000_000_000:
        raise ValueError(f"timestamp out of range: seconds={seconds} nanos={nanos}")
    text = _FORMATTED.get(seconds)
    if text is None:
        moment = _EPOCH + datetime.timedelta(seconds=seconds)
        text = (
            f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
            f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
        )
        _remember(_FORMATTED, seconds, text)
    if nanos == 0:
        return text + "Z"
    if nanos % 1_000_000 == 0:
        return f"{text}.{nanos // 1_000_000:03d}Z"
    if nanos % 1000 == 0:
        return f"{text}.{nanos // 1000:06d}Z"
    return f"{text}.{nanos:09d}Z"


def copy_instance(obj: T) -> T:
    """A shallow copy of an instance of a subclass of a generated class, as ``copy.copy`` makes.

    The generated classes copy their own fields directly (``__copy__``, which ``copy.copy``
    calls; the pickle protocol it otherwise goes through costs a few microseconds); an instance
    of a subclass gets every slot of its class and its bases, and its ``__dict__``.
    """
    cls = type(obj)
    new = cls.__new__(cls)
    for klass in cls.__mro__:
        for name in klass.__dict__.get("__slots__", ()):
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                setattr(new, name, getattr(obj, name))
    if hasattr(obj, "__dict__"):
        new.__dict__.update(obj.__dict__)
    return new


class ProtoEnum(enum.Enum):
    """Base of the generated enums: declared members plus unknown values kept as they came.

    A value this version does not declare (a name from a newer proto, or an unassigned number)
    becomes a member-like instance that is not among the declared members, compares equal only to
    an instance of the same value, and encodes back to that value.
    """

    @classmethod
    def _missing_(cls, value: object) -> Any:
        if type(value) is int and value in _NUMBERS_TO_MEMBERS.get(cls, {}):
            return _NUMBERS_TO_MEMBERS[cls][value]
        if (type(value) is int and -(2**31) <= value < 2**31) or type(value) is str:
            unknown = object.__new__(cls)
            unknown._value_ = value
            unknown._name_ = str(value)
            return unknown
        return None

    @property
    def is_known(self) -> bool:
        """Whether this is one of the members the pinned proto declares."""
        return type(self)._member_map_.get(self._name_) is self

    @property
    def number(self) -> int | None:
        """The proto tag number, or ``None`` for an unknown name."""
        if type(self._value_) is int:
            return self._value_
        return _NAMES_TO_NUMBERS[type(self)].get(self._value_)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is type(self):
            return bool(self._value_ == other._value_)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._value_)

    def __repr__(self) -> str:
        if self.is_known:
            return f"<{type(self).__name__}.{self._name_}>"
        return f"<{type(self).__name__} unknown {self._value_!r}>"


_NAMES_TO_NUMBERS: dict[type[ProtoEnum], dict[str, int]] = {}
_NUMBERS_TO_MEMBERS: dict[type[ProtoEnum], dict[object, Any]] = {}


def deepcopy_instance(obj: T, memo: dict[int, Any] | None) -> T:
    """A deep copy of an instance of a subclass of a generated class, as ``copy.deepcopy`` makes.

    The generated classes copy their own fields (``__deepcopy__``); an instance of a subclass
    gets a deep copy of every slot of its class and its bases, and of its ``__dict__``.
    """
    memo = {} if memo is None else memo
    cls = type(obj)
    new = cls.__new__(cls)
    for klass in cls.__mro__:
        for name in klass.__dict__.get("__slots__", ()):
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                setattr(new, name, copy.deepcopy(getattr(obj, name), memo))
    if hasattr(obj, "__dict__"):
        new.__dict__.update(copy.deepcopy(obj.__dict__, memo))
    return new


def copy_json(value: Any) -> Any:
    """A deep copy of a plain JSON value (a ``Struct``, ``Value`` or ``ListValue`` field).

    Dicts and lists are copied, strings, numbers, booleans, ``None`` and ``UNSET`` kept; any
    other object goes to ``copy.deepcopy``.
    """
    kind = type(value)
    if kind is dict:
        return {key: copy_json(item) for key, item in value.items()}
    if kind is list:
        return [copy_json(item) for item in value]
    if kind in _IMMUTABLE or isinstance(value, enum.Enum):
        return value
    return copy.deepcopy(value)


_IMMUTABLE = frozenset({str, int, float, bool, type(None), bytes})


def register_enum(cls: type[E], numbers: dict[str, int]) -> dict[object, E]:
    """Record the tag numbers of ``cls`` and return its decode table (wire names and numbers)."""
    table: dict[object, E] = {member.value: member for member in cls}
    by_number: dict[object, E] = {number: table[name] for name, number in numbers.items()}
    _NAMES_TO_NUMBERS[cls] = numbers
    _NUMBERS_TO_MEMBERS[cls] = by_number
    table.update(by_number)
    return table


def dec_enum(value: object, table: dict[object, E], cls: type[E]) -> E:
    """Decode an enum from its wire name or number; unknown values are kept (see ProtoEnum)."""
    if type(value) is str or type(value) is int:
        member = table.get(value)
        if member is not None:
            return member
        if type(value) is str or -(2**31) <= value < 2**31:  # type: ignore[operator]
            return cls(value)
    raise wrong_type(value, f"{cls.__name__} name or number")


def enc_enum(value: ProtoEnum) -> str | int:
    """Encode an enum as its wire name (or the number it came as, for an unknown number)."""
    return value._value_  # type: ignore[no-any-return]


_REPR_TEXT = 80
_REPR_ITEMS = 5
_REPR_TOTAL = 1000


def _short(value: object) -> str:
    if type(value) is str or type(value) is bytes:
        if len(value) <= _REPR_TEXT:
            return repr(value)
        return (
            f"{value[:_REPR_TEXT]!r}...({len(value)} {'chars' if type(value) is str else 'bytes'})"
        )
    if type(value) is list:
        shown = ", ".join(_short(item) for item in value[:_REPR_ITEMS])
        more = len(value) - _REPR_ITEMS
        return f"[{shown}, ...(+{more})]" if more > 0 else f"[{shown}]"
    if type(value) is dict:
        items = list(value.items())
        shown = ", ".join(f"{_short(k)}: {_short(v)}" for k, v in items[:_REPR_ITEMS])
        more = len(items) - _REPR_ITEMS
        return f"{{{shown}, ...(+{more})}}" if more > 0 else f"{{{shown}}}"
    return repr(value)


def message_repr(name: str, fields: Iterable[tuple[str, object, object]]) -> str:
    """Repr of a message showing every field that is set, bounded in length."""
    body = ", ".join(f"{key}={_short(value)}" for key, value, shown in fields if shown)
    text = f"{name}({body})"
    if len(text) > _REPR_TOTAL:
        return f"{text[:_REPR_TOTAL]}...({len(text)} chars)"
    return text
