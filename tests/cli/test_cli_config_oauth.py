"""``[[security.oauth2]]`` and ``[security.tokens]`` read into the server's SecurityConfig."""

from __future__ import annotations

from pathlib import Path

import pytest

from a2a_wire.cli._app import build_security
from a2a_wire.cli.config import ConfigError, load
from a2a_wire.netguard import AddressPolicy
from a2a_wire.server import TokenIssuer, TokenSettings

GOOD = """[network]
allow = ["10.1.2.3"]

[[security.oauth2]]
issuer = "https://login.example.com/realms/agents"
audience = "https://agent.example.com"
algorithms = ["RS256", "ES256"]
required_scopes = ["a2a"]
caller_claim = "azp"
skills_by_scope = { "a2a.echo" = ["echo"] }
token_url = "https://login.example.com/realms/agents/protocol/openid-connect/token"

[security]
extended_card = true

[security.tokens]
leeway_seconds = 5.0
jwks_refetch_interval_seconds = 30.0
allow = ["idp.internal"]
"""


def test_issuers_and_limits_reach_the_security_config(tmp_path: Path) -> None:
    path = tmp_path / "oauth.toml"
    path.write_text(GOOD, encoding="utf-8")
    config = load(path, data_dir=str(tmp_path))
    security = build_security(config)
    assert security.oauth2 == (
        TokenIssuer(
            "https://login.example.com/realms/agents",
            "https://agent.example.com",
            algorithms=("RS256", "ES256"),
            required_scopes=("a2a",),
            caller_claim="azp",
            skills_by_scope={"a2a.echo": ("echo",)},
            token_url="https://login.example.com/realms/agents/protocol/openid-connect/token",
        ),
    )
    assert security.tokens == TokenSettings(
        leeway_seconds=5.0,
        jwks_refetch_interval_seconds=30.0,
        allowlist=AddressPolicy.from_strings(["10.1.2.3", "idp.internal"]),
    )
    assert security.extended_card  # issuers alone authenticate callers


BAD = """[[security.oauth2]]
issuer = "https://login.example.com"
audience = "x"
algorithms = ["HS256"]

[[security.oauth2]]
issuer = "https://other.example.com"
audience = "x"
skills_by_scope = { "read" = ["nope"] }

[security.tokens]
max_token_bytes = 0
"""


def test_bad_issuers_and_limits_are_reported_at_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(BAD, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load(path, data_dir=str(tmp_path))
    lines = str(info.value).splitlines()
    assert any(
        "security.oauth2[0]" in line and "algorithms must be some of" in line for line in lines
    )
    assert f"{path}:9: security.oauth2[1].skills_by_scope.read: no skill has id 'nope'" in lines
    assert any(line.startswith(f"{path}:12: security.tokens.max_token_bytes") for line in lines)
