"""Hand-written JSON cases for presence, oneofs, REQUIRED output, error paths and strict JSON.

Companion of ``test_mapping_rules.py`` (which covers names and scalar encodings): one table per
rule about the shape of a message rather than the form of a value. Spec references: REQUIRED
fields, ``optional`` presence and ignoring unrecognized fields (spec 5.7).
"""

from __future__ import annotations

from typing import Any

import pytest

from a2a_wire import codec, types
from a2a_wire.codec import UNSET, DecodeError, JSONSyntaxError
from a2a_wire.types import Part, Role, TaskState

# -- null means "not set", except for a google.protobuf.Value field -------------------------

NULL_IS_UNSET: list[
    tuple[Any, str, str, Any]
] = [  # (class, JSON name, attribute, value when absent)
    (Part, "text", "text", None),
    (Part, "raw", "raw", None),
    (Part, "filename", "filename", ""),
    (Part, "metadata", "metadata", None),
    (types.GetTaskRequest, "historyLength", "history_length", None),
    (types.Task, "status", "status", None),
    (types.Message, "parts", "parts", []),
    (types.Message, "role", "role", Role.UNSPECIFIED),
    (types.AgentCard, "securitySchemes", "security_schemes", {}),
    (types.TaskStatus, "timestamp", "timestamp", None),
    (types.AgentCapabilities, "streaming", "streaming", None),
]


@pytest.mark.parametrize(("cls", "key", "attr", "absent"), NULL_IS_UNSET)
def test_null_means_not_set(cls: Any, key: str, attr: str, absent: Any) -> None:
    assert getattr(cls.from_dict({key: None}), attr) == absent
    assert cls.from_dict({key: None}) == cls.from_dict({}) == cls()


@pytest.mark.parametrize(
    ("cls", "obj", "path"),
    [(types.Message, {"parts": [None]}, "parts[0]"), (types.Message, {"extensions": [None]}, "extensions[0]"),
     (types.AgentCard, {"securitySchemes": {"a": None}}, "securitySchemes['a']")],
)  # fmt: skip
def test_null_inside_a_list_or_map_is_refused(cls: Any, obj: Any, path: str) -> None:
    with pytest.raises(DecodeError) as info:
        cls.from_dict(obj)
    assert info.value.path == path


def test_json_null_sets_a_value_field() -> None:
    part = Part.from_dict({"data": None})
    assert part.data is None
    assert part.which_content() == "data"
    assert part.to_dict() == {"data": None}
    assert Part().data is UNSET and Part().which_content() is None and Part().to_dict() == {}
    assert codec.encode(part) == b'{"data":null}'


# -- Oneofs ----------------------------------------------------------------------------------

TWO_MEMBERS = [
    (Part, {"text": "a", "url": "u"}, ""),
    (Part, {"text": "a", "data": None}, ""),
    (Part, {"raw": "", "data": {}}, ""),
    (types.SendMessageRequest, {"message": {"parts": [{}, {"text": "a", "raw": "aGk="}]}}, "message.parts[1]"),
    (types.StreamResponse, {"task": {}, "message": {}}, ""),
    (types.SecurityScheme, {"apiKeySecurityScheme": {}, "mtlsSecurityScheme": {}}, ""),
    (types.AgentCard, {"securitySchemes": {"s": {"oauth2SecurityScheme": {"flows": {
        "implicit": {}, "password": {}}}}}}, "securitySchemes['s'].oauth2SecurityScheme.flows"),
]  # fmt: skip


@pytest.mark.parametrize(("cls", "obj", "path"), TWO_MEMBERS)
def test_two_members_of_a_oneof_are_refused(cls: Any, obj: Any, path: str) -> None:
    with pytest.raises(DecodeError, match="more than one member of oneof") as info:
        cls.from_dict(obj)
    assert info.value.path == path


def test_oneof_error_names_the_members_that_are_set() -> None:
    with pytest.raises(DecodeError) as info:
        Part.from_dict({"text": "a", "url": "u"})
    assert info.value.reason.endswith("is set: text, url")


@pytest.mark.parametrize(
    ("obj", "which"),
    [({"text": None, "url": "u"}, "url"), ({"text": ""}, "text"), ({"raw": ""}, "raw"),
     ({"file": {"uri": "https://example.com/a"}}, None), ({"data": 0}, "data"), ({}, None)],
)  # fmt: skip
def test_oneof_member_set(obj: dict[str, Any], which: str | None) -> None:
    part = Part.from_dict(obj)
    assert part.which_content() == which
    assert Part.from_dict(part.to_dict()) == part


