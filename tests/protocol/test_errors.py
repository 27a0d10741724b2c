"""The exception tree and ``errors.from_wire``, tested directly (no event loop, no server).

Every exception class defined anywhere under ``a2a_wire`` is found by walking the package, so a
class added outside the tree, left out of the drawing in ``docs/errors.md``, or drawn under the
wrong parent fails here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import a2a_wire
from a2a_wire import codec, errors, netguard
from a2a_wire._generated import _support
from a2a_wire.client import ClientTimeoutError, ConnectTimeoutError, UnexpectedResponseError
from a2a_wire.errors import (
    ERROR_CLASSES,
    A2AError,
    ClientError,
    InvalidAgentResponseError,
    InvalidParamsError,
    ProtocolError,
    TaskNotFoundError,
    UnavailableError,
    UnknownProtocolError,
    from_wire,
)
from a2a_wire.server import _errors as server_errors
from a2a_wire.server.store import StoreUnavailableError

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"


def _exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in a module of ``a2a_wire``, by name."""
    found: dict[str, type[BaseException]] = {}
    names = ["a2a_wire"] + [m.name for m in pkgutil.walk_packages(a2a_wire.__path__, "a2a_wire.")]
    for name in names:
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == module.__name__
            ):
                assert obj.__name__ not in found, f"two exception classes named {obj.__name__}"
                found[obj.__name__] = obj
    return found


CLASSES = _exception_classes()


ERRORS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "errors.md"


def _drawing() -> list[str]:
    """The lines of the tree drawn in docs/errors.md (its first ``text`` block)."""
    page = ERRORS_PAGE.read_text(encoding="utf-8")
    return page.split("```text\n", 1)[1].split("```", 1)[0].splitlines()


def _drawn_tree() -> dict[str, str]:
    """Class name -> parent name, read from the drawing in docs/errors.md."""
    parents: dict[str, str] = {}
    stack: list[str] = []
    for line in _drawing():
        root = re.fullmatch(r"(A2AError)\b.*", line)
        branch = re.match(r"((?:[│ ] {3})*)[├└]── ([A-Za-z]+)", line)
        if root:
            stack = [root.group(1)]
        elif branch:
            depth = len(branch.group(1)) // 4 + 1
            del stack[depth:]
            parents[branch.group(2)] = stack[depth - 1]
            stack.append(branch.group(2))
    return parents


# -- the tree ---------------------------------------------------------------------------------


def test_the_walk_finds_exceptions_of_every_room() -> None:
    modules = {cls.__module__ for cls in CLASSES.values()}
    assert {
        "a2a_wire._generated._support",
        "a2a_wire._protocol.sse",
        "a2a_wire._protocol.tasks",
        "a2a_wire.cli._serve",
        "a2a_wire.cli.config._load",
        "a2a_wire.client._errors",
        "a2a_wire.codec",
        "a2a_wire.errors",
        "a2a_wire.netguard",
        "a2a_wire.server._errors",
    } <= modules


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_every_exception_class_derives_from_a2a_error(name: str) -> None:
    assert issubclass(CLASSES[name], A2AError)


def test_the_root_is_one_class_object_shared_with_generated_code() -> None:
    assert errors.A2AError is _support.A2AError
    assert issubclass(codec.DecodeError, A2AError)
    assert codec.DecodeError is _support.DecodeError


def test_the_drawing_shows_every_class_under_its_parent() -> None:
    parents = _drawn_tree()
    assert set(parents) | {"A2AError"} == set(CLASSES)
    for name, parent in parents.items():
        assert CLASSES[name].__bases__[0].__name__ == parent, name


def test_the_tree_is_drawn_only_in_the_errors_page() -> None:
    for cls in CLASSES.values():
        module = inspect.getmodule(cls)
        assert "──" not in (module.__doc__ or ""), module
        assert "──" not in (cls.__doc__ or ""), cls


def test_builtin_bases_are_kept_for_compatibility() -> None:
    assert issubclass(codec.JSONSyntaxError, ValueError)
    assert issubclass(codec.EncodeError, ValueError)
    with pytest.raises(ValueError):
        codec.loads(b"NaN")
    with pytest.raises(A2AError):
        codec.loads(b"{")


# -- abstract classes -------------------------------------------------------------------------

