"""Credentials: salted scrypt hashes, the registry's lookup, the card declarations, owner keys."""

from __future__ import annotations

import hmac

import pytest
from multidict import CIMultiDict

from a2a_wire.server import (
    ANONYMOUS,
    AuthFailure,
    ClientRegistry,
    Principal,
    RegisteredClient,
    _scrypt,
    hash_secret,
    owner_key,
    verify_secret,
)

FAST = {"log2_n": 4}  # cheap scrypt for tests; the default is 14


def test_hash_is_salted_phc_and_verifies() -> None:
    one, two = hash_secret("s3cret", **FAST), hash_secret("s3cret", **FAST)
    assert one != two  # fresh salt each time
    assert one.startswith("$scrypt$ln=4,r=8,p=1$")
    assert "s3cret" not in one
    assert verify_secret("s3cret", one) and verify_secret("s3cret", two)
    assert not verify_secret("s3cret ", one)
    assert not verify_secret("", one)


def test_default_cost_is_strong() -> None:
    assert hash_secret("x").startswith("$scrypt$ln=14,")


def test_verification_uses_constant_time_compare(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append(1)
        return real(a, b)

    monkeypatch.setattr(_scrypt.hmac, "compare_digest", spy)
    assert verify_secret("k", hash_secret("k", **FAST))
    assert calls


NOT_SCRYPT = r"not a \$scrypt\$ hash made by hash_secret$"
OUT_OF_RANGE = "scrypt parameters out of range$"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("", NOT_SCRYPT),
        ("plain", NOT_SCRYPT),
        ("$scrypt$ln=99,r=8,p=1$AAAA$AAAA", OUT_OF_RANGE),
        ("$scrypt$ln=4,r=8,p=1$!!$AAAA", NOT_SCRYPT),
    ],
)
def test_malformed_hashes_are_refused(bad: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}"):
        verify_secret("x", bad)
    with pytest.raises(ValueError, match=f"^client 'a': api_key hash: {message}"):
        RegisteredClient("a", api_key_hash=bad or "x")


def test_hash_parameters_are_checked() -> None:
    with pytest.raises(ValueError, match="^cannot hash an empty secret$"):
        hash_secret("")
    with pytest.raises(ValueError, match="^scrypt parameters out of range$"):
        hash_secret("x", log2_n=30)


def test_client_definition_rules() -> None:
    with pytest.raises(
        ValueError, match="^a client id must be non-empty text without control characters$"
    ):
        RegisteredClient("")
    with pytest.raises(
        ValueError, match="^a client id must be non-empty text without control characters$"
    ):
        RegisteredClient("a\x1fb", token_hash=hash_secret("t", **FAST))
    with pytest.raises(ValueError, match="^client 'a' has neither an API key nor a token hash$"):
        RegisteredClient("a")  # no credential
    every = RegisteredClient("a", token_hash=hash_secret("t", **FAST), skills=["x", "*"])
    assert every.permitted is None
    some = RegisteredClient("b", token_hash=hash_secret("t", **FAST), skills=["x", "y"])
    assert some.permitted == frozenset({"x", "y"})
    with pytest.raises(ValueError, match="^client id 'b' is registered twice$"):
        ClientRegistry([some, some])
    with pytest.raises(ValueError, match="^unusable API key header name 'Authorization'$"):
        ClientRegistry([], api_key_header="Authorization")


def test_owner_keys_partition_tenant_and_client() -> None:
    assert owner_key("", "") == ""
    keys = {owner_key(t, c) for t in ("", "t1", "t2") for c in ("", "a", "b")}
    assert len(keys) == 9


@pytest.fixture
def registry() -> ClientRegistry:
    return ClientRegistry(
        [
            RegisteredClient("alice", token_hash=hash_secret("tok-a", **FAST), skills=["echo"]),
            RegisteredClient("bob", api_key_hash=hash_secret("key-b", **FAST)),
        ]
    )


