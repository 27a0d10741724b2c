"""The agent card endpoint over real HTTP (spec 8.2, 8.3.1, 8.6)."""

from __future__ import annotations

import datetime
import email.utils
from typing import Any

import pytest
from server_support import ScriptedAgent, make_card

from a2a_wire.server import ServerSettings, create_app
from a2a_wire.types import AgentCard, AgentInterface

PATH = "/.well-known/agent-card.json"


async def test_card_lists_this_server_as_jsonrpc_1_0(client: Any) -> None:
    response = await client.get(PATH)
    assert response.status == 200
    assert response.content_type == "application/json"
    card = AgentCard.from_dict(await response.json())
    assert card.missing_fields() == []
    assert card.name == "scripted"
    (interface,) = card.supported_interfaces
    assert interface.protocol_binding == "JSONRPC"
    assert interface.protocol_version == "1.0"
    assert interface.url == f"http://{client.host}:{client.port}/"


async def test_public_url_and_other_bindings(aiohttp_client: Any) -> None:
    card = make_card()
    card.supported_interfaces = [
        AgentInterface(url="http://old/rpc", protocol_binding="JSONRPC", protocol_version="1.0"),
        AgentInterface(url="grpc://agent:50051", protocol_binding="GRPC", protocol_version="1.0"),
    ]
    settings = ServerSettings(public_url="https://agent.example.com/", rpc_path="/a2a/v1")
    client = await aiohttp_client(create_app(card, ScriptedAgent(), settings=settings))
    served = await (await client.get(PATH)).json()
    assert served["supportedInterfaces"] == [
        {
            "url": "https://agent.example.com/a2a/v1",
            "protocolBinding": "JSONRPC",
            "protocolVersion": "1.0",
        },
        {"url": "grpc://agent:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
    ]


async def test_url_follows_the_host_header(client: Any) -> None:
    served = await (await client.get(PATH, headers={"Host": "agent.test:8443"})).json()
    assert served["supportedInterfaces"][0]["url"] == "http://agent.test:8443/"


async def test_caching_headers(aiohttp_client: Any) -> None:
    settings = ServerSettings(card_max_age_seconds=123)
    client = await aiohttp_client(create_app(make_card(), ScriptedAgent(), settings=settings))
    response = await client.get(PATH)
    assert response.headers["Cache-Control"] == "public, max-age=123"
    etag = response.headers["ETag"]
    assert etag.startswith('"') and etag.endswith('"') and len(etag) > 10
    modified = email.utils.parsedate_to_datetime(response.headers["Last-Modified"])
    assert modified <= datetime.datetime.now(datetime.UTC)
    again = await client.get(PATH)
    assert again.headers["ETag"] == etag


@pytest.mark.parametrize("form", ["{etag}", "W/{etag}", '"other", {etag}', "*"])
async def test_if_none_match_gets_304(client: Any, form: str) -> None:
    etag = (await client.get(PATH)).headers["ETag"]
    response = await client.get(PATH, headers={"If-None-Match": form.format(etag=etag)})
    assert response.status == 304
    assert await response.read() == b""
    assert response.headers["ETag"] == etag
    assert "max-age" in response.headers["Cache-Control"]


async def test_stale_etag_gets_the_card(client: Any) -> None:
    response = await client.get(PATH, headers={"If-None-Match": '"stale"'})
    assert response.status == 200
    assert (await response.json())["name"] == "scripted"


async def test_if_modified_since(client: Any) -> None:
    last = (await client.get(PATH)).headers["Last-Modified"]
    assert (await client.get(PATH, headers={"If-Modified-Since": last})).status == 304
    earlier = email.utils.format_datetime(
        email.utils.parsedate_to_datetime(last) - datetime.timedelta(days=1), usegmt=True
    )
    assert (await client.get(PATH, headers={"If-Modified-Since": earlier})).status == 200
    # If-None-Match wins over If-Modified-Since
    both = {"If-Modified-Since": last, "If-None-Match": '"stale"'}
    assert (await client.get(PATH, headers=both)).status == 200


async def test_card_needs_no_version_header_and_rejects_post(client: Any) -> None:
    response = await client.post(PATH, json={})
    assert response.status == 405
    assert (await response.json())["error"]["code"] == -32600
