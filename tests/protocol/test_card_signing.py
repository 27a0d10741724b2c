"""Card signatures (spec 8.4): canonical form, sign/verify vectors, tampering, key rotation."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from a2a_wire.card_signing import (
    CardSignatureError,
    CardSigner,
    CardVerifier,
    SigningKey,
    TrustedKeys,
    canonical_card,
)
from a2a_wire.client import InvalidAgentCardError
from a2a_wire.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
)


def card() -> AgentCard:
    return AgentCard(
        name="Signed agent",
        description="",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url="https://agent.example/rpc", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="s", name="S", description="d", tags=["t"])],
    )


@pytest.fixture(scope="module")
def es_key() -> SigningKey:
    return SigningKey.generate("es-1")


@pytest.fixture(scope="module")
def rs_key() -> SigningKey:
    return SigningKey.generate("rs-1", "RS256")


def trusted(*keys: SigningKey) -> TrustedKeys:
    return TrustedKeys.from_jwks({"keys": [k.public_jwk() for k in keys]})


def test_canonical_form_follows_the_presence_rules() -> None:
    document = card().to_dict()
    document["signatures"] = [{"protected": "x", "signature": "y"}]
    text = canonical_card(document).decode()
    # keys sorted, no whitespace, signatures gone, REQUIRED empty description kept,
    # optional streaming=false kept, empty capabilities.extensions dropped (spec 8.4.1 example)
    assert text.startswith('{"capabilities":{"streaming":false},"defaultInputModes"')
    assert (
        '"description":""' in text
        and "signatures" not in text
        and " " not in text.replace("Signed agent", "")
    )
    assert "extensions" not in text


def test_canonical_form_is_rfc8785() -> None:
    assert canonical_card({"b": 1, "a": [1.0, "é", {"d": None, "c": 1e21}]}) == (
        '{"a":[1,"é",{"c":1e+21,"d":null}],"b":1}'.encode()
    )


@pytest.mark.parametrize("key_name", ["es_key", "rs_key"])
def test_sign_then_verify(key_name: str, request: pytest.FixtureRequest) -> None:
    key: SigningKey = request.getfixturevalue(key_name)
    document = card().to_dict()
    document["signatures"] = CardSigner([key]).sign(document)
    assert CardVerifier(trusted(key)).verify(document) == key.kid
    [entry] = document["signatures"]
    header = json.loads(base64.urlsafe_b64decode(entry["protected"] + "=="))
    assert header == {"alg": key.alg, "kid": key.kid, "typ": "JOSE"}
    assert set(entry) == {"protected", "signature"}  # detached payload


def test_jku_goes_into_the_protected_header() -> None:
    key = SigningKey.generate("j1", jku="https://agent.example/jwks.json")
    [entry] = CardSigner([key]).sign(card().to_dict())
    header = json.loads(base64.urlsafe_b64decode(entry["protected"] + "=="))
    assert header["jku"] == "https://agent.example/jwks.json"


def test_sign_card_round_trip(es_key: SigningKey) -> None:
    signed = CardSigner([es_key]).sign_card(card())
    assert len(signed.signatures) == 1
    assert CardVerifier(trusted(es_key)).verify(signed.to_dict()) == "es-1"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("name",), "Evil agent"),
        (("supportedInterfaces", 0, "url"), "https://evil.example/rpc"),
        (("capabilities", "streaming"), True),
        (("description",), "x"),
    ],
)
def test_altered_card_fails(es_key: SigningKey, path: tuple[Any, ...], value: Any) -> None:
    document = card().to_dict()
    document["signatures"] = CardSigner([es_key]).sign(document)
    target: Any = document
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    with pytest.raises(CardSignatureError) as caught:
        CardVerifier(trusted(es_key)).verify(document)
    assert isinstance(caught.value, InvalidAgentCardError)
    assert caught.value.reasons == (
        "signature 0: does not match the card (altered, or not signed by key 'es-1')",
    )


def test_unknown_fields_of_newer_versions_are_signed_as_received(es_key: SigningKey) -> None:
    document = card().to_dict()
    document["futureField"] = {"x": [1, 2]}
    document["signatures"] = CardSigner([es_key]).sign(document)
    assert CardVerifier(trusted(es_key)).verify(document) == "es-1"
    document["futureField"] = {"x": [1, 3]}
    with pytest.raises(CardSignatureError, match="signature 0: does not match the card"):
        CardVerifier(trusted(es_key)).verify(document)


def test_explicit_defaults_from_a_sender_still_verify(es_key: SigningKey) -> None:
    document = card().to_dict()
    document["signatures"] = CardSigner([es_key]).sign(document)
    document["capabilities"]["extensions"] = []  # dropped by the presence rules
    document["securitySchemes"] = {}
    assert CardVerifier(trusted(es_key)).verify(document) == "es-1"


def test_key_rotation_with_two_signatures(es_key: SigningKey, rs_key: SigningKey) -> None:
    document = card().to_dict()
    document["signatures"] = CardSigner([es_key, rs_key]).sign(document)
    assert len(document["signatures"]) == 2
    assert CardVerifier(trusted(es_key)).verify(document) == "es-1"  # old key trusted
    assert CardVerifier(trusted(rs_key)).verify(document) == "rs-1"  # new key trusted
    with pytest.raises(CardSignatureError) as caught:
        CardVerifier(trusted(SigningKey.generate("other"))).verify(document)
    assert caught.value.reasons == (
        "signature 0: key id 'es-1' is not trusted",
        "signature 1: key id 'rs-1' is not trusted",
    )


def test_unsigned_card(es_key: SigningKey, caplog: pytest.LogCaptureFixture) -> None:
    document = card().to_dict()
    with pytest.raises(CardSignatureError) as caught:
        CardVerifier(trusted(es_key)).verify(document)
    assert caught.value.reasons == ("the card has no signatures",)
    assert CardVerifier(trusted(es_key), required=False).verify(document) is None
    assert "no signatures" in caplog.text


def _entry(header: dict[str, Any], signature: str = "AAAA") -> dict[str, str]:
    protected = base64.urlsafe_b64encode(json.dumps(header).encode()).decode().rstrip("=")
    return {"protected": protected, "signature": signature}


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("nope", "not an object"),
        ({"protected": "%%%", "signature": "x"}, "not base64url JSON"),
        (_entry({"alg": "HS256", "kid": "es-1"}), "algorithm 'HS256' is not accepted"),
        (_entry({"alg": "none", "kid": "es-1"}), "algorithm 'none' is not accepted"),
        (_entry({"alg": "ES256"}), "no kid"),
        (_entry({"alg": "ES256", "kid": "es-1", "crit": ["exp"]}), "crit or b64"),
        (_entry({"alg": "ES256", "kid": "es-1"}), "does not match the card"),
        (_entry({"alg": "RS256", "kid": "es-1"}), "does not match the card"),  # wrong key type
    ],
)
def test_each_bad_signature_names_its_reason(es_key: SigningKey, entry: Any, reason: str) -> None:
    document = card().to_dict()
    document["signatures"] = [entry]
    with pytest.raises(CardSignatureError) as caught:
        CardVerifier(trusted(es_key)).verify(document)
    assert reason in caught.value.reasons[0]


def test_symmetric_keys_cannot_be_used() -> None:
    with pytest.raises(ValueError, match="^key 'h' is public; signing needs the private key$"):
        SigningKey.load({"kty": "oct", "k": "c2VjcmV0"}, "h", alg="HS256")


def test_keys_from_pem_and_files(tmp_path: Path) -> None:
    private = ec.generate_private_key(ec.SECP256R1())
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    key = SigningKey.load(pem, "pem-1")
    assert key.alg == "ES256"
    jwks_file = tmp_path / "trusted.json"
    jwks_file.write_text(json.dumps(CardSigner([key]).jwks()))
    document = card().to_dict()
    document["signatures"] = CardSigner([key]).sign(document)
    assert CardVerifier(TrustedKeys.from_file(jwks_file)).verify(document) == "pem-1"
    public_pem = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert CardVerifier(TrustedKeys.from_mapping({"pem-1": public_pem})).verify(document)
    with pytest.raises(ValueError, match="^key 'pub' is public; signing needs the private key$"):
        SigningKey.load(public_pem, "pub")  # public keys cannot sign


def test_bad_trust_stores() -> None:
    with pytest.raises(ValueError, match="^a JWKS is an object with a 'keys' array$"):
        TrustedKeys.from_jwks({"nokeys": []})
    with pytest.raises(ValueError, match="^every key of the JWKS needs a 'kid'$"):
        TrustedKeys.from_jwks({"keys": [{"kty": "EC"}]})
    with pytest.raises(ValueError, match="^trusted key 'k' could not be loaded: "):
        TrustedKeys.from_mapping({"k": "not a key"})
    with pytest.raises(ValueError, match="^a card signer needs at least one key$"):
        CardSigner([])