ABSTRACT: dict[type[A2AError], Callable[[], object]] = {
    A2AError: lambda: A2AError("x"),
    ProtocolError: lambda: ProtocolError("x"),
    ClientError: lambda: ClientError("x"),
    ClientTimeoutError: lambda: ClientTimeoutError("read_timeout", 1.0),
    UnexpectedResponseError: lambda: UnexpectedResponseError("x", status=502),
    netguard.AddressGuardError: lambda: netguard.AddressGuardError("x"),
}


def test_the_abstract_classes_are_the_flagged_ones() -> None:
    flagged = {cls for cls in CLASSES.values() if cls.__dict__.get("_abstract", False)}
    assert flagged == set(ABSTRACT)


@pytest.mark.parametrize("cls", list(ABSTRACT), ids=lambda c: c.__name__)
def test_abstract_classes_refuse_instantiation(cls: type[A2AError]) -> None:
    with pytest.raises(TypeError, match=f"{cls.__name__} is abstract"):
        ABSTRACT[cls]()


def test_subclasses_of_abstract_classes_do_not_inherit_the_flag() -> None:
    assert str(ConnectTimeoutError("connect_timeout", 2.0)) == "connect_timeout=2s exceeded"
    assert TaskNotFoundError().message == "Task not found"
    assert str(netguard.ForbiddenURLError("no host")) == "no host"


# -- the code table ---------------------------------------------------------------------------


def test_every_code_maps_to_the_class_that_declares_it() -> None:
    assert sorted(ERROR_CLASSES) == [
        *range(-32700, -32699),
        *range(-32603, -32599),
        *range(-32009, -31999),
    ]
    declaring = {
        cls.__dict__["code"]: cls
        for cls in CLASSES.values()
        if issubclass(cls, ProtocolError) and "code" in cls.__dict__
    }
    assert declaring == ERROR_CLASSES


@pytest.mark.parametrize("code", sorted(ERROR_CLASSES))
def test_from_wire_rebuilds_the_registered_class(code: int) -> None:
    exc = from_wire({"code": code, "message": "as sent"})
    assert type(exc) is ERROR_CLASSES[code]
    assert (exc.code, exc.message, exc.data) == (code, "as sent", None)


def test_a_second_class_for_a_code_is_refused() -> None:
    with pytest.raises(TypeError, match="-32001 registered twice"):

        class Again(ProtocolError):
            code = -32001

    assert ERROR_CLASSES[-32001] is TaskNotFoundError


def test_refinements_keep_their_parent_code_and_are_not_registered() -> None:
    refusals = [
        server_errors.UnauthenticatedError,
        server_errors.ServerFailureError,
        StoreUnavailableError,
    ]
    for cls in refusals:
        assert ERROR_CLASSES[cls.code] is cls.__bases__[0]


# -- unavailable ------------------------------------------------------------------------------


def test_a_store_fault_is_a_retryable_503_with_its_reason() -> None:
    exc = StoreUnavailableError("the database restarts", retry_after=2.2)
    assert (exc.code, exc.http_status, exc.retry_after) == (-32000, 503, 3)
    assert exc.http_headers() == [("Retry-After", "3")]
    assert exc.to_wire() == {
        "code": -32000,
        "message": "the database restarts",
        "data": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "STORE_UNAVAILABLE",
                "domain": "a2a-wire",
                "metadata": {"retryAfterSeconds": "3"},
            }
        ],
    }


def test_a_received_unavailable_error_keeps_its_wait() -> None:
    exc = from_wire(StoreUnavailableError(retry_after=7).to_wire())
    assert type(exc) is UnavailableError
    assert (exc.retry_after, exc.http_headers()) == (7, [("Retry-After", "7")])
    assert from_wire({"code": -32000, "message": "busy"}).retry_after == 1  # type: ignore[attr-defined]


# -- from_wire --------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [-32099, -1, 0, 42, 2**40])
def test_unknown_codes_keep_code_message_and_data(code: int) -> None:
    wire = {"code": code, "message": "custom", "data": [{"any": ["thing"]}]}
    exc = from_wire(wire)
    assert type(exc) is UnknownProtocolError
    assert (exc.code, exc.message) == (code, "custom")
    assert exc.to_wire() == wire


@pytest.mark.parametrize(
    "error",
    [
        None,
        "Task not found",
        -32001,
        [{"code": -32001, "message": "x"}],
        {},
        {"code": -32001},
        {"message": "no code"},
        {"code": "-32001", "message": "code as text"},
        {"code": -32001.0, "message": "code as float"},
        {"code": True, "message": "code as bool"},
        {"code": -32001, "message": None},
        {"code": -32001, "message": ["x"]},
    ],
)
def test_malformed_error_objects_are_invalid_agent_responses(error: Any) -> None:
    exc = from_wire(error)
    assert type(exc) is InvalidAgentResponseError
    assert exc.code == -32006


