"""Fast paths of the generated code give what the plain paths would: timestamp memos, copies.

``parse_timestamp`` and ``format_timestamp`` remember the whole-second part of recent instants
(a server formats and parses the same few seconds over and over). A hit must give the same
result as a miss, and text the full path refuses must still be refused when its first 19
characters are remembered. The generated ``__copy__`` (what ``copy.copy`` calls) makes the
same shallow copy the pickle protocol would, also of a subclass.
"""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_wire._generated import _values
from a2a_wire.codec import DecodeError

_SECONDS = st.integers(min_value=-62135596800, max_value=253402300799)
_NANOS = st.integers(min_value=0, max_value=999_999_999)


def _cold(call: object, *args: object) -> object:
    """``call(*args)`` with both memos empty (the full path)."""
    _values._PARSED.clear()
    _values._FORMATTED.clear()
    assert callable(call)
    return call(*args)


@given(_SECONDS, _NANOS)
def test_format_and_parse_agree_hot_and_cold(seconds: int, nanos: int) -> None:
    cold = _cold(_values.format_timestamp, seconds, nanos)
    assert _values.format_timestamp(seconds, nanos) == cold  # memo filled by the cold call
    parsed = _cold(_values.parse_timestamp, cold)
    assert parsed == (seconds, nanos)
    assert _values.parse_timestamp(cold) == parsed  # hot


@given(_SECONDS, st.sampled_from(["Z", "z", ".5Z", ".123456789z", ".000001Z"]))
def test_lowercase_and_fractions_hit_the_memo_alike(seconds: int, rest: str) -> None:
    head = _values.format_timestamp(seconds, 0)[:19]
    cold = _cold(_values.parse_timestamp, head + rest)
    assert _values.parse_timestamp(head + rest) == cold


@pytest.mark.parametrize(
    "rest",
    ["", "Zx", ".Z", ".1234567890Z", ".12a4Z", ".\u0661\u0662Z", "+25:00", " Z", ".5"],
)
def test_bad_text_after_a_remembered_second_is_refused(rest: str) -> None:
    _values.parse_timestamp("2026-12-01T12:00:00Z")  # remember this second
    with pytest.raises(DecodeError):
        _values.parse_timestamp("2026-12-01T12:00:00" + rest)


def test_offsets_are_applied_after_a_remembered_second() -> None:
    base, _ = _values.parse_timestamp("2026-12-01T12:00:00Z")
    assert _values.parse_timestamp("2026-12-01T12:00:00+01:30") == (base - 5400, 0)
    assert _values.parse_timestamp("2026-12-01T12:00:00.25-00:15") == (base + 900, 250_000_000)


def test_memos_stay_bounded() -> None:
    for seconds in range(3 * _values._MEMO_SIZE):
        _values.parse_timestamp(_values.format_timestamp(seconds, 0))
    assert len(_values._PARSED) <= _values._MEMO_SIZE
    assert len(_values._FORMATTED) <= _values._MEMO_SIZE


def test_copy_is_shallow_and_keeps_every_field() -> None:
    from a2a_wire.types import Artifact, Message, Part, Role, Task, TaskState, TaskStatus

    message = Message(message_id="m", role=Role.USER, parts=[Part(text="hi")])
    task = Task(
        id="t",
        context_id="c",
        status=TaskStatus(state=TaskState.WORKING),
        artifacts=[Artifact(artifact_id="a")],
        history=[message],
        metadata={"k": 1},
    )
    twin = copy.copy(task)
    assert type(twin) is Task and twin == task and twin is not task
    assert twin.history is task.history and twin.status is task.status  # shallow, as before

    class Tagged(Task):
        __slots__ = ("tag",)

    tagged = Tagged(id="t", context_id="c")
    tagged.tag = "x"
    copied = copy.copy(tagged)
    assert type(copied) is Tagged and copied.tag == "x" and copied == tagged

    class Loose(Message):
        pass

    loose = Loose(message_id="m")
    loose.extra = 3  # type: ignore[attr-defined]
    again = copy.copy(loose)
    assert type(again) is Loose and again.extra == 3 and again == loose  # type: ignore[attr-defined]
