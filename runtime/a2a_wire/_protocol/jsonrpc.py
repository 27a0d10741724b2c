"""Sans-IO JSON-RPC 2.0 core for the A2A binding (spec 9): envelopes in, typed values out.

Server side :func:`parse_body` and :func:`decode_params`, client side :func:`request` and
:func:`read_response`. A number id that is not a 64-bit integer is kept as its text, so it is
answered exactly as sent; only a body holding such an id pays for a second parse. No I/O and no
event loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from a2a_wire import codec, errors
from a2a_wire.methods import METHODS, Method
from a2a_wire.types import Empty

__all__ = [
    "Call",
    "decode_params",
    "error",
    "parse_body",
    "read_response",
    "request",
    "result",
]

M = TypeVar("M", bound=codec.ProtoMessage)
RequestId = str | int | float | codec.JSONNumber | None


@dataclass(frozen=True, slots=True)
class Call:
    """One request object of a body.

    Attributes:
        id: The request id (string, number or ``None``): an ``int``, or a
            :class:`~a2a_wire.codec.JSONNumber` holding its exact text for any other number.
        method: The method record, or ``None`` when the name is unknown.
        method_name: The name as sent.
        params: The raw ``params`` value (``None`` when absent).
        notification: Whether the request had no ``id`` member (no answer is sent).
        invalid: The error that answers this member of the body, if it is not a valid request.
    """

    id: RequestId
    method: Method[Any, Any] | None
    method_name: str
    params: Any
    notification: bool
    invalid: errors.ProtocolError | None = None


def _valid_id(value: object) -> bool:
    return value is None or type(value) in (str, int, float, codec.JSONNumber)


def _members(obj: object) -> list[Any]:
    return obj if isinstance(obj, list) else [obj]


def _inexact_id(member: object) -> bool:
    """Whether ``member`` is an object whose id orjson read as a float (text possibly lost)."""
    return isinstance(member, dict) and type(member.get("id")) is float


def _keep_id_texts(body: bytes, obj: Any) -> None:
    """Replace each float id of ``obj`` by its exact text, read by a second parse of ``body``."""
    try:
        exact = codec.loads_exact(body)
    except codec.JSONSyntaxError:  # too deep for the stdlib parser: the ids stay floats
        return
    for member, twin in zip(_members(obj), _members(exact), strict=True):
        if _inexact_id(member):
            member["id"] = twin["id"]


def _call(obj: object) -> Call:
    if not isinstance(obj, dict):
        return Call(None, None, "", None, False, errors.InvalidRequestError("not a request object"))
    has_id = "id" in obj
    rid = obj.get("id")
    if not _valid_id(rid):
        bad = errors.InvalidRequestError("id must be a string, a number or null")
        return Call(None, None, "", None, False, bad)
    if obj.get("jsonrpc") != "2.0":
        bad = errors.InvalidRequestError('jsonrpc must be exactly "2.0"')
        return Call(rid, None, "", None, False, bad)
    name = obj.get("method")
    if type(name) is not str:
        bad = errors.InvalidRequestError("method must be a string")
        return Call(rid, None, "", None, False, bad)
    method = METHODS.get(name)
    missing = None if method else errors.MethodNotFoundError(f"Method not found: {name[:100]!r}")
    return Call(rid, method, name, obj.get("params"), not has_id, missing)


def parse_body(body: bytes) -> tuple[list[Call], bool]:
    """Parse a request body into calls.

    Returns:
        The calls, and whether the body was a batch (answers must then be an array).

    Raises:
        JSONParseError: the body is not strict JSON.
        InvalidRequestError: the body is an empty batch.
    """
    try:
        obj = codec.loads(body)
    except codec.JSONSyntaxError as exc:
        raise errors.JSONParseError(f"Invalid JSON payload: {exc}") from None
    if any(_inexact_id(member) for member in _members(obj)):
        _keep_id_texts(body, obj)
    if isinstance(obj, list):
        if not obj:
            raise errors.InvalidRequestError("empty batch")
        return [_call(item) for item in obj], True
    return [_call(obj)], False


def decode_params(method: Method[M, Any], params: object) -> M:
    """Decode ``params`` into the method's request message and check REQUIRED fields.

    Raises:
        InvalidParamsError: params are not an object, a field does not decode, or REQUIRED
            fields are missing; ``violations`` names every field path.
    """
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise errors.InvalidParamsError(
            "params must be an object", violations=[("params", "must be a JSON object")]
        )
    try:
        message = method.params.from_dict(params)
    except codec.DecodeError as exc:
        path = exc.path or "params"
        raise errors.InvalidParamsError(
            f"Invalid parameters: {exc}", violations=[(path, exc.reason)]
        ) from None
    missing = message.missing_fields()
    if missing:
        violations = [(path, "required field is missing") for path in missing]
        raise errors.InvalidParamsError(
            f"Invalid parameters: missing {', '.join(missing)}", violations=violations
        )
    return message


def result(rid: RequestId, value: Any) -> dict[str, Any]:
    """A success envelope around an already encoded result value."""
    return {"jsonrpc": "2.0", "id": rid, "result": value}


def error(rid: RequestId, exc: errors.ProtocolError) -> dict[str, Any]:
    """An error envelope for ``exc``."""
    return {"jsonrpc": "2.0", "id": rid, "error": exc.to_wire()}


def request(rid: str | int, method: Method[Any, Any], params: codec.ProtoMessage) -> bytes:
    """Encode a request envelope (client side)."""
    return codec.dumps(
        {"jsonrpc": "2.0", "id": rid, "method": method.name, "params": params.to_dict()}
    )


def read_response(obj: object, rid: str | int | None, method: Method[Any, M]) -> M:
    """Check a response envelope and decode its result into the method's result class.

    Args:
        obj: The parsed JSON response.
        rid: The id the request carried (``None`` to skip the id check, e.g. on a stream).
        method: The method called.

    Raises:
        ProtocolError: the subclass registered for a received error code.
        InvalidAgentResponseError: the envelope or its result does not fit the method.
    """
    if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0":
        raise errors.InvalidAgentResponseError("response is not a JSON-RPC 2.0 object")
    if rid is not None and obj.get("id") != rid and "error" not in obj:
        raise errors.InvalidAgentResponseError("response id does not match the request id")
    if "error" in obj:
        raise errors.from_wire(obj["error"])
    if "result" not in obj:
        raise errors.InvalidAgentResponseError("response has neither result nor error")
    result = obj["result"]
    if result is None and method.result is Empty:
        result = {}  # google.protobuf.Empty written as null (a2a-sdk 1.3.0 does; docs/interop.md)
    try:
        return method.result.from_dict(result)
    except codec.DecodeError as exc:
        raise errors.InvalidAgentResponseError(
            f"result does not fit {method.name}: {exc}"
        ) from None
