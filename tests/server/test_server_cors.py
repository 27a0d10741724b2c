"""CORS for browser applications: off by default; with ``cors_origins``, headers and preflights.

``a2a_wire.server._cors`` states the rules; here each one is checked over real HTTP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from server_support import ScriptedAgent, envelope, make_card, post, send_params

from a2a_wire.cli.config import load
from a2a_wire.server import (
    RegisteredClient,
    SecurityConfig,
    ServerSettings,
    create_app,
    hash_secret,
)

APP = "https://app.example.com"
CARD = "/.well-known/agent-card.json"
PREFLIGHT = {
    "Origin": APP,
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "a2a-version,authorization,content-type",
}
BINDING_HEADERS = {
    "a2a-version",
    "a2a-extensions",
    "authorization",
    "content-type",
    "last-event-id",
    "x-api-key",
}


async def served(aiohttp_client: Any, *origins: str, **kwargs: Any) -> Any:
    settings = ServerSettings(cors_origins=origins)
    app = create_app(make_card(), ScriptedAgent(), settings=settings, **kwargs)
    return await aiohttp_client(app)


async def test_off_by_default(aiohttp_client: Any) -> None:
    client = await served(aiohttp_client)
    response = await client.options("/", headers=PREFLIGHT)
    assert response.status == 405 and (await response.json())["error"]["code"] == -32600
    card = await client.get(CARD, headers={"Origin": APP})
    assert card.status == 200 and "Access-Control-Allow-Origin" not in card.headers


@pytest.mark.parametrize("path", ["/", CARD])
async def test_a_preflight_from_a_listed_origin_is_204(aiohttp_client: Any, path: str) -> None:
    client = await served(aiohttp_client, APP)
    response = await client.options(path, headers=PREFLIGHT)
    assert response.status == 204
    assert response.headers["Access-Control-Allow-Origin"] == APP
    assert {"GET", "POST", "OPTIONS"} <= {
        m.strip() for m in response.headers["Access-Control-Allow-Methods"].split(",")
    }
    allowed = {
        h.strip().lower() for h in response.headers["Access-Control-Allow-Headers"].split(",")
    }
    assert allowed >= BINDING_HEADERS
    assert int(response.headers["Access-Control-Max-Age"]) > 0
    assert "Access-Control-Allow-Credentials" not in response.headers


@pytest.mark.parametrize("origin", ["https://evil.example", "http://app.example.com", None])
async def test_a_preflight_from_another_origin_is_403(aiohttp_client: Any, origin: Any) -> None:
    client = await served(aiohttp_client, APP)
    headers = (
        {**PREFLIGHT, "Origin": origin} if origin else {"Access-Control-Request-Method": "POST"}
    )
    response = await client.options("/", headers=headers)
    assert response.status == 403 and "Access-Control-Allow-Origin" not in response.headers
    assert (await response.json())["error"]["code"] == -32600


async def test_answers_to_a_listed_origin_carry_the_headers(aiohttp_client: Any) -> None:
    client = await served(aiohttp_client, APP, "https://other.example")
    response = await post(
        client, envelope("SendMessage", send_params("echo")), headers={"Origin": APP}
    )
    assert response.status == 200
    assert response.headers["Access-Control-Allow-Origin"] == APP
    assert "Origin" in response.headers.getall("Vary")
    exposed = {h.strip() for h in response.headers["Access-Control-Expose-Headers"].split(",")}
    assert {"A2A-Extensions", "WWW-Authenticate", "Retry-After"} <= exposed
    stream = await post(
        client, envelope("SendStreamingMessage", send_params("echo")), headers={"Origin": APP}
    )
    assert stream.content_type == "text/event-stream"
    assert stream.headers["Access-Control-Allow-Origin"] == APP
    await stream.read()
    other = await post(
        client, envelope("ListTasks", {}), headers={"Origin": "https://evil.example"}
    )
    assert other.status == 200 and "Access-Control-Allow-Origin" not in other.headers


async def test_refusals_carry_the_headers_so_that_the_page_can_read_them(
    aiohttp_client: Any,
) -> None:
    security = SecurityConfig(
        clients=[RegisteredClient("a", token_hash=hash_secret("t", log2_n=4))]
    )
    client = await served(aiohttp_client, APP, security=security)
    refused = await post(client, envelope("ListTasks", {}), headers={"Origin": APP})
    assert refused.status == 401 and refused.headers["Access-Control-Allow-Origin"] == APP
    missing = await client.get("/nowhere", headers={"Origin": APP})
    assert missing.status == 404 and missing.headers["Access-Control-Allow-Origin"] == APP


async def test_any_origin(aiohttp_client: Any) -> None:
    client = await served(aiohttp_client, "*")
    response = await client.options("/", headers={**PREFLIGHT, "Origin": "https://x.example"})
    assert response.status == 204 and response.headers["Access-Control-Allow-Origin"] == "*"
    card = await client.get(CARD, headers={"Origin": "https://y.example"})
    assert card.headers["Access-Control-Allow-Origin"] == "*"
    assert "Origin" not in card.headers.getall("Vary", [])  # one answer fits every origin


async def test_origins_are_compared_as_browsers_send_them(aiohttp_client: Any) -> None:
    client = await served(aiohttp_client, "HTTPS://App.Example.com:443/", "http://[::1]:8080")
    for origin in (APP, "http://[::1]:8080"):
        response = await client.options("/", headers={**PREFLIGHT, "Origin": origin})
        assert response.status == 204, origin


@pytest.mark.parametrize(
    "origin",
    [
        "app.example.com",
        "ftp://app.example.com",
        "https://app.example.com/path",
        "https://u@a.b",
        "",
    ],
)
def test_an_entry_that_is_not_an_origin_is_refused(origin: str) -> None:
    with pytest.raises(ValueError, match="^cors_origins must hold origins"):
        ServerSettings(cors_origins=(origin,))


def test_the_serve_configuration_sets_them_in_its_server_section(tmp_path: Path) -> None:
    path = tmp_path / "cors.toml"
    path.write_text(f'[server]\ncors_origins = ["{APP}", "*"]\n', encoding="utf-8")
    config = load(path, data_dir=str(tmp_path))
    assert config.settings.cors_origins == (APP, "*")
