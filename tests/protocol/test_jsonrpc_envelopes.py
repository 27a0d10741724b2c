"""The sans-IO JSON-RPC core (a2a_wire._protocol.jsonrpc): envelopes and the client side.

The builders :func:`result` and :func:`error` (server side), :func:`request` and
:func:`read_response` (client side), and the two sides wired back to back, with no event loop.
JSON-RPC 2.0 section 5 and A2A spec 9
(https://a2a-protocol.org/v1.0.1/specification/#9-json-rpc-protocol-binding).
"""

from __future__ import annotations

from typing import Any

import pytest

from a2a_wire import codec, errors
from a2a_wire._protocol.jsonrpc import (
    decode_params,
    error,
    parse_body,
    read_response,
    request,
    result,
)
from a2a_wire.methods import METHODS
from a2a_wire.types import (
    Empty,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
    TaskStatus,
)

GET_TASK = METHODS["GetTask"]


# -- result and error envelopes --------------------------------------------------------------


@pytest.mark.parametrize("rid", ["r", 0, 2.5, None])
def test_result_envelope(rid: Any) -> None:
    assert result(rid, {"id": "t"}) == {"jsonrpc": "2.0", "id": rid, "result": {"id": "t"}}
    assert result(rid, None) == {"jsonrpc": "2.0", "id": rid, "result": None}


ERRORS: list[tuple[errors.ProtocolError, dict[str, Any]]] = [
    (errors.JSONParseError(), {"code": -32700, "message": "Invalid JSON payload"}),
    (errors.InvalidRequestError("empty batch"), {"code": -32600, "message": "empty batch"}),
    (errors.MethodNotFoundError(), {"code": -32601, "message": "Method not found"}),
    (
        errors.InvalidParamsError("bad", violations=[("id", "required field is missing")]),
        {
            "code": -32602,
            "message": "bad",
            "data": [
                {
                    "@type": "type.googleapis.com/google.rpc.BadRequest",
                    "fieldViolations": [
                        {"field": "id", "description": "required field is missing"}
                    ],
                }
            ],
        },
    ),
    (errors.InternalError(), {"code": -32603, "message": "Internal error"}),
]


@pytest.mark.parametrize(("exc", "wire"), ERRORS, ids=[type(e).__name__ for e, _ in ERRORS])
@pytest.mark.parametrize("rid", ["r", 3, None])
def test_error_envelope(exc: errors.ProtocolError, wire: dict[str, Any], rid: Any) -> None:
    assert error(rid, exc) == {"jsonrpc": "2.0", "id": rid, "error": wire}


def test_an_a2a_error_envelope_carries_its_error_info() -> None:
    exc = errors.TaskNotFoundError("no task t", metadata={"taskId": "t"})
    sent = error("r", exc)
    assert sent["id"] == "r"
    assert (sent["error"]["code"], sent["error"]["message"]) == (-32001, "no task t")
    (info,) = sent["error"]["data"]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert (info["reason"], info["metadata"]) == (exc.reason, {"taskId": "t"})


# -- request ---------------------------------------------------------------------------------


@pytest.mark.parametrize("rid", ["req-1", 7])
def test_request_encodes_the_envelope(rid: str | int) -> None:
    raw = request(rid, GET_TASK, GetTaskRequest(id="t", history_length=0))
    assert codec.loads(raw) == {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "GetTask",
        "params": {"id": "t", "historyLength": 0},
    }


def test_request_sends_empty_params_as_an_object() -> None:
    assert codec.loads(request(1, METHODS["ListTasks"], ListTasksRequest()))["params"] == {}


SENT = [
    ("GetTask", GetTaskRequest(id="t", history_length=3)),
    ("ListTasks", ListTasksRequest(page_size=2, status=TaskState.WORKING)),
    (
        "SendMessage",
        SendMessageRequest(
            message=Message(message_id="m", role=Role.USER, parts=[Part(text="hi")])
        ),
    ),
]


@pytest.mark.parametrize(("name", "params"), SENT, ids=[name for name, _ in SENT])
def test_a_request_parses_back_to_the_same_call(name: str, params: Any) -> None:
    (call,), batch = parse_body(request("r", METHODS[name], params))
    assert batch is False
    assert (call.id, call.method, call.notification, call.invalid) == (
        "r",
        METHODS[name],
        False,
        None,
    )
    assert call.method is not None
    assert decode_params(call.method, call.params) == params


