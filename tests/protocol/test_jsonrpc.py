"""The sans-IO JSON-RPC core (a2a_wire._protocol.jsonrpc), server side, from case tables.

:func:`parse_body` (bodies that are not JSON, envelopes, notifications, ids of every JSON type,
batches) and :func:`decode_params`, with no event loop. The envelope builders and the client side
are in ``test_jsonrpc_envelopes.py``. JSON-RPC 2.0 sections 4-6 and A2A spec 9
(https://a2a-protocol.org/v1.0.1/specification/#9-json-rpc-protocol-binding).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_wire import codec, errors
from a2a_wire._protocol.jsonrpc import Call, decode_params, error, parse_body, result
from a2a_wire.methods import METHODS
from a2a_wire.types import GetTaskRequest, ListTasksRequest

GET_TASK = METHODS["GetTask"]


def body(obj: Any) -> bytes:
    return codec.dumps(obj)


def envelope(rid: Any = 1, method: Any = "GetTask", **extra: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, **extra}


def only(raw: bytes) -> Call:
    (call,), batch = parse_body(raw)
    assert batch is False
    return call


# -- parse_body: bodies that are not JSON ----------------------------------------------------

NOT_JSON = [
    (b"", "zero-length"),
    (b"nul", "unexpected end of data"),
    (b"[1,", "unexpected end of data"),
    (b"NaN", "expected a JSON value"),
    (b'{"jsonrpc": "2.0"}{', "unexpected content after document"),
    (b"\xff", "not valid UTF-8"),
    (b'"\\ud800"', "surrogate"),
    (b"{'jsonrpc': '2.0'}", "expected a string key"),
]


@pytest.mark.parametrize(("raw", "detail"), NOT_JSON)
def test_a_body_that_is_not_strict_json_is_a_parse_error(raw: bytes, detail: str) -> None:
    with pytest.raises(errors.JSONParseError, match=rf"^Invalid JSON payload: .*{detail}") as exc:
        parse_body(raw)
    assert exc.value.code == -32700


def test_an_empty_batch_is_one_invalid_request() -> None:
    with pytest.raises(errors.InvalidRequestError, match="^empty batch$") as exc:
        parse_body(b"[]")
    assert exc.value.code == -32600


# -- parse_body: envelopes -------------------------------------------------------------------

NOT_AN_OBJECT = "not a request object"
BAD_ID = "id must be a string, a number or null"
BAD_VERSION = 'jsonrpc must be exactly "2.0"'
BAD_METHOD = "method must be a string"

IR, MNF = errors.InvalidRequestError, errors.MethodNotFoundError

# (request object, id, method name, notification, invalid class, invalid message)
ENVELOPES: list[tuple[Any, Any, str, bool, type[errors.ProtocolError] | None, str]] = [
    (envelope(), 1, "GetTask", False, None, ""),
    (envelope(params={"id": "t"}), 1, "GetTask", False, None, ""),
    ({"jsonrpc": "2.0", "method": "GetTask"}, None, "GetTask", True, None, ""),
    (envelope(None), None, "GetTask", False, None, ""),
    ({"id": 1, "method": "GetTask"}, 1, "", False, IR, BAD_VERSION),
    (envelope(jsonrpc="1.0"), 1, "", False, IR, BAD_VERSION),
    (envelope(jsonrpc=2.0), 1, "", False, IR, BAD_VERSION),
    (envelope(jsonrpc=None), 1, "", False, IR, BAD_VERSION),
    ({"jsonrpc": "2.0", "id": "a"}, "a", "", False, IR, BAD_METHOD),
    (envelope(7, 3), 7, "", False, IR, BAD_METHOD),
    (envelope(7, None), 7, "", False, IR, BAD_METHOD),
    (envelope(7, ["GetTask"]), 7, "", False, IR, BAD_METHOD),
    # No id, but not a valid request: answered (with id null), not treated as a notification.
    ({"method": "GetTask"}, None, "", False, IR, BAD_VERSION),
    ({"jsonrpc": "2.0"}, None, "", False, IR, BAD_METHOD),
    # The id is checked first, so an unusable id is never echoed.
    ({"id": [1], "method": 3}, None, "", False, IR, BAD_ID),
    (envelope(1, "getTask"), 1, "getTask", False, MNF, "'getTask'"),
    (envelope(1, ""), 1, "", False, MNF, "''"),
    ({"jsonrpc": "2.0", "method": "Nope"}, None, "Nope", True, MNF, "'Nope'"),
    (None, None, "", False, IR, NOT_AN_OBJECT),
    (3, None, "", False, IR, NOT_AN_OBJECT),
    ("GetTask", None, "", False, IR, NOT_AN_OBJECT),
    (True, None, "", False, IR, NOT_AN_OBJECT),
]  # fmt: skip


@pytest.mark.parametrize(("obj", "rid", "name", "notification", "invalid", "message"), ENVELOPES)
def test_envelope(
    obj: Any,
    rid: Any,
    name: str,
    notification: bool,
    invalid: type[errors.ProtocolError] | None,
    message: str,
) -> None:
    call = only(body(obj))
    assert (call.id, call.method_name, call.notification) == (rid, name, notification)
    if invalid is None:
        assert call.invalid is None
        assert call.method is METHODS[name]
        assert call.params == (obj.get("params") if isinstance(obj, dict) else None)
    else:
        assert type(call.invalid) is invalid
        assert message in call.invalid.message
        assert call.method is None


def test_an_unknown_method_keeps_its_params_and_a_short_name() -> None:
    call = only(body(envelope(2, "x" * 500, params={"a": 1})))
    assert call.params == {"a": 1}
    assert call.method_name == "x" * 500
    assert isinstance(call.invalid, errors.MethodNotFoundError)
    assert call.invalid.message == f"Method not found: {'x' * 100!r}"


def test_every_method_name_resolves_to_its_record() -> None:
    for name, method in METHODS.items():
        assert only(body(envelope(1, name))).method is method


# -- parse_body: ids of every JSON type ------------------------------------------------------

N = codec.JSONNumber
# (JSON text of the id, the id read, or None with the id refused). A number that is not an
# integer within 64 bits keeps its exact text, so that the answer carries the id as sent.
IDS: list[tuple[str, Any]] = [
    ('"abc"', "abc"),
    ('""', ""),
    ('"\\u00e9\\ud83d\\ude00"', "\u00e9\U0001f600"),
    ("0", 0),
    ("-1", -1),
    ("9223372036854775807", 2**63 - 1),
    ("18446744073709551615", 2**64 - 1),
    ("-9223372036854775808", -(2**63)),
    ("1.5", N("1.5")),
    ("1e2", N("1e2")),
    ("1E+2", N("1E+2")),
    ("-0.0", N("-0.0")),
    ("0.1000000000000000000001", N("0.1000000000000000000001")),
    ("18446744073709551616", N("18446744073709551616")),
    ("-9223372036854775809", N("-9223372036854775809")),
    ("123456789012345678901234567890", N("123456789012345678901234567890")),
    ("null", None),
]
REFUSED_IDS = ["true", "false", "[]", "[1]", "{}", '{"id": 1}']


@pytest.mark.parametrize(("text", "rid"), IDS)
def test_a_string_number_or_null_id_is_echoed_with_its_type(text: str, rid: Any) -> None:
    raw = b'{"jsonrpc": "2.0", "method": "GetTask", "id": ' + text.encode() + b"}"
    call = only(raw)
    assert call.invalid is None and call.notification is False
    assert call.id == rid and type(call.id) is type(rid)
    answer = body(error(call.id, errors.InternalError()))
    assert codec.loads(answer)["id"] == codec.loads(text)
    if not text.startswith('"'):  # numbers and null come back as the very text sent
        assert answer.startswith(b'{"jsonrpc":"2.0","id":' + text.encode() + b',"error":')


def test_exact_ids_in_a_batch_leave_the_params_alone() -> None:
    big = "123456789012345678901234567890"
    raw = (
        b'[{"jsonrpc": "2.0", "method": "GetTask", "id": 1.25, "params": {"x": 0.5}},'
        b' {"jsonrpc": "2.0", "method": "GetTask", "id": "s", "params": {"x": 2.5}},'
        b' {"jsonrpc": "2.0", "method": "GetTask", "id": ' + big.encode() + b"},"
        b' {"jsonrpc": "2.0", "method": "GetTask", "id": 7}, 3.5]'
    )
    calls, batch = parse_body(raw)
    assert batch and [c.id for c in calls] == [N("1.25"), "s", N(big), 7, None]
    assert [c.params for c in calls] == [{"x": 0.5}, {"x": 2.5}, None, None, None]
    answers = body([result(c.id, {}) for c in calls[:4]])
    assert answers == (
        b'[{"jsonrpc":"2.0","id":1.25,"result":{}},{"jsonrpc":"2.0","id":"s","result":{}},'
        b'{"jsonrpc":"2.0","id":' + big.encode() + b',"result":{}},'
        b'{"jsonrpc":"2.0","id":7,"result":{}}]'
    )


def test_an_id_too_deep_for_the_second_parse_stays_a_float(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # How deep the stdlib parser may nest depends on the interpreter and on what else ran in
    # the process (hypothesis raises the recursion limit), so its running out of stack is made
    # certain here rather than left to the input's depth.
    def out_of_stack(*args: object, **kwargs: object) -> object:
        raise RecursionError

    monkeypatch.setattr(codec, "json", SimpleNamespace(loads=out_of_stack))
    deep = b"[" * 1000 + b"]" * 1000  # orjson reads it
    raw = b'{"jsonrpc": "2.0", "method": "GetTask", "id": 1.5, "params": ' + deep + b"}"
    call = only(raw)
    assert type(call.id) is float and call.id == 1.5
    assert call.invalid is None


@pytest.mark.parametrize("text", REFUSED_IDS)
def test_a_boolean_array_or_object_id_is_refused_and_not_echoed(text: str) -> None:
    raw = b'{"jsonrpc": "2.0", "method": "GetTask", "id": ' + text.encode() + b"}"
    call = only(raw)
    assert call.id is None and call.notification is False
    assert isinstance(call.invalid, errors.InvalidRequestError)
    assert call.invalid.message == BAD_ID


# -- parse_body: batches ---------------------------------------------------------------------


def test_a_batch_gives_one_call_per_member_in_order() -> None:
    members = [
        envelope("a"),
        {"jsonrpc": "2.0", "method": "ListTasks"},  # a notification inside a batch
        envelope("c", "Nope"),
        envelope(True),
        [],
        envelope(5, jsonrpc="2"),
        envelope(6.5, "CancelTask", params={"id": "t"}),
    ]
    calls, batch = parse_body(body(members))
    assert batch is True
    assert [c.id for c in calls] == ["a", None, "c", None, None, 5, codec.JSONNumber("6.5")]
    assert [c.notification for c in calls] == [False, True, False, False, False, False, False]
    assert [type(c.invalid).__name__ for c in calls] == [
        "NoneType",
        "NoneType",
        "MethodNotFoundError",
        "InvalidRequestError",
        "InvalidRequestError",
        "InvalidRequestError",
        "NoneType",
    ]
    assert [c.invalid.message for c in calls if c.invalid][1:] == [
        BAD_ID,
        NOT_AN_OBJECT,
        BAD_VERSION,
    ]
    assert calls[-1].method is METHODS["CancelTask"] and calls[-1].params == {"id": "t"}


def test_a_batch_of_one_is_still_a_batch() -> None:
    calls, batch = parse_body(body([envelope()]))
    assert batch is True and len(calls) == 1 and calls[0].invalid is None


@pytest.mark.parametrize("member", [[], [envelope()], None, 0, "x"])
def test_a_member_that_is_not_an_object_is_invalid(member: Any) -> None:
    (call,), batch = parse_body(body([member]))
    assert batch is True
    assert isinstance(call.invalid, errors.InvalidRequestError)
    assert (call.id, call.invalid.message) == (None, NOT_AN_OBJECT)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)
REQUEST_LIKE = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0"]) | JSON,
        "id": st.sampled_from(["x", 1, None]) | JSON,
        "method": st.sampled_from(sorted(METHODS)) | JSON,
        "params": JSON,
    },
)


@given(value=JSON | REQUEST_LIKE | st.lists(REQUEST_LIKE, max_size=3))
def test_any_json_value_gives_calls_or_the_one_batch_error(value: Any) -> None:
    if value == []:
        with pytest.raises(errors.InvalidRequestError, match="^empty batch$"):
            parse_body(body(value))
        return
    calls, batch = parse_body(body(value))
    assert batch is isinstance(value, list)
    assert len(calls) == (len(value) if batch else 1)
    for call in calls:
        assert (call.invalid is None) is (call.method is not None)
        assert call.invalid is None or call.invalid.code in (-32600, -32601)
        assert call.id is None or type(call.id) in (str, int, codec.JSONNumber)


@given(raw=st.binary(max_size=40))
def test_any_bytes_give_calls_or_a_protocol_error(raw: bytes) -> None:
    try:
        calls, _ = parse_body(raw)
    except (errors.JSONParseError, errors.InvalidRequestError) as exc:
        assert exc.code in (-32700, -32600)
    else:
        assert calls and all(isinstance(call, Call) for call in calls)


# -- decode_params ---------------------------------------------------------------------------


@pytest.mark.parametrize("params", [[], ["t"], "t", 3, 1.5, True, False])
def test_params_that_are_not_an_object_are_invalid(params: Any) -> None:
    with pytest.raises(errors.InvalidParamsError, match="^params must be an object$") as exc:
        decode_params(GET_TASK, params)
    assert exc.value.violations == [("params", "must be a JSON object")]
    assert exc.value.to_wire()["data"][0]["fieldViolations"] == [
        {"field": "params", "description": "must be a JSON object"}
    ]


@pytest.mark.parametrize("params", [None, {}])
def test_absent_params_are_an_empty_object(params: Any) -> None:
    assert decode_params(METHODS["ListTasks"], params) == ListTasksRequest()
    with pytest.raises(errors.InvalidParamsError, match="^Invalid parameters: missing id$") as exc:
        decode_params(GET_TASK, params)
    assert exc.value.violations == [("id", "required field is missing")]


# (method, params, message, violations)
MISSING = "required field is missing"
BAD_PARAMS: list[tuple[str, Any, str, list[tuple[str, str]]]] = [
    ("GetTask", {"id": 5}, "id: expected string", [("id", "expected string, got number")]),
    ("GetTask", {"id": "t", "historyLength": "x"}, "historyLength: expected int32",
     [("historyLength", "expected int32, got a string that is not a decimal integer")]),
    ("SendMessage", {"message": []}, "message: expected object",
     [("message", "expected object, got array")]),
    ("SendMessage", {"message": {}}, "missing message.messageId, message.role, message.parts",
     [("message.messageId", MISSING), ("message.role", MISSING), ("message.parts", MISSING)]),
    ("GetTaskPushNotificationConfig", {}, "missing taskId, id",
     [("taskId", MISSING), ("id", MISSING)]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "params", "message", "expected"), BAD_PARAMS)
def test_each_bad_field_is_a_violation_with_its_path(
    name: str, params: Any, message: str, expected: list[tuple[str, str]]
) -> None:
    with pytest.raises(errors.InvalidParamsError, match=f"^Invalid parameters: {message}") as exc:
        decode_params(METHODS[name], params)
    assert exc.value.violations == expected
    assert exc.value.code == -32602


def test_params_decode_leniently_into_the_request_class() -> None:
    params = {"id": "t", "history_length": 2, "unknownField": {"x": 1}}
    decoded = decode_params(GET_TASK, params)
    assert type(decoded) is GetTaskRequest
    assert decoded == GetTaskRequest(id="t", history_length=2)
