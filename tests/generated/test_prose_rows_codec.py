"""Codec-level checks of rows of docs/prose-and-proto.md that no other test pins.

Each test names its row; docs/prose-and-proto.md names the test back
(tests/test_prose_and_proto.py checks that every named test exists).
"""

from __future__ import annotations

import re

from a2a_wire import types
from a2a_wire._protocol.tasks import now_timestamp


def test_row04_card_security_is_security_requirements() -> None:
    card = types.AgentCard.from_dict(
        {"name": "n", "security": [{"google": ["openid"]}]}  # the 8.5 sample's OpenAPI shape
    )
    assert card.security_requirements == []
    requirement = types.SecurityRequirement(schemes={"google": types.StringList(list_=["openid"])})
    written = types.AgentCard(security_requirements=[requirement]).to_dict()
    assert written["securityRequirements"] == [{"schemes": {"google": {"list": ["openid"]}}}]
    assert "security" not in written


def test_row05_card_level_protocol_versions_are_unknown() -> None:
    card = types.AgentCard.from_dict({"name": "n", "protocolVersions": ["1.0"]})
    assert "protocolVersions" not in card.to_dict()
    iface = types.AgentInterface(
        url="https://a", protocol_binding="JSONRPC", protocol_version="1.0"
    )
    assert iface.to_dict()["protocolVersion"] == "1.0"


def _field_number(cls: type, proto_name: str) -> int:
    match = re.search(rf"Field ``{proto_name}`` = (\d+)", cls.__doc__ or "")
    assert match is not None, (cls, proto_name)
    return int(match[1])


def test_row06_field_numbers_come_from_the_proto_not_the_appendix() -> None:
    assert _field_number(types.AgentCapabilities, "extended_agent_card") == 4
    assert _field_number(types.AgentCard, "signatures") == 13


def test_row07_old_enum_spellings_are_kept_as_unknown_values() -> None:
    message = types.Message.from_dict({"messageId": "m", "role": "user", "parts": [{"text": "x"}]})
    assert not message.role.is_known and message.role is not types.Role.USER
    assert message.missing_fields() == []  # set, though unknown: not "missing"
    assert message.to_dict()["role"] == "user"  # relayed unchanged
    status = types.TaskStatus.from_dict({"state": "input-required"})
    assert status.state is not types.TaskState.INPUT_REQUIRED and not status.state.is_known


def test_row18_media_type_is_read_from_the_part_only() -> None:
    part = types.Part.from_dict({"text": "x", "metadata": {"mediaType": "application/json"}})
    assert part.media_type == ""
    assert part.metadata == {"mediaType": "application/json"}
    assert types.Part(text="x", media_type="text/plain").to_dict()["mediaType"] == "text/plain"


def test_row19_a_part_without_content_decodes_with_no_member() -> None:
    assert types.Part.from_dict({}).which_content() is None
    assert types.Part.from_dict({"hologram": {"uri": "x"}}).which_content() is None
    assert types.Part.from_dict({}).missing_fields() == []
    assert types.Part.from_dict({"data": None}).which_content() == "data"


def test_row22_server_stamps_have_millisecond_precision() -> None:
    stamp = now_timestamp()
    assert stamp.nanos % 1_000_000 == 0
    text = types.Timestamp(seconds=stamp.seconds, nanos=123_000_000).to_rfc3339()
    assert text.endswith(".123Z")
    assert "." not in types.Timestamp(seconds=stamp.seconds).to_rfc3339()  # whole seconds


def test_row24_capability_flags_keep_presence() -> None:
    assert types.AgentCapabilities.from_dict({}).streaming is None
    explicit = types.AgentCapabilities.from_dict({"streaming": False})
    assert explicit.streaming is False
    assert explicit.to_dict() == {"streaming": False}
    assert types.AgentCapabilities().to_dict() == {}


def test_row46_empty_is_an_empty_object() -> None:
    assert types.Empty().to_dict() == {}
    assert types.Empty.from_dict({}) == types.Empty()
