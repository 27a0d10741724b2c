"""Our codec against protobuf's own ProtoJSON implementation (``google.protobuf.json_format``).

A session fixture compiles the same pinned proto with ``grpc_tools.protoc --python_out`` into a
temporary folder and imports the resulting ``a2a_pb2``. For values of every message class drawn
from ``tests/strategies.py``:

(a) the JSON we write is accepted by ``json_format.Parse`` (no unknown field, no bad value), and
    the message it yields prints (``MessageToDict``) exactly our JSON tree once the REQUIRED
    fields we write at their default are removed;
(b) whatever ``json_format.MessageToJson`` writes for that message, with JSON or proto field
    names, enum names or numbers, defaults printed or not, decodes with our codec to the value
    we started from.

Where we differ from json_format on purpose (each has a test at the end of this module):

* REQUIRED fields (``google.api.field_behavior``) are always written, even when they hold
  ``""``, ``[]``, ``0`` or the UNSPECIFIED enum member; json_format leaves such defaults out.
* Integers inside ``Struct``/``Value``/``ListValue`` are kept exactly (up to 64 bits); json_format
  holds every JSON number as a double and rounds integers beyond 2**53.
* An enum name this proto does not declare is kept and written back; json_format refuses it
  (``ParseError``) or, with ``ignore_unknown_fields``, drops it. Unknown numbers are kept by both.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import google.api
import grpc_tools
import pytest
import strategies
from google.protobuf import empty_pb2, json_format, timestamp_pb2
from google.protobuf.message import Message as PbMessage
from hypothesis import given, settings
from hypothesis import strategies as st

from a2a_wire import codec, types

EXAMPLES = max(10, settings().max_examples // 4)
FIXTURES = strategies.PROTO.parent
CLASSES = strategies.message_names()


@pytest.fixture(scope="session")
def pb2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """``a2a_pb2`` compiled from the pinned proto into a temporary folder."""
    out = tmp_path_factory.mktemp("oracle")
    googleapis = Path(next(iter(google.api.__path__))).parent.parent
    wkt = Path(next(iter(grpc_tools.__path__))) / "_proto"
    command = [sys.executable, "-m", "grpc_tools.protoc", f"--python_out={out}"]
    command += [f"-I{FIXTURES}", f"-I{googleapis}", f"-I{wkt}", "a2a.proto"]
    subprocess.run(command, check=True, capture_output=True, timeout=60)
    if "a2a.types.a2a_pb2" in sys.modules:  # the reference SDK registers the same a2a.proto
        pytest.fail("a2a-sdk's a2a_pb2 is imported in this session; it clashes with the oracle")
    sys.path.insert(0, str(out))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # a gencode/runtime version notice
            yield importlib.import_module("a2a_pb2")
    finally:
        sys.path.remove(str(out))


def _pb_class(pb2: ModuleType, name: str) -> type[PbMessage]:
    wkt = {"Timestamp": timestamp_pb2.Timestamp, "Empty": empty_pb2.Empty}
    return wkt.get(name) or getattr(pb2, name)


def _ours(value: Any) -> Any:
    return value.to_rfc3339() if isinstance(value, types.Timestamp) else value.to_dict()


def _from_json(name: str, text: str | bytes) -> Any:
    if name == "Timestamp":
        return types.Timestamp.parse(codec.loads(text))
    return codec.decode(strategies.cls(name), text)


def _zero(f: Any, value: Any) -> bool:
    if f.kind == "enum" and f.cardinality == "single":
        return bool(value == strategies.cls(f.element)(0).value)
    return value in ("", 0, [], {}) and type(value) is not bool


def without_required_defaults(name: str, obj: Any) -> Any:
    """``obj`` (our JSON for message ``name``) minus REQUIRED fields written at their default."""
    if name == "Timestamp":
        return obj
    out = dict(obj)
    for f in strategies.ir(name).fields:
        if f.json_name not in out:
            continue
        if f.required and f.presence == "implicit" and _zero(f, out[f.json_name]):
            del out[f.json_name]
        elif f.kind == "message" and out[f.json_name] is not None:
            value = out[f.json_name]
            if f.cardinality == "single":
                out[f.json_name] = without_required_defaults(f.element, value)
            elif f.cardinality == "repeated":
                out[f.json_name] = [without_required_defaults(f.element, v) for v in value]
            else:
                out[f.json_name] = {
                    k: without_required_defaults(f.element, v) for k, v in value.items()
                }
    return out


PRINT_OPTIONS = st.fixed_dictionaries(
    {
        "preserving_proto_field_name": st.booleans(),
        "use_integers_for_enums": st.booleans(),
        "always_print_fields_with_no_presence": st.booleans(),
    }
)


@pytest.mark.parametrize("name", CLASSES)
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_json_format_agrees(pb2: ModuleType, name: str, data: st.DataObject) -> None:
    value = data.draw(strategies.messages(name, unknown_enums=False), label=name)
    ours = _ours(value)
    # (a) json_format reads our text, and prints the same tree minus REQUIRED defaults.
    message = json_format.Parse(codec.dumps(ours), _pb_class(pb2, name)())
    assert json_format.MessageToDict(message) == without_required_defaults(name, ours)
    # (b) we read what json_format writes, whatever its printing options.
    options = data.draw(PRINT_OPTIONS, label="MessageToJson options")
    assert _from_json(name, json_format.MessageToJson(message, **options)) == value


@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_unknown_enum_numbers_agree(pb2: ModuleType, data: st.DataObject) -> None:
    state = data.draw(st.integers(9, 2**31 - 1) | st.integers(-(2**31), -1))
    ours = types.TaskStatus(state=types.TaskState(state))
    message = json_format.Parse(codec.encode(ours), pb2.TaskStatus())
    assert message.state == state
    assert codec.decode(types.TaskStatus, json_format.MessageToJson(message)) == ours


# -- Deliberate differences ------------------------------------------------------------------


def test_difference_required_defaults_are_written(pb2: ModuleType) -> None:
    ours = types.ListTasksResponse().to_dict()
    assert ours == {"tasks": [], "nextPageToken": "", "pageSize": 0, "totalSize": 0}
    theirs = json_format.MessageToDict(
        json_format.Parse(codec.dumps(ours), pb2.ListTasksResponse())
    )
    assert theirs == {}
    assert types.ListTasksResponse.from_dict(theirs) == types.ListTasksResponse()
    status = types.TaskStatus().to_dict()
    assert status == {"state": "TASK_STATE_UNSPECIFIED"}
    assert json_format.MessageToDict(json_format.Parse(codec.dumps(status), pb2.TaskStatus())) == {}


@pytest.mark.parametrize("number", [2**53 + 1, 2**60 + 3, -(2**63) + 1, 2**64 - 1])
def test_difference_value_integers_stay_exact(pb2: ModuleType, number: int) -> None:
    part = types.Part(data={"n": number, "list": [number]}, metadata={"n": number})
    text = codec.encode(part)
    assert codec.decode(types.Part, text) == part
    assert codec.decode(types.Part, text).data["n"] == number
    theirs = json_format.MessageToDict(json_format.Parse(text, pb2.Part()))
    assert theirs["data"]["n"] == float(number)
    assert theirs["data"]["n"] != number  # json_format rounds it to a double


def test_difference_unknown_enum_names_are_kept(pb2: ModuleType) -> None:
    text = b'{"state": "TASK_STATE_PAUSED"}'
    ours = codec.decode(types.TaskStatus, text)
    assert ours.state.value == "TASK_STATE_PAUSED"
    assert not ours.state.is_known
    assert codec.encode(ours) == b'{"state":"TASK_STATE_PAUSED"}'
    with pytest.raises(json_format.ParseError, match="Invalid enum value TASK_STATE_PAUSED"):
        json_format.Parse(text, pb2.TaskStatus())
    dropped = json_format.Parse(text, pb2.TaskStatus(), ignore_unknown_fields=True)
    assert json_format.MessageToDict(dropped) == {}


def test_both_refuse_two_members_of_a_oneof(pb2: ModuleType) -> None:
    text = b'{"text": "a", "url": "b"}'
    with pytest.raises(
        codec.DecodeError, match="^more than one member of oneof content is set: text, url$"
    ):
        codec.decode(types.Part, text)
    with pytest.raises(json_format.ParseError, match='multiple "content" oneof fields'):
        json_format.Parse(text, pb2.Part())


def test_both_read_json_null_in_a_value_oneof_as_set(pb2: ModuleType) -> None:
    theirs = json_format.Parse(b'{"data": null}', pb2.Part())
    assert theirs.WhichOneof("content") == "data"
    ours = codec.decode(types.Part, b'{"data": null}')
    assert ours.which_content() == "data"
    assert json_format.MessageToDict(theirs) == ours.to_dict() == {"data": None}
