"""Round-trip properties of every generated message class (STYLE.md section 7).

For values drawn from the IR-derived strategies in ``tests/strategies.py``:

* ``from_dict(to_dict(x)) == x``, and the same through JSON text (``codec.encode``/``decode``);
* unknown keys added to any message object, at any depth, change nothing;
* a value of the wrong JSON type at any field raises :class:`DecodeError` whose ``path`` is that
  field's, and no other exception escapes;
* arbitrary JSON at any field either decodes (and then encodes again) or raises
  :class:`DecodeError` located at that field (or at its message, for a oneof conflict).
"""

from __future__ import annotations

from typing import Any

import pytest
import strategies
from hypothesis import given, settings
from hypothesis import strategies as st

from a2a_wire import codec, types
from a2a_wire.codec import DecodeError

# Each test below runs once per class; spread the profile's example budget over the classes.
EXAMPLES = max(10, settings().max_examples // 4)
CODEC_CLASSES = [name for name in strategies.message_names() if name != "Timestamp"]

per_class = pytest.mark.parametrize("name", CODEC_CLASSES)


def _draw(data: st.DataObject, name: str) -> tuple[Any, dict[str, Any]]:
    value = data.draw(strategies.messages(name), label=name)
    return value, value.to_dict()


@per_class
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_dict_and_text_round_trip(name: str, data: st.DataObject) -> None:
    value, encoded = _draw(data, name)
    cls = strategies.cls(name)
    assert cls.from_dict(encoded) == value
    text = codec.encode(value)
    assert codec.decode(cls, text) == value
    assert codec.loads(text) == encoded
    assert cls.from_dict(encoded).to_dict() == encoded


@per_class
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_unknown_keys_at_any_depth_are_ignored(name: str, data: st.DataObject) -> None:
    value, encoded = _draw(data, name)
    noisy = data.draw(strategies.with_unknown_keys(name, encoded), label="with unknown keys")
    assert noisy != encoded
    assert strategies.cls(name).from_dict(noisy) == value
    assert codec.decode(strategies.cls(name), codec.dumps(noisy)) == value


@per_class
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_wrong_type_names_the_field(name: str, data: st.DataObject) -> None:
    _value, encoded = _draw(data, name)
    spoiled, path = data.draw(strategies.wrongly_typed(name, encoded), label="spoiled")
    with pytest.raises(DecodeError) as info:
        strategies.cls(name).from_dict(spoiled)
    assert info.value.path == path
    assert info.value.reason
    assert str(info.value) == (f"{path}: {info.value.reason}" if path else info.value.reason)


@per_class
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_any_json_at_a_field_decodes_or_fails_there(name: str, data: st.DataObject) -> None:
    _value, encoded = _draw(data, name)
    changed, owner, field = data.draw(strategies.any_value_at_a_field(name, encoded))
    try:
        decoded = strategies.cls(name).from_dict(changed)
    except DecodeError as exc:
        where = strategies.join_path(field)
        if exc.reason.startswith("more than one member of oneof"):
            assert exc.path == strategies.join_path(owner)
        else:
            assert exc.path == where or exc.path.startswith((where + ".", where + "["))
    else:
        assert codec.decode(strategies.cls(name), codec.encode(decoded)) == decoded


@settings(max_examples=EXAMPLES)
@given(data=st.data(), name=st.sampled_from(CODEC_CLASSES))
def test_a_non_object_is_refused_at_the_root(data: st.DataObject, name: str) -> None:
    root = data.draw(strategies.json_values.filter(lambda v: not isinstance(v, dict)))
    with pytest.raises(DecodeError) as info:
        strategies.cls(name).from_dict(root)
    assert info.value.path == ""


@given(stamp=strategies.timestamps)
def test_timestamp_round_trip(stamp: types.Timestamp) -> None:
    text = stamp.to_rfc3339()
    assert types.Timestamp.parse(text) == stamp
    assert types.Timestamp.parse(codec.loads(codec.dumps(text))) == stamp
    assert text.endswith("Z")
    assert len(text.partition(".")[2]) in (0, 4, 7, 10)  # 0, 3, 6 or 9 digits plus "Z"


@given(stamp=strategies.timestamps)
def test_timestamp_inside_a_message_round_trips(stamp: types.Timestamp) -> None:
    status = types.TaskStatus(state=types.TaskState.WORKING, timestamp=stamp)
    assert codec.decode(types.TaskStatus, codec.encode(status)) == status


def test_every_class_is_covered() -> None:
    assert set(CODEC_CLASSES) | {"Timestamp"} == {m.name for m in strategies.module().messages}
    assert len(CODEC_CLASSES) > 40
