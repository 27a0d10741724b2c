"""The JWT issuer configuration checked on its own: refused values, cache lifetimes, scopes."""

from __future__ import annotations

import pytest
from multidict import CIMultiDict

from a2a_wire.server import (
    ClientRegistry,
    RegisteredClient,
    SecurityConfig,
    TokenIssuer,
    TokenSettings,
    hash_secret,
)
from a2a_wire.server._oauth._keys import cache_seconds

ISSUER = "https://login.example.com/tenant"


@pytest.mark.parametrize("alg", ["none", "HS256", "HS512", "rs256", ""])
def test_an_issuer_refuses_symmetric_or_unknown_algorithms(alg: str) -> None:
    with pytest.raises(ValueError, match="algorithms must be some of"):
        TokenIssuer(ISSUER, "aud", algorithms=(alg,))


@pytest.mark.parametrize("issuer", ["login.example.com", "ftp://x.example", "https://x.example#f"])
def test_an_issuer_must_be_an_http_url(issuer: str) -> None:
    with pytest.raises(ValueError, match="absolute http"):
        TokenIssuer(issuer, "aud")


def test_an_issuer_needs_an_audience() -> None:
    with pytest.raises(ValueError, match="audience"):
        TokenIssuer(ISSUER, "")


def test_a_single_string_is_one_algorithm_or_scope() -> None:
    issuer = TokenIssuer(ISSUER, "aud", algorithms="ES256", required_scopes="a2a")
    assert (issuer.algorithms, issuer.required_scopes) == (("ES256",), ("a2a",))


def test_scopes_open_skills() -> None:
    issuer = TokenIssuer(ISSUER, "aud", skills_by_scope={"read": ["search"], "admin": ["*"]})
    assert issuer.permitted(["read"]) == frozenset({"search"})
    assert issuer.permitted([]) == frozenset()
    assert issuer.permitted(["read", "admin"]) is None
    assert TokenIssuer(ISSUER, "aud").permitted([]) is None


def test_a_registered_client_cannot_take_an_issuers_name_space() -> None:
    client = RegisteredClient(f"{ISSUER}#svc", token_hash=hash_secret("t", log2_n=4))
    with pytest.raises(ValueError, match="name space"):
        ClientRegistry([client], issuers=[TokenIssuer(ISSUER, "aud")])


def test_an_issuer_is_configured_once() -> None:
    with pytest.raises(ValueError, match="configured twice"):
        ClientRegistry(issuers=[TokenIssuer(ISSUER, "a"), TokenIssuer(ISSUER, "b")])


def test_issuers_alone_turn_authentication_on_and_allow_the_extended_card() -> None:
    config = SecurityConfig(oauth2=[TokenIssuer(ISSUER, "aud")], extended_card=True)
    assert config.registry().enabled


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({}, 3600.0),
        ({"Cache-Control": "public, max-age=600"}, 600.0),
        ({"Cache-Control": "max-age=5"}, 60.0),  # raised to jwks_min_cache_seconds
        ({"Cache-Control": "max-age=9999999"}, 86400.0),  # lowered to jwks_max_cache_seconds
        ({"Cache-Control": "no-store"}, 60.0),
        ({"Cache-Control": "no-cache, max-age=600"}, 60.0),
        (
            {"Expires": "Fri, 04 Dec 2026 12:30:00 GMT", "Date": "Fri, 04 Dec 2026 12:00:00 GMT"},
            1800.0,
        ),
        ({"Expires": "0"}, 60.0),
    ],
)
def test_keys_are_kept_as_the_cache_headers_say(headers: dict[str, str], seconds: float) -> None:
    assert cache_seconds(CIMultiDict(headers), TokenSettings()) == seconds


@pytest.mark.parametrize(
    "changes",
    [
        {"leeway_seconds": -1},
        {"fetch_timeout_seconds": 0},
        {"max_token_bytes": 0},
        {"jwks_min_cache_seconds": 100, "jwks_max_cache_seconds": 10},
    ],
)
def test_token_settings_refuse_unusable_limits(changes: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        TokenSettings(**changes)  # type: ignore[arg-type]
