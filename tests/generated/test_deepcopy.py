"""The generated ``__deepcopy__`` (what ``copy.deepcopy`` calls) of every message class.

A deep copy equals the original, encodes to the same JSON, and shares no mutable object with
it: no message, list, dict (``Struct`` and ``Value`` fields included) is the same object in
both. The event log stores rely on that to keep their own copy of a task (its *shadow*,
``a2a_wire.server.store._fold.events.Shadow``) without decoding it again.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
import strategies
from hypothesis import given, settings
from hypothesis import strategies as st

from a2a_wire import codec
from a2a_wire.types import Message, Part, Task, TaskStatus, Timestamp

EXAMPLES = max(10, settings().max_examples // 4)
per_class = pytest.mark.parametrize("name", strategies.message_names())


def mutable_parts(value: Any) -> Iterator[Any]:
    """Every message, list and dict inside ``value``, ``value`` itself included."""
    if isinstance(value, list | dict) or hasattr(type(value), "__slots__"):
        yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from mutable_parts(item)
    elif isinstance(value, list):
        for item in value:
            yield from mutable_parts(item)
    elif hasattr(type(value), "__slots__") and type(value).__module__.startswith("a2a_wire"):
        for name in type(value).__slots__:
            yield from mutable_parts(getattr(value, name))


@per_class
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_a_deep_copy_is_equal_and_shares_nothing_mutable(name: str, data: st.DataObject) -> None:
    value = data.draw(strategies.messages(name), label=name)
    twin = copy.deepcopy(value)
    assert type(twin) is type(value) and twin == value
    if name != "Timestamp":
        assert codec.encode(twin) == codec.encode(value)
    originals = {id(part) for part in mutable_parts(value)}
    assert not [part for part in mutable_parts(twin) if id(part) in originals]


def test_changing_a_deep_copy_leaves_the_original() -> None:
    message = Message(message_id="m", parts=[Part(text="hi", metadata={"k": [1, {"n": 2}]})])
    task = Task(
        id="t",
        status=TaskStatus(timestamp=Timestamp(seconds=5)),
        history=[message],
        metadata={"a": {"b": [1]}},
    )
    twin = copy.deepcopy(task)
    twin.history[0].parts[0].metadata["k"][1]["n"] = 3  # type: ignore[index]
    twin.history[0].parts.append(Part(text="more"))
    twin.metadata["a"]["b"].append(2)  # type: ignore[index]
    assert twin.status is not None and twin.status.timestamp is not None
    twin.status.timestamp.seconds = 6
    assert message.parts[0].metadata == {"k": [1, {"n": 2}]}
    assert len(message.parts) == 1
    assert task.metadata == {"a": {"b": [1]}}
    assert task.status is not None and task.status.timestamp == Timestamp(seconds=5)


def test_a_subclass_is_copied_whole() -> None:
    class Tagged(Task):
        __slots__ = ("tag",)

    tagged = Tagged(id="t", history=[Message(message_id="m")])
    tagged.tag = ["x"]
    twin = copy.deepcopy(tagged)
    assert type(twin) is Tagged and twin == tagged
    assert twin.tag == ["x"] and twin.tag is not tagged.tag
    assert twin.history[0] is not tagged.history[0]

    class Loose(Message):
        pass

    loose = Loose(message_id="m")
    loose.extra = {"n": [1]}  # type: ignore[attr-defined]
    again = copy.deepcopy(loose)
    assert type(again) is Loose and again.extra == {"n": [1]}  # type: ignore[attr-defined]
    assert again.extra is not loose.extra  # type: ignore[attr-defined]