# -- read_response ---------------------------------------------------------------------------

TASK = {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
NOT_JSONRPC = "^response is not a JSON-RPC 2.0 object$"

# (response, request id, message of the InvalidAgentResponseError)
BAD_RESPONSES: list[tuple[Any, Any, str]] = [
    (None, 1, NOT_JSONRPC),
    ([{"jsonrpc": "2.0", "id": 1, "result": TASK}], 1, NOT_JSONRPC),
    ("ok", 1, NOT_JSONRPC),
    ({"id": 1, "result": TASK}, 1, NOT_JSONRPC),
    ({"jsonrpc": "1.0", "id": 1, "result": TASK}, 1, NOT_JSONRPC),
    ({"jsonrpc": 2.0, "id": 1, "result": TASK}, 1, NOT_JSONRPC),
    ({"jsonrpc": "2.0", "id": 2, "result": TASK}, 1, "^response id does not match the request id$"),
    ({"jsonrpc": "2.0", "id": "1", "result": TASK}, 1, "^response id does not match"),
    ({"jsonrpc": "2.0", "result": TASK}, "a", "^response id does not match"),
    ({"jsonrpc": "2.0", "id": 1}, 1, "^response has neither result nor error$"),
    ({"jsonrpc": "2.0", "id": None}, None, "^response has neither result nor error$"),
    ({"jsonrpc": "2.0", "id": 1, "result": None}, 1, "^result does not fit GetTask: "),
    ({"jsonrpc": "2.0", "id": 1, "result": []}, 1, "^result does not fit GetTask: "),
    ({"jsonrpc": "2.0", "id": 1, "result": {"id": 5}}, 1, r"^result does not fit GetTask: id: "),
]  # fmt: skip


@pytest.mark.parametrize(("obj", "rid", "message"), BAD_RESPONSES)
def test_a_response_that_does_not_fit_is_an_invalid_agent_response(
    obj: Any, rid: Any, message: str
) -> None:
    with pytest.raises(errors.InvalidAgentResponseError, match=message) as exc:
        read_response(obj, rid, GET_TASK)
    assert exc.value.code == -32006


@pytest.mark.parametrize("rid", [1, "r"])
def test_read_response_decodes_the_result(rid: Any) -> None:
    task = read_response({"jsonrpc": "2.0", "id": rid, "result": TASK}, rid, GET_TASK)
    assert task == Task(id="t", context_id="c", status=TaskStatus(state=TaskState.WORKING))


def test_no_request_id_skips_the_id_check() -> None:
    for rid in [7, "other", None]:
        answer = {"jsonrpc": "2.0", "id": rid, "result": TASK}
        assert read_response(answer, None, GET_TASK).id == "t"


def test_a_carried_error_is_raised_even_with_another_id() -> None:
    answer = {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "gone"}}
    with pytest.raises(errors.TaskNotFoundError, match="^gone$"):
        read_response(answer, 1, GET_TASK)
    answer["result"] = TASK  # an error wins over a result in the same envelope
    with pytest.raises(errors.TaskNotFoundError, match="^gone$"):
        read_response(answer, 1, GET_TASK)


def test_a_null_result_reads_as_empty_for_delete() -> None:
    delete = METHODS["DeleteTaskPushNotificationConfig"]
    assert delete.result is Empty
    assert read_response({"jsonrpc": "2.0", "id": 1, "result": None}, 1, delete) == Empty()
    assert read_response({"jsonrpc": "2.0", "id": 1, "result": {}}, 1, delete) == Empty()


def test_server_envelopes_read_back_on_the_client() -> None:
    answer = codec.loads(codec.dumps(result("r", TASK)))
    assert read_response(answer, "r", GET_TASK).status.state is TaskState.WORKING
    refused = codec.loads(codec.dumps(error("r", errors.TaskNotCancelableError("done"))))
    with pytest.raises(errors.TaskNotCancelableError, match="^done$"):
        read_response(refused, "r", METHODS["CancelTask"])