def test_data_is_kept_verbatim_and_read_back() -> None:
    info = {
        "@type": ERROR_INFO,
        "reason": "SOMETHING_ELSE",
        "domain": "example.com",
        "metadata": {"taskId": "t-1", "n": 3},
        "extra": {"kept": True},
    }
    wire = {"code": -32001, "message": "gone", "data": [info, "a string", 7]}
    exc = from_wire(wire)
    assert type(exc) is TaskNotFoundError
    assert exc.data == [info, "a string", 7]
    assert exc.metadata == {"taskId": "t-1", "n": "3"}
    assert exc.to_wire() == wire


def test_data_that_is_not_an_array_is_wrapped() -> None:
    exc = from_wire({"code": -32603, "message": "boom", "data": {"trace": "id"}})
    assert exc.data == [{"trace": "id"}]
    assert from_wire({"code": -32603, "message": "boom", "data": None}).data is None


def test_field_violations_are_read_back() -> None:
    violations = [
        {"field": "message.parts[0]", "description": "empty part"},
        {"description": "no field"},
        "not an object",
    ]
    exc = from_wire(
        {
            "code": -32602,
            "message": "bad",
            "data": [{"@type": BAD_REQUEST, "fieldViolations": violations}],
        }
    )
    assert isinstance(exc, InvalidParamsError)
    assert exc.violations == [("message.parts[0]", "empty part"), ("", "no field")]


def test_local_errors_build_their_details() -> None:
    assert TaskNotFoundError(metadata={"taskId": "t"}).to_wire() == {
        "code": -32001,
        "message": "Task not found",
        "data": [
            {
                "@type": ERROR_INFO,
                "reason": "TASK_NOT_FOUND",
                "domain": "a2a-protocol.org",
                "metadata": {"taskId": "t"},
            }
        ],
    }
    exc = InvalidParamsError("bad", violations=[("id", "REQUIRED")])
    assert exc.to_wire()["data"] == [
        {"@type": BAD_REQUEST, "fieldViolations": [{"field": "id", "description": "REQUIRED"}]}
    ]


# -- HTTP status ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cls",
    sorted(set(ERROR_CLASSES.values()) - {UnavailableError}, key=lambda c: c.code),
)
def test_json_rpc_errors_travel_with_http_200(cls: type[ProtocolError]) -> None:
    assert cls.http_status == 200
    assert cls().http_headers() == []


def test_http_level_refusals_carry_their_status_and_headers() -> None:
    s = server_errors
    unauthenticated = s.UnauthenticatedError(['Bearer realm="a2a"', 'ApiKey realm="a2a"'])
    limited = s.RateLimitedError("requests", 1.2)
    refused = s.HTTPRefusalError("HTTP 405 Method Not Allowed", status=405, allow="POST")
    cases = [
        (
            unauthenticated,
            401,
            [
                ("WWW-Authenticate", 'Bearer realm="a2a"'),
                ("WWW-Authenticate", 'ApiKey realm="a2a"'),
            ],
        ),
        (limited, 429, [("Retry-After", "2")]),
        (s.UnsupportedMediaTypeError("text/plain"), 415, []),
        (s.UnreadableBodyError("bad gzip"), 400, []),
        (s.RequestTooLargeError(4096), 413, []),
        (s.BodyTimeoutError(30.0), 408, []),
        (refused, 405, [("Allow", "POST")]),
        (s.HTTPRefusalError("HTTP 404 Not Found", status=404), 404, []),
        (s.ServerFailureError(), 500, []),
    ]
    for exc, status, headers in cases:
        assert (exc.http_status, exc.http_headers()) == (status, headers), exc


def test_admission_refusals_are_invalid_requests_with_an_a2a_wire_error_info() -> None:
    limited = server_errors.RateLimitedError("requests", 0.1).to_wire()
    assert limited == {
        "code": -32600,
        "message": "Too many requests; retry after 1 s",
        "data": [
            {
                "@type": ERROR_INFO,
                "reason": "RATE_LIMITED",
                "domain": "a2a-wire",
                "metadata": {"retryAfterSeconds": "1"},
            }
        ],
    }
    assert server_errors.UnauthenticatedError().to_wire() == {
        "code": -32600,
        "message": "Authentication required",
        "data": [{"@type": ERROR_INFO, "reason": "UNAUTHENTICATED", "domain": "a2a-wire"}],
    }
