"""Card findings (no browser): what is flagged, where, and at which level."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

import pytest
from inspector_support import broken_card

from a2a_wire.cli.inspect._checks import (
    CAPABILITY_MEMBERS,
    CARD_MEMBERS,
    INTERFACE_MEMBERS,
    SKILL_MEMBERS,
    Finding,
    check_card,
)
from a2a_wire.errors import InvalidAgentCardError
from a2a_wire.types import (
    AgentCapabilities,
    AgentCard,
    AgentCardSignature,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    APIKeySecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

HEADER = base64.urlsafe_b64encode(json.dumps({"alg": "ES256", "kid": "k1"}).encode()).decode()
REQUIREMENT = SecurityRequirement(schemes={"key": StringList(list_=["x"])})
SKILL = AgentSkill(
    id="s",
    name="S",
    description="d",
    tags=["t"],
    examples=["e"],
    input_modes=["text/plain"],
    output_modes=["text/plain"],
    security_requirements=[REQUIREMENT],
)
INTERFACE = AgentInterface(
    url="https://agent.example/rpc", protocol_binding="JSONRPC", tenant="t", protocol_version="1.0"
)
CAPABILITIES = AgentCapabilities(
    streaming=True,
    push_notifications=True,
    extensions=[AgentExtension(uri="urn:x")],
    extended_agent_card=True,
)
FULL = AgentCard(
    name="n",
    description="d",
    supported_interfaces=[INTERFACE],
    provider=AgentProvider(url="https://example.org", organization="o"),
    version="1",
    documentation_url="https://example.org/docs",
    capabilities=CAPABILITIES,
    security_schemes={
        "key": SecurityScheme(
            api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-Key")
        )
    },
    security_requirements=[REQUIREMENT],
    default_input_modes=["text/plain"],
    default_output_modes=["application/json"],
    skills=[SKILL],
    signatures=[AgentCardSignature(protected=HEADER.rstrip("="), signature="s")],
    icon_url="https://example.org/icon.png",
)


def levels(found: list[Finding], level: str) -> dict[str, str]:
    return {f.where: f.text for f in found if f.level == level}


def test_the_member_tables_are_the_codecs() -> None:
    document = FULL.to_dict()
    assert set(document) == CARD_MEMBERS
    assert set(document["skills"][0]) == SKILL_MEMBERS
    assert set(document["supportedInterfaces"][0]) == INTERFACE_MEMBERS
    assert set(document["capabilities"]) == CAPABILITY_MEMBERS


def test_a_good_card_has_no_errors_or_warnings() -> None:
    found = check_card(FULL.to_dict(), verify=lambda document: "k1")
    assert not levels(found, "error") and not levels(found, "warning"), found
    ok = levels(found, "ok")
    assert ok["supportedInterfaces[0]"] == (
        "JSON-RPC 1.0 interface at https://agent.example/rpc (tenant 't')"
    )
    assert ok["signatures"] == "signature verified with trusted key 'k1'"
    assert [f.level for f in found] == sorted(
        (f.level for f in found), key=["error", "warning", "info", "ok"].index
    )


def test_everything_wrong_with_the_broken_card_is_named() -> None:
    found = check_card(broken_card())
    assert levels(found, "error") == {
        "description": "REQUIRED member 'description' is missing",
        "skills[1].description": "REQUIRED member 'description' is missing",
        "skills[1].id": "skill id 'a' is used twice",
        "supportedInterfaces": (
            "no JSONRPC 1.0 interface (offers: JSONRPC 0.3); a2a-wire cannot talk to this agent"
        ),
        "securityRequirements[0]": (
            "requires scheme 'oauth', which securitySchemes does not declare"
        ),
        "signatures[0]": "the protected header is not base64url JSON",
    }
    assert levels(found, "warning") == {
        "url": "'url' is an A2A 0.3 member; 1.0 uses supportedInterfaces[].url",
        "capabilities.colour": "'colour' is not a member of this object in A2A 1.0 (ignored)",
        "defaultInputModes[0]": "'text' is not a type/subtype",
        "skills[1].outputModes[0]": "'image' is not a type/subtype",
    }
    assert "signatures" in levels(found, "info")  # not verified: no keys given


@pytest.mark.parametrize(
    ("document", "where", "text"),
    [
        ([], "", "the card is a JSON array, not an object"),
        ({**FULL.to_dict(), "name": 5}, "name", "does not decode as an A2A 1.0 card"),
        ({**FULL.to_dict(), "supportedInterfaces": []}, "supportedInterfaces", "no interface"),
        (
            {**FULL.to_dict(), "signatures": [{"protected": "eyJhbGciOiJIUzI1NiJ9"}]},
            "signatures[0]",
            "algorithm 'HS256' is not an asymmetric one",
        ),
    ],
)
def test_errors_say_where(document: Any, where: str, text: str) -> None:
    errors = levels(check_card(document), "error")
    assert where in errors and text in errors[where], errors


def test_odd_but_legal_things_are_warnings() -> None:
    document = FULL.to_dict()
    document["supportedInterfaces"][0]["url"] = "http://agent.example/rpc"
    document["capabilities"]["extensions"][0]["required"] = True
    document["skills"].append(dict(document["skills"][0], name=""))
    del document["securitySchemes"]
    del document["securityRequirements"], document["skills"][0]["securityRequirements"]
    del document["skills"][1]["securityRequirements"]
    warnings = levels(check_card(document), "warning")
    assert warnings["supportedInterfaces[0].url"].startswith("plain http")
    assert warnings["capabilities.extensions[0]"].startswith("requires extension 'urn:x'")
    assert warnings["capabilities.extendedAgentCard"].startswith("an extended card is offered")
    assert levels(check_card(document), "error")["skills[1].name"].startswith("REQUIRED")


def test_a_signature_that_does_not_verify_is_an_error() -> None:
    def refuse(document: Mapping[str, Any]) -> object:
        raise InvalidAgentCardError("agent card signature not verified: signature 0: bad")

    errors = levels(check_card(FULL.to_dict(), verify=refuse), "error")
    assert errors["signatures"] == (
        "does not verify: agent card signature not verified: signature 0: bad"
    )
