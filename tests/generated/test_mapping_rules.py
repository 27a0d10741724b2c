"""Hand-written JSON cases for each rule of the ProtoJSON mapping the generated classes keep.

One table per rule: field names, enums, integers, bytes, timestamps, Struct/Value/ListValue.
Presence, oneofs, REQUIRED output, error paths, strict JSON text and repr are the subject of
``test_mapping_structure.py``. The rules themselves are listed in the
docstring of ``generated/_support.py``; the property tests live in ``test_roundtrip.py``. Spec
references: camelCase names and enum names (spec 5.5), timestamps (spec 5.6.1; we also read
offsets and write 0, 3, 6 or 9 fractional digits, as ProtoJSON does).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from a2a_wire import codec, types
from a2a_wire._generated import _support
from a2a_wire.codec import DecodeError, JSONSyntaxError
from a2a_wire.types import Part, Role, TaskState

# -- Field names -----------------------------------------------------------------------------

NAMES = [  # (class, JSON name, proto name, JSON value, attribute, Python value)
    (types.Message, "messageId", "message_id", "m1", "message_id", "m1"),
    (types.Message, "referenceTaskIds", "reference_task_ids", ["t"], "reference_task_ids", ["t"]),
    (types.Part, "mediaType", "media_type", "text/plain", "media_type", "text/plain"),
    (types.AgentCard, "documentationUrl", "documentation_url", "u", "documentation_url", "u"),
    (types.GetTaskRequest, "historyLength", "history_length", 3, "history_length", 3),
    (types.ListTasksRequest, "includeArtifacts", "include_artifacts", True, "include_artifacts", True),
    (types.TaskStatusUpdateEvent, "contextId", "context_id", "c", "context_id", "c"),
    (types.OAuth2SecurityScheme, "oauth2MetadataUrl", "oauth2_metadata_url", "u", "oauth2_metadata_url", "u"),
    (types.ListTasksRequest, "statusTimestampAfter", "status_timestamp_after",
     "1970-01-01T00:00:01Z", "status_timestamp_after", types.Timestamp(seconds=1)),
]  # fmt: skip


@pytest.mark.parametrize(("cls", "json_name", "proto_name", "wire", "attr", "value"), NAMES)
def test_names(cls: Any, json_name: str, proto_name: str, wire: Any, attr: str, value: Any) -> None:
    assert getattr(cls.from_dict({json_name: wire}), attr) == value
    assert getattr(cls.from_dict({proto_name: wire}), attr) == value
    written = cls(**{attr: value}).to_dict()
    assert written[json_name] == wire
    assert proto_name not in written


def test_json_name_wins_over_proto_name() -> None:
    # json_format lets the later key win; we always prefer the JSON name (a deliberate choice).
    assert types.Message.from_dict({"message_id": "b", "messageId": "a"}).message_id == "a"
    assert types.Message.from_dict({"messageId": None, "message_id": "b"}).message_id == "b"


# -- Enums -----------------------------------------------------------------------------------

TERMINAL = {TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED}


@pytest.mark.parametrize(
    ("wire", "state"),
    [("TASK_STATE_COMPLETED", TaskState.COMPLETED), (3, TaskState.COMPLETED), (0, TaskState.UNSPECIFIED),
     ("TASK_STATE_AUTH_REQUIRED", TaskState.AUTH_REQUIRED), (8, TaskState.AUTH_REQUIRED)],
)  # fmt: skip
def test_enum_names_or_numbers_in_names_out(wire: Any, state: TaskState) -> None:
    status = types.TaskStatus.from_dict({"state": wire})
    assert status.state is state
    assert status.to_dict() == {"state": state.value}


@pytest.mark.parametrize("wire", ["TASK_STATE_PAUSED", "COMPLETED", "3", 42, -1])
def test_unknown_enum_values_are_kept(wire: Any) -> None:
    state = types.TaskStatus.from_dict({"state": wire}).state
    assert not state.is_known
    assert all(state != member for member in TaskState)
    assert state not in TERMINAL
    assert state == TaskState(wire) and hash(state) == hash(TaskState(wire))
    assert types.TaskStatus(state=state).to_dict() == {"state": wire}
    assert "unknown" in repr(state)


def test_unknown_enum_number_and_name_facts() -> None:
    assert TaskState(42).number == 42
    assert TaskState("TASK_STATE_PAUSED").number is None
    assert TaskState.COMPLETED.number == 3 and TaskState.COMPLETED.is_known
    assert Role(2) is Role.AGENT
    assert types.ListTasksRequest(status=TaskState("X")).to_dict() == {"status": "X"}


@pytest.mark.parametrize("wire", [True, 1.5, 3.0, [], {}, 2**31, -(2**31) - 1])
def test_enum_wrong_types(wire: Any) -> None:
    with pytest.raises(DecodeError) as info:
        types.TaskStatus.from_dict({"state": wire})
    assert info.value.path == "state"


# -- Integers --------------------------------------------------------------------------------

INT64_OK = [("123", 123), (123, 123), ("-9223372036854775808", -(2**63)), (2**63 - 1, 2**63 - 1),
            (1.0, 1), ("0", 0), ("007", 7)]  # fmt: skip
INT64_BAD = ["9223372036854775808", -(2**63) - 1, "1.5", 1.5, True, None, "", "1e3", " 1", "+1", []]


@pytest.mark.parametrize(("wire", "number"), INT64_OK)
def test_int64_strings_or_numbers_in(wire: Any, number: int) -> None:
    assert _support.dec_int64(wire) == number


@pytest.mark.parametrize("wire", INT64_BAD)
def test_int64_rejects(wire: Any) -> None:
    with pytest.raises(DecodeError, match="^(expected int64, got |int64 out of range )"):
        _support.dec_int64(wire)


def test_64_bit_integers_are_written_as_strings() -> None:
    assert _support.enc_int64(2**63 - 1) == "9223372036854775807"
    assert _support.dec_uint64("18446744073709551615") == 2**64 - 1
    with pytest.raises(DecodeError, match=r"^uint64 out of range \[0, "):
        _support.dec_uint64(-1)


@pytest.mark.parametrize(("wire", "number"), [(5, 5), ("5", 5), ("-2147483648", -(2**31)), (1.0, 1),
                                              (2**31 - 1, 2**31 - 1), (1e3, 1000)])  # fmt: skip
def test_int32_accepts(wire: Any, number: int) -> None:
    assert types.GetTaskRequest.from_dict({"historyLength": wire}).history_length == number


@pytest.mark.parametrize(
    "wire", [2**31, "2147483648", -(2**31) - 1, 1.5, "1.5", True, False, "x", [], {}]
)
def test_int32_rejects(wire: Any) -> None:
    with pytest.raises(DecodeError) as info:
        types.GetTaskRequest.from_dict({"historyLength": wire})
    assert info.value.path == "historyLength"


def test_uint32_range() -> None:
    assert _support.dec_uint32(2**32 - 1) == 2**32 - 1
    for wire in (-1, 2**32):
        with pytest.raises(DecodeError, match="out of range"):
            _support.dec_uint32(wire)


# -- Bytes -----------------------------------------------------------------------------------

BYTES_IN = [("aGk=", b"hi"), ("aGk", b"hi"), ("+/8=", b"\xfb\xff"), ("-_8=", b"\xfb\xff"),
            ("-_8", b"\xfb\xff"), ("+/8", b"\xfb\xff"), ("", b""), ("YWJj", b"abc")]  # fmt: skip


@pytest.mark.parametrize(("wire", "raw"), BYTES_IN)
def test_bytes_standard_or_url_safe_padded_or_not(wire: str, raw: bytes) -> None:
    part = Part.from_dict({"raw": wire})
    assert part.raw == raw
    assert part.which_content() == "raw"


@pytest.mark.parametrize(("raw", "wire"), [(b"\xfb\xff", "+/8="), (b"a", "YQ=="), (b"", "")])
def test_bytes_written_standard_padded(raw: bytes, wire: str) -> None:
    assert Part(raw=raw).to_dict() == {"raw": wire}


@pytest.mark.parametrize("wire", ["!!!!", "a", "aGk=\n", "aG k=", "YQ=A", "é", 5, True, ["aGk="]])
def test_bytes_garbage_rejected(wire: Any) -> None:
    with pytest.raises(DecodeError) as info:
        Part.from_dict({"raw": wire})
    assert info.value.path == "raw"


# -- Timestamps ------------------------------------------------------------------------------

TS_OUT = [(0, "2023-11-14T22:13:20Z"), (1_000_000, "2023-11-14T22:13:20.001Z"),
          (120_000_000, "2023-11-14T22:13:20.120Z"), (1_000, "2023-11-14T22:13:20.000001Z"),
          (123_456_000, "2023-11-14T22:13:20.123456Z"), (1, "2023-11-14T22:13:20.000000001Z"),
          (999_999_999, "2023-11-14T22:13:20.999999999Z")]  # fmt: skip


@pytest.mark.parametrize(("nanos", "text"), TS_OUT)
def test_timestamp_written_in_utc_with_0_3_6_or_9_digits(nanos: int, text: str) -> None:
    stamp = types.Timestamp(seconds=1_700_000_000, nanos=nanos)
    assert stamp.to_rfc3339() == text
    assert types.TaskStatus(timestamp=stamp).to_dict()["timestamp"] == text


TS_IN = [("2023-01-01T00:00:00Z", 1672531200, 0), ("2023-01-01t00:00:00z", 1672531200, 0),
         ("2023-01-01T01:00:00+01:00", 1672531200, 0), ("2022-12-31T18:30:00-05:30", 1672531200, 0),
         ("2023-01-01T00:00:00-00:00", 1672531200, 0), ("2023-01-01T00:00:00.5Z", 1672531200, 500_000_000),
         ("2023-01-01T00:00:00.123456789Z", 1672531200, 123456789),
         ("0001-01-01T00:00:00Z", -62135596800, 0),
         ("9999-12-31T23:59:59.999999999Z", 253402300799, 999_999_999)]  # fmt: skip


@pytest.mark.parametrize(("text", "seconds", "nanos"), TS_IN)
def test_timestamp_read(text: str, seconds: int, nanos: int) -> None:
    assert types.Timestamp.parse(text) == types.Timestamp(seconds=seconds, nanos=nanos)
    status = types.TaskStatus.from_dict({"timestamp": text})
    assert status.timestamp == types.Timestamp(seconds=seconds, nanos=nanos)


TS_BAD = ["2023-02-30T00:00:00Z", "2023-13-01T00:00:00Z", "2023-01-01T24:00:00Z", "0000-01-01T00:00:00Z",
          "10000-01-01T00:00:00Z", "0001-01-01T00:00:00+00:01", "9999-12-31T23:59:59-00:01",
          "2023-01-01T00:00:00.1234567891Z", "2023-01-01T00:00:00", "2023-01-01 00:00:00Z",
          "2023-01-01T00:00:00.Z", "2023-01-01T00:00:00+24:00", "2023-01-01T00:00:00+01:60",
          "1672531200", 1672531200, True, {}]  # fmt: skip


@pytest.mark.parametrize("wire", TS_BAD)
def test_timestamp_rejects(wire: Any) -> None:
    with pytest.raises(DecodeError) as info:
        types.TaskStatus.from_dict({"timestamp": wire})
    assert info.value.path == "timestamp"


@pytest.mark.parametrize(
    ("seconds", "nanos"), [(253402300800, 0), (-62135596801, 0), (0, -1), (0, 10**9)]
)
def test_timestamp_out_of_range_is_not_written(seconds: int, nanos: int) -> None:
    with pytest.raises(ValueError, match="out of range"):
        types.Timestamp(seconds=seconds, nanos=nanos).to_rfc3339()


def test_encode_reports_an_out_of_range_timestamp_as_encode_error() -> None:
    with pytest.raises(codec.EncodeError, match="^timestamp out of range: seconds=1000000000000 "):
        codec.encode(types.TaskStatus(timestamp=types.Timestamp(seconds=10**12)))


# -- Struct, Value, ListValue ----------------------------------------------------------------


@pytest.fixture
def depth_limit() -> Iterator[int]:
    saved = codec.json_depth_limit()
    yield saved
    codec.set_json_depth_limit(saved)


def _nested(levels: int, kind: str = "object") -> Any:
    value: Any = None
    for _ in range(levels):
        value = {"a": value} if kind == "object" else [value]
    return value


def test_struct_value_and_list_value_keep_null_and_nesting() -> None:
    task = types.Task.from_dict({"metadata": {"a": None, "b": [None, {"c": [1, 2.5, "x", True]}]}})
    assert task.metadata == {"a": None, "b": [None, {"c": [1, 2.5, "x", True]}]}
    assert _support.dec_list_value([None, [None], {}]) == [None, [None], {}]
    assert Part.from_dict({"data": [None]}).data == [None]


@pytest.mark.parametrize(("cls", "key", "kind"), [(types.Task, "metadata", "object"),
                                                  (Part, "data", "object"), (Part, "data", "list")])  # fmt: skip
def test_nesting_limit(cls: Any, key: str, kind: str, depth_limit: int) -> None:
    assert getattr(cls.from_dict({key: _nested(depth_limit, kind)}), key) is not None
    with pytest.raises(DecodeError, match=f"deeper than {depth_limit}") as info:
        cls.from_dict({key: _nested(depth_limit + 1, kind)})
    assert info.value.path == key


def test_nesting_limit_is_configurable(depth_limit: int) -> None:
    codec.set_json_depth_limit(5)
    assert codec.json_depth_limit() == 5
    assert codec.decode(Part, codec.dumps({"data": _nested(5)})).data == _nested(5)
    with pytest.raises(DecodeError, match="deeper than 5"):
        codec.decode(Part, codec.dumps({"data": _nested(6)}))
    for bad in (0, 201):
        with pytest.raises(ValueError, match="1..200"):
            codec.set_json_depth_limit(bad)
    assert codec.json_depth_limit() == 5


def test_very_deep_json_is_refused_without_recursion_error() -> None:
    deep = b'{"metadata":' + b'{"a":' * 1000 + b"1" + b"}" * 1001
    with pytest.raises(DecodeError) as info:
        codec.decode(types.Task, deep)
    assert info.value.path == "metadata"
    with pytest.raises(JSONSyntaxError, match="^depth limit exceeded"):
        codec.decode(Part, b'{"data":' + b"[" * 5000 + b"]" * 5000 + b"}")


@pytest.mark.parametrize("bad", [{"x": float("nan")}, {"x": float("inf")}, {"x": 2**64}, {1: 2},
                                 {"x": {1, 2}}, {"x": b"raw"}])  # fmt: skip
def test_struct_holding_non_json_is_refused(bad: Any) -> None:
    with pytest.raises(DecodeError) as info:
        types.Task.from_dict({"metadata": bad})
    assert info.value.path == "metadata"