def test_oneof_member_set_to_its_default_is_written() -> None:
    assert Part(text="").to_dict() == {"text": ""}
    assert types.StreamResponse(task=types.Task()).to_dict() == {"task": {"id": ""}}
    assert types.SendMessageResponse(message=types.Message()).which_payload() == "message"


# -- Unknown fields --------------------------------------------------------------------------

REQUEST = {
    "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
    "configuration": {
        "taskPushNotificationConfig": {"url": "u", "authentication": {"scheme": "Bearer"}}
    },
}


@pytest.mark.parametrize(
    "where", [(), ("message",), ("message", "parts", 0), ("configuration",),
              ("configuration", "taskPushNotificationConfig", "authentication")],
)  # fmt: skip
def test_unknown_fields_are_ignored_at_every_depth(where: tuple[Any, ...]) -> None:
    noisy = codec.loads(codec.dumps(REQUEST))
    node = noisy
    for step in where:
        node = node[step]
    node.update({"futureField": {"deep": [1, {"x": None}]}, "kind": "text", "file": "x", "": 0})
    assert types.SendMessageRequest.from_dict(noisy) == types.SendMessageRequest.from_dict(REQUEST)


# -- REQUIRED fields are always written, other defaults are not ------------------------------

WRITTEN = [
    (types.ListTasksResponse(), {"tasks": [], "nextPageToken": "", "pageSize": 0, "totalSize": 0}),
    (types.Message(), {"messageId": "", "role": "ROLE_UNSPECIFIED", "parts": []}),
    (types.TaskStatus(), {"state": "TASK_STATE_UNSPECIFIED"}),
    (types.Task(), {"id": ""}),
    (types.Task(status=types.TaskStatus()), {"id": "", "status": {"state": "TASK_STATE_UNSPECIFIED"}}),
    (types.GetTaskRequest(history_length=0), {"id": "", "historyLength": 0}),
    (types.ListTasksRequest(include_artifacts=False, page_size=0), {"pageSize": 0, "includeArtifacts": False}),
    (types.AgentCapabilities(streaming=False), {"streaming": False}),
    (types.SendMessageConfiguration(), {}),
    (types.Part(filename="", media_type="", metadata={}), {"metadata": {}}),
    (types.ListTaskPushNotificationConfigsRequest(page_size=0), {"taskId": ""}),
    (types.Empty(), {}),
]  # fmt: skip


@pytest.mark.parametrize(("value", "expected"), WRITTEN)
def test_written_fields(value: Any, expected: dict[str, Any]) -> None:
    assert value.to_dict() == expected
    assert type(value).from_dict(expected) == value


def test_agent_card_required_lists_are_written_empty() -> None:
    card = types.AgentCard().to_dict()
    assert card["skills"] == [] and card["supportedInterfaces"] == []
    assert card["defaultInputModes"] == [] and card["defaultOutputModes"] == []
    assert "signatures" not in card and "capabilities" not in card


# -- Error paths -----------------------------------------------------------------------------

PATHS = [
    (types.SendMessageRequest, {"message": {"parts": [{"raw": 5}]}}, "message.parts[0].raw"),
    (types.SendMessageRequest, {"message": {"parts": [{}, {"raw": "!!"}]}}, "message.parts[1].raw"),
    (types.SendMessageRequest, {"configuration": {"history_length": "x"}}, "configuration.historyLength"),
    (types.Task, {"history": [{"role": True}]}, "history[0].role"),
    (types.Task, {"status": {"timestamp": "2023-02-30T00:00:00Z"}}, "status.timestamp"),
    (types.Task, {"artifacts": "x"}, "artifacts"),
    (types.Task, {"metadata": []}, "metadata"),
    (types.StreamResponse, {"artifactUpdate": {"artifact": {"parts": [{"text": 1}]}}},
     "artifactUpdate.artifact.parts[0].text"),
    (types.AgentCard, {"securitySchemes": {"o": {"oauth2SecurityScheme": {"flows": {"authorizationCode": {
        "scopes": {"read": 5}}}}}}}, "securitySchemes['o'].oauth2SecurityScheme.flows.authorizationCode.scopes['read']"),
    (types.AgentCard, {"skills": [{"securityRequirements": [{"schemes": {"k": {"list": [1]}}}]}]},
     "skills[0].securityRequirements[0].schemes['k'].list[0]"),
    (types.SendMessageRequest, [], ""),
    (types.SendMessageRequest, {"message": "hi"}, "message"),
]  # fmt: skip


