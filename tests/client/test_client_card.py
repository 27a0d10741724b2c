"""Card discovery, caching (ETag, max-age) and interface selection."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web
from client_fake import LOCAL, FakeAgent, card_json, task_json
from multidict import CIMultiDict, CIMultiDictProxy

from a2a_wire._protocol.wire import version_matches
from a2a_wire.client import (
    A2AClient,
    AddressNotAllowedError,
    CardCache,
    CardResolver,
    ClientSettings,
    HTTPStatusError,
    InvalidAgentCardError,
    NoCompatibleInterfaceError,
    RedirectRefusedError,
    StaticCredentials,
    card_url,
    interface_url,
    select_interface,
)
from a2a_wire.client._card_resolver import card_lifetime
from a2a_wire.types import AgentCard, AgentInterface, GetTaskRequest


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def iface(
    binding: str, version: str, url: str = "https://a.example/rpc", tenant: str = ""
) -> dict[str, Any]:
    return {"url": url, "protocolBinding": binding, "protocolVersion": version, "tenant": tenant}


def conditional_card(agent: FakeAgent, etag: str, max_age: int) -> list[str]:
    """Serve the card with an ETag; answer 304 when If-None-Match matches. Returns a log."""
    log: list[str] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        headers = {"ETag": etag, "Cache-Control": f"max-age={max_age}"}
        if request.headers.get("If-None-Match") == etag:
            log.append("304")
            return web.Response(status=304, headers=headers)
        log.append("200")
        return web.json_response(card_json(agent.base), headers=headers)

    agent.card_handler = handler
    return log


async def test_connect_resolves_card_and_interface(agent: FakeAgent) -> None:
    interfaces = [
        iface("GRPC", "1.0", "https://grpc.example"),
        iface("JSONRPC", "0.3", "https://old.example/rpc"),
        iface("JSONRPC", "1.0.3", f"{agent.base}/rpc", tenant="acme"),
        iface("JSONRPC", "1.0", "https://later.example/rpc"),
    ]
    agent.card(card_json(agent.base, interfaces))
    agent.reply("GetTask", task_json())
    client = await A2AClient.connect(
        agent.base + "/", settings=LOCAL, credentials=StaticCredentials("s"), card_cache=CardCache()
    )
    async with client:
        assert client.url == f"{agent.base}/rpc" and client.tenant == "acme"
        assert client.card is not None and client.card.name == "fake"
        await client.get_task(GetTaskRequest(id="t1"))
    assert agent.requests[-1].params["tenant"] == "acme"
    assert agent.requests[-1].headers["Authorization"] == "Bearer s"
    assert "Authorization" not in agent.card_requests[0], "the public card is fetched anonymously"


async def test_connect_with_no_fitting_interface_lists_offers(agent: FakeAgent) -> None:
    interfaces = [
        iface("GRPC", "1.0", "https://g.example"),
        iface("JSONRPC", "0.3", "https://o.example/rpc"),
    ]
    agent.card(card_json(agent.base, interfaces))
    with pytest.raises(NoCompatibleInterfaceError) as caught:
        await A2AClient.connect(agent.base, settings=LOCAL, card_cache=CardCache())
    text = str(caught.value)
    assert (
        "GRPC 1.0 at https://g.example" in text and "JSONRPC 0.3 at https://o.example/rpc" in text
    )
    assert [o.protocol_binding for o in caught.value.offers] == ["GRPC", "JSONRPC"]


async def test_fetch_document_returns_the_card_as_served(agent: FakeAgent) -> None:
    served = {"name": 7, "not": ["a", "card"]}  # valid JSON, not a valid card
    agent.card(served, headers={"Cache-Control": "max-age=600"})
    async with CardResolver(settings=LOCAL) as resolver:
        assert await resolver.fetch_document(agent.base) == served
        assert await resolver.fetch_document(agent.base + "/") == served
        assert len(resolver.cache) == 0  # neither decoded nor cached
        with pytest.raises(InvalidAgentCardError):
            await resolver.resolve(agent.base)
    assert len(agent.card_requests) == 3


async def test_fetch_document_refuses_a_body_that_is_not_json(agent: FakeAgent) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=b"{not json", content_type="application/json")

    agent.card_handler = handler
    async with CardResolver(settings=LOCAL) as resolver:
        with pytest.raises(InvalidAgentCardError, match=r"^agent card at .*agent-card\.json: "):
            await resolver.fetch_document(agent.base)


def test_interface_url_resolves_a_relative_url_against_the_card() -> None:
    where = "https://agent.example/a/.well-known/agent-card.json"

    def resolved(url: str) -> str:
        return interface_url(where, AgentInterface.from_dict(iface("JSONRPC", "1.0", url)))

    assert resolved("/rpc") == "https://agent.example/rpc"
    assert resolved("rpc") == "https://agent.example/a/.well-known/rpc"
    assert resolved("https://other.example/rpc") == "https://other.example/rpc"


async def test_relative_interface_url(agent: FakeAgent) -> None:
    agent.card(card_json(agent.base, [iface("JSONRPC", "1.0", "/rpc")]))
    async with await A2AClient.connect(
        agent.base, settings=LOCAL, card_cache=CardCache()
    ) as client:
        assert client.url == f"{agent.base}/rpc"


async def test_etag_revalidation_reuses_card_on_304(agent: FakeAgent) -> None:
    log = conditional_card(agent, '"v1"', max_age=60)
    clock = Clock()
    async with CardResolver(settings=LOCAL, cache=CardCache(clock=clock)) as resolver:
        first = await resolver.resolve(agent.base)
        assert log == ["200"]
        assert await resolver.resolve(agent.base) is first, "fresh: served from the cache"
        assert log == ["200"]
        clock.now += 61
        assert await resolver.resolve(agent.base) is first, "stale: revalidated, 304, reused"
        assert log == ["200", "304"]
        assert agent.card_requests[-1]["If-None-Match"] == '"v1"'
        clock.now += 30
        await resolver.resolve(agent.base)
        assert log == ["200", "304"], "the 304 renewed the freshness"
        await resolver.resolve(agent.base, refresh=True)
        assert log == ["200", "304", "304"]


async def test_changed_card_is_replaced(agent: FakeAgent) -> None:
    versions = iter(["1", "2"])

    async def handler(request: web.Request) -> web.StreamResponse:
        card = card_json(agent.base)
        card["version"] = next(versions)
        return web.json_response(
            card, headers={"Cache-Control": "max-age=0", "ETag": f'"{card["version"]}"'}
        )

    agent.card_handler = handler
    async with CardResolver(settings=LOCAL) as resolver:
        assert (await resolver.resolve(agent.base)).version == "1"
        assert (await resolver.resolve(agent.base)).version == "2"
        assert agent.card_requests[-1]["If-None-Match"] == '"1"'


async def test_no_store_is_not_cached(agent: FakeAgent) -> None:
    agent.card(card_json(agent.base), {"Cache-Control": "no-store"})
    cache = CardCache()
    async with CardResolver(settings=LOCAL, cache=cache) as resolver:
        await resolver.resolve(agent.base)
        await resolver.resolve(agent.base)
    assert len(agent.card_requests) == 2 and len(cache) == 0


async def test_default_ttl_without_headers(agent: FakeAgent) -> None:
    agent.card(card_json(agent.base))
    clock = Clock()
    settings = ClientSettings(allow=["127.0.0.1"], card_default_ttl=10)
    async with CardResolver(settings=settings, cache=CardCache(clock=clock)) as resolver:
        await resolver.resolve(agent.base)
        clock.now += 9
        await resolver.resolve(agent.base)
        assert len(agent.card_requests) == 1
        clock.now += 2
        await resolver.resolve(agent.base)
        assert len(agent.card_requests) == 2
        assert "If-None-Match" not in agent.card_requests[-1]


async def test_card_last_modified_revalidation(agent: FakeAgent) -> None:
    stamp = "Wed, 21 Oct 2015 07:28:00 GMT"

    async def handler(request: web.Request) -> web.StreamResponse:
        if request.headers.get("If-Modified-Since") == stamp:
            return web.Response(status=304)
        return web.json_response(
            card_json(agent.base), headers={"Last-Modified": stamp, "Cache-Control": "no-cache"}
        )

    agent.card_handler = handler
    async with CardResolver(settings=LOCAL) as resolver:
        first = await resolver.resolve(agent.base)
        assert await resolver.resolve(agent.base) is first
    assert len(agent.card_requests) == 2


@pytest.mark.parametrize(
    ("body", "content_type"),
    [(b"{not json", "application/json"), (b'{"supportedInterfaces": 5}', "application/json")],
)
async def test_invalid_card(agent: FakeAgent, body: bytes, content_type: str) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body, content_type=content_type)

    agent.card_handler = handler
    async with CardResolver(settings=LOCAL) as resolver:
        with pytest.raises(InvalidAgentCardError, match="agent card at"):
            await resolver.resolve(agent.base)


async def test_card_errors(agent: FakeAgent) -> None:
    statuses = iter([404, 302])

    async def handler(request: web.Request) -> web.StreamResponse:
        status = next(statuses)
        return web.Response(status=status, headers={"Location": "https://x.example/card"})

    agent.card_handler = handler
    async with CardResolver(settings=LOCAL) as resolver:
        with pytest.raises(HTTPStatusError, match="404"):
            await resolver.resolve(agent.base)
        with pytest.raises(RedirectRefusedError, match="302 redirect to https://x.example/card"):
            await resolver.resolve(agent.base)


async def test_card_fetch_is_address_guarded(agent: FakeAgent) -> None:
    agent.card(card_json(agent.base))
    with pytest.raises(AddressNotAllowedError, match="127.0.0.1: loopback"):
        await A2AClient.connect(agent.base, card_cache=CardCache())
    assert agent.card_requests == []


def test_card_url() -> None:
    assert card_url("https://a.example") == "https://a.example/.well-known/agent-card.json"
    assert card_url("https://a.example/x/") == "https://a.example/x/.well-known/agent-card.json"
    full = "https://a.example/.well-known/agent-card.json"
    assert card_url(full) == full


@pytest.mark.parametrize(
    ("offered", "ok"),
    [
        ("1.0", True),
        ("1.0.3", True),
        ("1.0.x", True),
        (" 1.0 ", True),
        ("1.00", True),
        ("0.3", False),
        ("0.3.0", False),
        ("1.1", False),
        ("2.0", False),
        ("1", False),
        ("", False),
        ("v1.0", False),
        ("1.a", False),
        ("١.٠", False),
    ],
)
def test_version_matching(offered: str, ok: bool) -> None:
    assert version_matches(offered, "1.0") is ok


def test_select_interface_takes_the_first_fit() -> None:
    card = AgentCard.from_dict(
        card_json(
            "",
            [
                iface("GRPC", "1.0"),
                iface("jsonrpc", "1.0", "https://first"),
                iface("JSONRPC", "1.0", "https://second"),
            ],
        )
    )
    assert select_interface(card).url == "https://first"
    with pytest.raises(NoCompatibleInterfaceError, match="offers: nothing"):
        select_interface(AgentCard(supported_interfaces=[]))
    chosen = select_interface(card, binding="GRPC")
    assert isinstance(chosen, AgentInterface) and chosen.protocol_binding == "GRPC"


def headers(**values: str) -> CIMultiDictProxy[str]:
    return CIMultiDictProxy(CIMultiDict({k.replace("_", "-"): v for k, v in values.items()}))


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"Cache_Control": "max-age=120"}, 120.0),
        ({"Cache_Control": 'public, max-age="30"'}, 30.0),
        ({"Cache_Control": "max-age=120", "Age": "100"}, 20.0),
        ({"Cache_Control": "max-age=10", "Age": "100"}, 0.0),
        ({"Cache_Control": "no-cache, max-age=120"}, 0.0),
        ({"Cache_Control": "no-store"}, None),
        ({"Cache_Control": "private"}, 300.0),
        ({}, 300.0),
        (
            {"Expires": "Thu, 01 Jan 2026 00:10:00 GMT", "Date": "Thu, 01 Jan 2026 00:00:00 GMT"},
            600.0,
        ),
        ({"Expires": "0"}, 0.0),
        ({"Cache_Control": "max-age=5", "Expires": "Thu, 01 Jan 2026 00:10:00 GMT"}, 5.0),
    ],
)
def test_card_lifetime(given: dict[str, str], expected: float | None) -> None:
    assert card_lifetime(headers(**given), 300.0) == expected


def test_cache_is_lru_bounded() -> None:
    from a2a_wire.client import CachedCard

    cache = CardCache(max_entries=2)
    for url in ("a", "b"):
        cache.put(url, CachedCard(AgentCard(), None, None, 0.0))
    cache.get("a")
    cache.put("c", CachedCard(AgentCard(), None, None, 0.0))
    assert cache.get("b") is None and cache.get("a") is not None and len(cache) == 2
