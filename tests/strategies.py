"""Hypothesis strategies for every generated class, derived from the proto's IR, not written by hand.

The IR comes from the same pipeline as ``generated/`` (:func:`codegen.descriptors.compile_proto`
then :func:`codegen.build.build`), so a new field in the proto is exercised without editing this
module. Generated values keep to what survives strict JSON: text without lone surrogates, finite
floats, integers inside Struct/Value within the double-safe range, timestamps in years 1 to 9999.
Each oneof has at most one member set. Message nesting is bounded by ``depth``; example sizes are
small so that the per-class property tests stay fast.

Besides values, the module offers IR-guided mutations of an encoded message (``to_dict`` output):
:func:`with_unknown_keys` adds keys the message does not know at any depth (never inside a Struct
or Value, where a key is data), and :func:`wrongly_typed` puts a value of the wrong JSON type at
one field and returns the path the :class:`DecodeError` must name.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from a2a_wire import types
from a2a_wire.codec import UNSET
from codegen import build, descriptors
from codegen.model import Field, Message, Module

PROTO = Path(__file__).resolve().parent.parent / "fixtures" / "a2a.proto"
DEFAULT_DEPTH = 4
TIMESTAMP_SECONDS = (-62135596800, 253402300799)
SAFE_INT = 2**53 - 1

Strategy = st.SearchStrategy[Any]


@functools.cache
def module() -> Module:
    """The IR of the pinned proto (compiled once per process)."""
    return build.build(descriptors.compile_proto(PROTO), "", "")


@functools.cache
def _messages_by_name() -> dict[str, Message]:
    return {m.name: m for m in module().messages}


def ir(name: str) -> Message:
    """The IR message called ``name``."""
    return _messages_by_name()[name]


def message_names() -> list[str]:
    """Names of every generated message class, Timestamp and Empty included, in IR order."""
    return [m.name for m in module().messages]


def enum_names() -> list[str]:
    """Names of every generated enum."""
    return [e.name for e in module().enums]


def cls(name: str) -> Any:
    """The generated class called ``name``."""
    return getattr(types, name)


# -- JSON values -----------------------------------------------------------------------------

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
json_scalars: Strategy = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-SAFE_INT, SAFE_INT),
    st.floats(allow_nan=False, allow_infinity=False),
    text,
)
json_values: Strategy = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
structs: Strategy = st.dictionaries(text, json_values, max_size=3)
list_values: Strategy = st.lists(json_values, max_size=3)
timestamps: Strategy = st.builds(
    types.Timestamp,
    seconds=st.integers(*TIMESTAMP_SECONDS),
    nanos=st.integers(0, 999_999_999),
)


# -- Enums -----------------------------------------------------------------------------------


@functools.cache
def enums(name: str, unknown: bool = True) -> Strategy:
    """Members of enum ``name``; with ``unknown``, also names and numbers the proto lacks."""
    enum_cls = cls(name)
    known = st.sampled_from(list(enum_cls))
    if not unknown:
        return known
    wire_names = {m.value for m in enum_cls}
    numbers = {m.number for m in enum_cls}
    prefix = next(iter(wire_names)).rsplit("_", 1)[0] + "_"
    new_names = (
        st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ_", min_size=1, max_size=10)
        .map(lambda rest: prefix + rest)
        .filter(lambda wire: wire not in wire_names)
    )
    new_numbers = st.integers(-(2**31), 2**31 - 1).filter(lambda n: n not in numbers)
    return known | st.one_of(new_names.map(enum_cls), new_numbers.map(enum_cls))


# -- Messages --------------------------------------------------------------------------------

_SCALARS: dict[str, Strategy] = {
    "string": text,
    "bool": st.booleans(),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "uint32": st.integers(0, 2**32 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
    "uint64": st.integers(0, 2**64 - 1),
    "double": st.floats(allow_nan=False, allow_infinity=False),
    "bytes": st.binary(max_size=16),
    "timestamp": timestamps,
    "struct": structs,
    "value": json_values,
    "listvalue": list_values,
}


def _element(f: Field, depth: int, unknown_enums: bool) -> Strategy | None:
    """One element of ``f``, or ``None`` when ``f`` is a message and the depth is used up."""
    if f.kind == "enum":
        return enums(f.element, unknown_enums)
    if f.kind == "message":
        return messages(f.element, depth - 1, unknown_enums) if depth > 0 else None
    return _SCALARS[f.kind]


def _field(f: Field, depth: int, unknown_enums: bool) -> Strategy:
    element = _element(f, depth, unknown_enums)
    if f.cardinality == "repeated":
        return st.just([]) if element is None else st.lists(element, max_size=2)
    if f.cardinality == "map":
        return st.just({}) if element is None else st.dictionaries(text, element, max_size=2)
    if element is None:
        return st.none()
    if f.presence == "value":
        return st.just(UNSET) | element
    if f.presence == "explicit":
        return st.none() | element
    return element


@functools.cache
def messages(name: str, depth: int = DEFAULT_DEPTH, unknown_enums: bool = True) -> Strategy:
    """Instances of the generated message class ``name``, nested at most ``depth`` levels.

    Args:
        name: Class name (``Task``, ``Timestamp``, ...).
        depth: How many levels of message fields may be set below this one.
        unknown_enums: Also draw enum values the proto does not declare (kept by our codec,
            refused by protobuf's json_format).
    """
    if name == "Timestamp":
        return timestamps
    msg = ir(name)
    plain = {f.py_name: _field(f, depth, unknown_enums) for f in msg.fields if not f.oneof}
    members = {f.py_name: f for f in msg.fields if f.oneof}

    @st.composite
    def draw_message(draw: st.DrawFn) -> Any:
        kwargs = {key: draw(strategy) for key, strategy in plain.items()}
        for group in msg.oneofs:
            chosen = draw(st.none() | st.sampled_from(group.members))
            if chosen is not None:
                element = _element(members[chosen], depth, unknown_enums)
                if element is not None:
                    kwargs[chosen] = draw(element)
        return cls(name)(**kwargs)

    return draw_message()


# -- Walking an encoded message --------------------------------------------------------------


def join_path(segments: tuple[str, ...]) -> str:
    """Join field names and ``[index]`` segments the way :attr:`DecodeError.path` does."""
    out = ""
    for segment in segments:
        out += segment if segment.startswith("[") or not out else "." + segment
    return out


def message_objects(
    name: str, obj: dict[str, Any], path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Message, dict[str, Any]]]:
    """Yield (path, IR message, JSON object) for ``obj`` and every message object inside it."""
    msg = ir(name)
    yield path, msg, obj
    for f in msg.fields:
        if f.kind != "message" or obj.get(f.json_name) is None:
            continue
        value = obj[f.json_name]
        here = (*path, f.json_name)
        if f.cardinality == "single":
            yield from message_objects(f.element, value, here)
        elif f.cardinality == "repeated":
            for i, item in enumerate(value):
                yield from message_objects(f.element, item, (*here, f"[{i}]"))
        else:
            for key, item in value.items():
                yield from message_objects(f.element, item, (*here, f"[{key!r}]"))


def known_keys(msg: Message) -> set[str]:
    """Every key ``msg`` reads: JSON names and proto names."""
    return {f.json_name for f in msg.fields} | {f.alt_name for f in msg.fields if f.alt_name}


@st.composite
def with_unknown_keys(draw: st.DrawFn, name: str, encoded: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``encoded`` with unknown keys added to some of its message objects."""
    out = copy.deepcopy(encoded)
    added = 0
    for _path, msg, obj in list(message_objects(name, out)):
        taken = known_keys(msg)
        extra = draw(st.dictionaries(text, json_values, max_size=2))
        extra = {key: value for key, value in extra.items() if key not in taken}
        added += len(extra)
        obj.update(extra)
    if added == 0:  # the root always gets at least one
        out[draw(text.filter(lambda key: key not in known_keys(ir(name))))] = draw(json_values)
    return out


_TOO_DEEP: list[Any] = []
for _ in range(300):
    _TOO_DEEP = [_TOO_DEEP]

# Non-null JSON values each kind refuses (null means "not set", so it is never wrong).
_WRONG: dict[str, list[Any]] = {
    "string": [0, 1.5, True, [], {}],
    "bool": ["true", 0, 1, [], {}],
    "int32": ["abc", "1.5", 1.5, True, [], {}, 2**31, -(2**31) - 1],
    "uint32": ["abc", 1.5, False, [], {}, -1, 2**32],
    "int64": ["abc", 1.5, True, [], {}, 2**63],
    "uint64": ["abc", 1.5, True, [], {}, -1],
    "double": ["abc", True, [], {}],
    "bytes": [0, True, [], {}, "!!!!", "a"],
    "enum": [True, 1.5, [], {}, 2**31],
    "message": ["x", 0, True, []],
    "timestamp": [0, True, [], {}, "yesterday", "2023-02-30T00:00:00Z"],
    "struct": ["x", 0, True, []],
    "listvalue": ["x", 0, True, {}],
    "value": [2**70, _TOO_DEEP],
}
_WRONG_CONTAINER = {"repeated": ["x", 0, True, {}], "map": ["x", 0, True, []]}


@st.composite
def wrongly_typed(draw: st.DrawFn, name: str, encoded: dict[str, Any]) -> tuple[Any, str]:
    """A copy of ``encoded`` with one field holding a wrong value, and that field's error path."""
    out = copy.deepcopy(encoded)
    candidates = [found for found in message_objects(name, out) if found[1].fields]
    if not candidates:  # Empty has no field to spoil: spoil the root object itself
        return draw(st.sampled_from(_WRONG["message"])), ""
    path, msg, obj = draw(st.sampled_from(candidates))
    f = draw(st.sampled_from(msg.fields))
    here = (*path, f.json_name)
    wrong_element = draw(st.sampled_from(_WRONG[f.kind]))
    if f.cardinality == "single":
        obj[f.json_name] = wrong_element
    elif draw(st.booleans()):
        obj[f.json_name] = draw(st.sampled_from(_WRONG_CONTAINER[f.cardinality]))
    elif f.cardinality == "repeated":
        obj[f.json_name] = [wrong_element]
        here = (*here, "[0]")
    else:
        obj[f.json_name] = {"k": wrong_element}
        here = (*here, "['k']")
    return out, join_path(here)


@st.composite
def any_value_at_a_field(
    draw: st.DrawFn, name: str, encoded: dict[str, Any]
) -> tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]:
    """A copy of ``encoded`` with arbitrary JSON at one field; returns (copy, message path, field path)."""
    out = copy.deepcopy(encoded)
    path, msg, obj = draw(st.sampled_from(list(message_objects(name, out))))
    key = draw(st.sampled_from(sorted(known_keys(msg)))) if msg.fields else draw(text)
    obj[key] = draw(json_values)
    field = next((f.json_name for f in msg.fields if key in (f.json_name, f.alt_name)), key)
    return out, path, (*path, field)
