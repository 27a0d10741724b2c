"""``--client-id`` with ``--client-secret-env``/``--client-secret-file``: a client command gets its
token from the token endpoint the agent card names (the Authlib provider of
tests/oauth_provider.py), then calls our server; all on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer
from e2e_support import cli_async, environment
from oauth_provider import AUDIENCE, Provider
from server_support import ScriptedAgent, make_card

from a2a_wire.card_signing import SigningKey
from a2a_wire.cli._oauth import OAuthOptions
from a2a_wire.netguard import AddressPolicy
from a2a_wire.server import SecurityConfig, TokenIssuer, TokenSettings, create_app

SECRET = "cli-secret-52c1e9"


@pytest.fixture
async def agent_url() -> AsyncIterator[tuple[str, Provider]]:
    provider = await Provider().start()
    provider.add_client("cli-agent", SECRET, "a2a")
    trusted = TokenIssuer(provider.issuer, AUDIENCE, token_url=provider.token_url)
    tokens = TokenSettings(allow_http=True, allowlist=AddressPolicy.from_strings(["127.0.0.1"]))
    app = create_app(
        make_card(), ScriptedAgent(), security=SecurityConfig(oauth2=[trusted], tokens=tokens)
    )
    server = TestServer(app)
    await server.start_server()
    yield str(server.make_url("/")), provider
    await server.close()
    await provider.stop()


@pytest.mark.parametrize("source", ["env", "file"])
async def test_send_with_client_credentials(
    agent_url: tuple[str, Provider], tmp_path: Path, source: str
) -> None:
    url, provider = agent_url
    env = environment()
    if source == "env":
        env["CLI_SECRET"] = SECRET
        secret = ["--client-secret-env", "CLI_SECRET"]
    else:
        (tmp_path / "secret").write_text(SECRET + "\n", encoding="utf-8")
        secret = ["--client-secret-file", str(tmp_path / "secret")]
    code, out, err = await cli_async(
        "send", url, "hello", "--json", "--client-id", "cli-agent", *secret, env=env
    )
    assert code == 0, err
    assert json.loads(out.splitlines()[0])["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert provider.token_hits == 1
    assert SECRET not in out + err


async def test_a_wrong_secret_is_a_usage_error_that_hides_it(
    agent_url: tuple[str, Provider],
) -> None:
    url, provider = agent_url
    env = environment() | {"CLI_SECRET": "wrong-secret-77"}
    code, out, err = await cli_async(
        "send",
        url,
        "hello",
        "--client-id",
        "cli-agent",
        "--client-secret-env",
        "CLI_SECRET",
        env=env,
    )
    assert code == 2
    assert "invalid_client" in err and "wrong-secret-77" not in out + err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--client-id", "x"], "needs one of --client-secret-env, --client-secret-file"),
        (["--client-secret-env", "X"], "--client-secret-env needs --client-id"),
        (["--client-id", "x", "--client-secret-env", "X", "--token", "t"], "either --client-id"),
        (["--client-key-file", "k.pem"], "--client-key-file needs --client-id"),
        (
            ["--client-id", "x", "--client-key-file", "k.pem", "--client-secret-env", "X"],
            "give only one of --client-secret-env, --client-secret-file, --client-key-file",
        ),
        (
            ["--client-id", "x", "--client-secret-env", "X", "--client-key-id", "k1"],
            "--client-key-id goes with --client-key-file",
        ),
        (
            ["--client-id", "x", "--client-key-file", "k.pem", "--client-auth", "post"],
            "--client-auth is for a secret",
        ),
    ],
)
async def test_client_id_options_must_fit_together(
    agent_url: tuple[str, Provider], args: list[str], message: str
) -> None:
    url, _ = agent_url
    code, _, err = await cli_async("send", url, "hello", *args)
    assert code == 2 and message in err


# -- private_key_jwt --------------------------------------------------------------------------


def write_key(path: Path, key: SigningKey) -> Path:
    path.write_bytes(key.key.export_to_pem(private_key=True, password=None))
    return path


@pytest.mark.parametrize("alg", ["RS256", "ES256"])
async def test_send_with_a_private_key_file(
    agent_url: tuple[str, Provider], tmp_path: Path, alg: str
) -> None:
    from joserfc.jwk import import_key

    url, provider = agent_url
    key = SigningKey.generate("registered", alg)
    provider.add_client("keyed-agent", "", "a2a", public_key=import_key(key.public_jwk()))
    pem = write_key(tmp_path / "client.pem", key)
    code, out, err = await cli_async(
        "send", url, "hello", "--json", "--client-id", "keyed-agent", "--client-key-file", str(pem)
    )
    assert code == 0, err
    assert json.loads(out.splitlines()[0])["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert provider.token_hits == 1
    assert "PRIVATE KEY" not in out + err


@pytest.mark.parametrize("content", ["another", "not a key", "public"])
async def test_a_key_file_the_provider_does_not_know_is_a_usage_error(
    agent_url: tuple[str, Provider], tmp_path: Path, content: str
) -> None:
    from joserfc.jwk import import_key

    url, provider = agent_url
    registered = SigningKey.generate("registered", "ES256")
    provider.add_client("keyed-agent", "", "a2a", public_key=import_key(registered.public_jwk()))
    path = tmp_path / "client.pem"
    if content == "another":
        write_key(path, SigningKey.generate("registered", "ES256"))
    elif content == "public":
        path.write_bytes(registered.key.export_to_pem())
    else:
        path.write_text("not a key\n", encoding="utf-8")
    args = ["--client-id", "keyed-agent", "--client-key-file", str(path)]
    code, out, err = await cli_async("send", url, "hello", *args)
    assert code == 2
    if content == "another":
        assert "invalid_client" in err
    else:
        assert f"{path} holds no usable private key" in err
    assert provider.token_hits == 0
    assert "PRIVATE KEY" not in out + err


def test_the_key_id_is_given_or_the_jwks_or_the_thumbprint(tmp_path: Path) -> None:
    key = SigningKey.generate("in-the-jwk", "ES256")
    pem = write_key(tmp_path / "k.pem", key)
    jwk_file = tmp_path / "k.jwk"
    with_kid = {**key.key.export_private(as_dict=True), "kid": "in-the-jwk"}
    jwk_file.write_text(json.dumps(with_kid), encoding="utf-8")

    def kid(path: Path, given: str | None = None) -> str:
        options = OAuthOptions.given("x", None, None, None, path, given)
        assert options is not None
        return options.signing_key().kid

    assert kid(pem, "at-the-provider") == "at-the-provider"
    assert kid(jwk_file) == "in-the-jwk"
    assert kid(pem) == key.key.thumbprint()


# -- one reader of secrets --------------------------------------------------------------------


async def test_a_long_secret_file_is_read_whole_or_refused(
    agent_url: tuple[str, Provider], tmp_path: Path
) -> None:
    url, provider = agent_url
    long_secret = "s" * 5000  # longer than what the CLI once read of a file
    provider.add_client("long-agent", long_secret, "a2a")
    (tmp_path / "secret").write_text(long_secret + "\n", encoding="utf-8")
    args = ["--client-id", "long-agent", "--client-secret-file", str(tmp_path / "secret")]
    code, _, err = await cli_async("send", url, "hello", *args)
    assert code == 0, err
    (tmp_path / "huge").write_text("s" * (64 * 1024 + 1), encoding="utf-8")
    args = ["--client-id", "long-agent", "--client-secret-file", str(tmp_path / "huge")]
    code, out, err = await cli_async("send", url, "hello", *args)
    assert code == 2
    assert f"credential file {tmp_path / 'huge'} is larger than 65536" in err
    assert "sss" not in out + err
    assert provider.token_hits == 1