def headers(**values: str) -> CIMultiDict[str]:
    return CIMultiDict({k.replace("_", "-"): v for k, v in values.items()})


async def test_registry_off_without_clients() -> None:
    registry = ClientRegistry()
    assert not registry.enabled
    assert await registry.authenticate(headers()) is ANONYMOUS
    assert registry.security_schemes() == {}
    assert registry.challenges() == []


async def test_bearer_and_api_key(registry: ClientRegistry) -> None:
    alice = await registry.authenticate(headers(Authorization="Bearer tok-a"))
    assert alice == Principal("alice", frozenset({"echo"}))
    assert alice.authenticated
    bob = await registry.authenticate(headers(X_API_Key="key-b"))
    assert bob == Principal("bob", None)
    assert await registry.authenticate(headers(authorization="bearer   tok-a")) == alice


@pytest.mark.parametrize(
    ("sent", "reason", "bearer_error"),
    [
        ({}, "no credentials", ""),
        ({"Authorization": "Bearer nope"}, "unknown bearer token", "invalid_token"),
        ({"Authorization": "Basic dXNlcjpwdw=="}, "unsupported or malformed", ""),
        ({"Authorization": "Bearer "}, "unsupported or malformed", ""),
        ({"X-API-Key": "nope"}, "unknown API key", ""),
        ({"X-API-Key": "tok-a"}, "unknown API key", ""),  # a token is not a key
        ({"Authorization": "Bearer key-b"}, "unknown bearer token", "invalid_token"),
        ({"Authorization": "Bearer " + "x" * 5000}, "credential too long", "invalid_token"),
    ],
)
async def test_failures_name_a_reason_but_never_the_value(
    registry: ClientRegistry, sent: dict[str, str], reason: str, bearer_error: str
) -> None:
    failure = await registry.authenticate(CIMultiDict(sent))
    assert isinstance(failure, AuthFailure)
    assert failure.reason.startswith(reason)
    assert failure.bearer_error == bearer_error
    for value in sent.values():
        secret = value.partition(" ")[2] or value
        assert secret not in repr(failure)


async def test_api_key_used_when_authorization_is_another_scheme(
    registry: ClientRegistry,
) -> None:
    sent = headers(Authorization="Basic abc", X_API_Key="key-b")
    assert await registry.authenticate(sent) == Principal("bob", None)


async def test_verified_values_are_remembered_by_hmac_only(
    registry: ClientRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    await registry.authenticate(headers(Authorization="Bearer tok-a"))
    remembered = registry._keyring._known
    assert remembered and all(isinstance(k, bytes) and b"tok-a" not in k for k in remembered)

    def no_scrypt(*args: object) -> bytes:
        raise AssertionError("scrypt ran again")

    monkeypatch.setattr(_scrypt, "_scrypt", no_scrypt)
    assert (await registry.authenticate(headers(Authorization="Bearer tok-a"))) == Principal(
        "alice", frozenset({"echo"})
    )


def test_card_declarations(registry: ClientRegistry) -> None:
    schemes = {name: s.to_dict() for name, s in registry.security_schemes().items()}
    assert schemes == {
        "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "description": "Bearer token"}},
        "apiKey": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}},
    }
    assert [r.to_dict() for r in registry.security_requirements()] == [
        {"schemes": {"bearer": {}}},
        {"schemes": {"apiKey": {}}},
    ]
    assert registry.challenges(AuthFailure("x", "invalid_token")) == [
        'Bearer realm="a2a", error="invalid_token"',
        'ApiKey realm="a2a", header="X-API-Key"',
    ]


def test_only_schemes_in_use_are_declared() -> None:
    registry = ClientRegistry(
        [RegisteredClient("k", api_key_hash=hash_secret("k", **FAST))], api_key_header="X-Key"
    )
    assert list(registry.security_schemes()) == ["apiKey"]
    assert registry.challenges() == ['ApiKey realm="a2a", header="X-Key"']
