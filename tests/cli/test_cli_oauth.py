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
        (["--client-secret-env", "X"], "need --client-id"),
        (["--client-id", "x", "--client-secret-env", "X", "--token", "t"], "either --client-id"),
    ],
)
async def test_client_id_options_must_fit_together(
    agent_url: tuple[str, Provider], args: list[str], message: str
) -> None:
    url, _ = agent_url
    code, _, err = await cli_async("send", url, "hello", *args)
    assert code == 2 and message in err