@pytest.mark.parametrize(("cls", "obj", "path"), PATHS)
def test_error_paths(cls: Any, obj: Any, path: str) -> None:
    with pytest.raises(DecodeError) as info:
        cls.from_dict(obj)
    assert info.value.path == path
    assert str(info.value) == (f"{path}: {info.value.reason}" if path else info.value.reason)


def test_error_reason_is_exact() -> None:
    with pytest.raises(DecodeError) as info:
        codec.decode(types.SendMessageRequest, b'{"message":{"parts":[{"raw":5}]}}')
    assert str(info.value) == "message.parts[0].raw: expected base64 string, got number"


# -- missing_fields --------------------------------------------------------------------------

USER: dict[str, Any] = {"message_id": "m", "role": Role.USER, "parts": [Part(text="hi")]}
MISSING = [
    (types.SendMessageRequest(), ["message"]),
    (types.SendMessageRequest(message=types.Message()), ["message.messageId", "message.role", "message.parts"]),
    (types.SendMessageRequest(message=types.Message(**USER)), []),
    (types.SendMessageRequest(message=types.Message(**{**USER, "parts": []})), ["message.parts"]),
    (types.TaskStatus(state=TaskState("TASK_STATE_PAUSED")), []),
    (types.Task(id="t", status=types.TaskStatus(), history=[types.Message(**{**USER, "message_id": ""})]),
     ["status.state", "history[0].messageId"]),
    (types.AgentCard(security_schemes={"k": types.SecurityScheme(
        api_key_security_scheme=types.APIKeySecurityScheme(name="n"))}, skills=[types.AgentSkill(id="s")]),
     ["name", "description", "supportedInterfaces", "version", "capabilities",
      "securitySchemes['k'].apiKeySecurityScheme.location", "defaultInputModes", "defaultOutputModes",
      "skills[0].name", "skills[0].description", "skills[0].tags"]),
    (types.ListTasksResponse(), ["tasks", "nextPageToken"]),
]  # fmt: skip


@pytest.mark.parametrize(("value", "missing"), MISSING)
def test_missing_fields(value: Any, missing: list[str]) -> None:
    assert value.missing_fields() == missing


# -- Strict JSON text ------------------------------------------------------------------------

NOT_JSON = [b'{"data": NaN}', b'{"data": Infinity}', b'{"data": -Infinity}', b'{"text": "\xff"}',
            b'{"text": "\\ud800"}', b'{"text": "\\udc00x"}', b"{'text': 'a'}", b'{"text": "a",}', b""]  # fmt: skip


@pytest.mark.parametrize("text", NOT_JSON)
def test_strict_json(text: bytes) -> None:
    with pytest.raises(JSONSyntaxError):
        codec.loads(text)
    with pytest.raises(JSONSyntaxError):
        codec.decode(Part, text)


def test_surrogate_pairs_and_non_ascii_are_fine() -> None:
    assert codec.decode(Part, b'{"text": "\\ud83d\\ude00"}').text == "\U0001f600"
    assert codec.decode(Part, '{"text": "é"}'.encode()).text == "é"
    with pytest.raises(codec.EncodeError, match="surrogates not allowed"):
        codec.encode(Part(text="\ud800"))


def test_huge_integers() -> None:
    digits = b"9" * 5000
    with pytest.raises(
        JSONSyntaxError, match="number is infinity"
    ):  # orjson refuses it before any field sees it
        codec.loads(digits)
    with pytest.raises(JSONSyntaxError, match="number is infinity"):
        codec.decode(types.GetTaskRequest, b'{"historyLength": ' + digits + b"}")
    for wire in (10**5000, "9" * 5000, 10**30):
        with pytest.raises(DecodeError) as info:
            types.GetTaskRequest.from_dict({"historyLength": wire})
        assert info.value.path == "historyLength"
    with pytest.raises(DecodeError, match="beyond 64 bits"):
        Part.from_dict({"data": 10**5000})


# -- repr ------------------------------------------------------------------------------------


def test_repr_is_bounded_but_names_the_length() -> None:
    text = "x" * 1_000_000
    part = Part(text=text)
    task = types.Task(id="t", artifacts=[types.Artifact(artifact_id="a", parts=[part])],
                      history=[types.Message(message_id=str(i), parts=[part]) for i in range(50)])  # fmt: skip
    for value in (task, part, Part(raw=b"y" * 1_000_000)):
        shown = repr(value)
        assert len(shown) < 2000
        assert "1000000" in shown
    assert repr(types.Task(id="t")) == "Task(id='t')"
    assert repr(Part(data=None)) == "Part(data=None)"
