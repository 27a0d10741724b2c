"""Signed cards end to end: signed by the server, served, fetched and verified by the client."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from ports import free_port
from server_support import ScriptedAgent, make_card, result

from a2a_wire.card_signing import (
    CardSignatureError,
    CardSigner,
    CardVerifier,
    SigningKey,
    TrustedKeys,
)
from a2a_wire.client import A2AClient, CardCache, CardResolver, ClientSettings
from a2a_wire.server import (
    RegisteredClient,
    SecurityConfig,
    ServerSettings,
    create_app,
    hash_secret,
)
from a2a_wire.types import AgentCard, TaskState

LOCAL = ClientSettings(allow=["127.0.0.1"])
ServerFactory = Callable[..., Awaitable[TestServer]]

OLD = SigningKey.generate("2025-old")
NEW = SigningKey.generate("2026-new", "RS256")


def trusting(*keys: SigningKey, required: bool = True) -> CardVerifier:
    return CardVerifier(TrustedKeys.from_jwks(CardSigner(list(keys)).jwks()), required=required)


async def serve(aiohttp_server: ServerFactory, *keys: SigningKey) -> str:
    port = free_port()
    settings = ServerSettings(public_url=f"http://127.0.0.1:{port}")
    security = SecurityConfig(card_signer=CardSigner(list(keys)))
    app = create_app(make_card(), ScriptedAgent(), settings=settings, security=security)
    server = await aiohttp_server(app, port=port)
    return str(server.make_url("/"))


async def test_signed_card_is_served_fetched_and_verified(aiohttp_server: ServerFactory) -> None:
    url = await serve(aiohttp_server, OLD)
    async with CardResolver(settings=LOCAL, verifier=trusting(OLD)) as resolver:
        card = await resolver.resolve(url)
    assert [s.to_dict().keys() for s in card.signatures] == [{"protected", "signature"}]
    verifier = trusting(OLD)
    async with await A2AClient.connect(url, settings=LOCAL, card_verifier=verifier) as client:
        reply = await client.send_text("hello")
        assert reply.task is not None and reply.task.status is not None
        assert reply.task.status.state == TaskState.COMPLETED


async def test_key_rotation_with_two_signatures(aiohttp_server: ServerFactory) -> None:
    url = await serve(aiohttp_server, OLD, NEW)
    for keys in ((OLD,), (NEW,)):
        async with CardResolver(settings=LOCAL, verifier=trusting(*keys)) as resolver:
            assert len((await resolver.resolve(url)).signatures) == 2


async def test_untrusted_signer_is_refused_with_a_reason(aiohttp_server: ServerFactory) -> None:
    url = await serve(aiohttp_server, OLD)
    async with CardResolver(settings=LOCAL, verifier=trusting(NEW)) as resolver:
        with pytest.raises(CardSignatureError) as caught:
            await resolver.resolve(url)
    assert caught.value.reasons == ("signature 0: key id '2025-old' is not trusted",)
    async with CardResolver(settings=LOCAL, verifier=trusting(NEW, required=False)) as resolver:
        await resolver.resolve(url)  # not required: accepted (and logged)


async def test_card_altered_after_signing_fails(aiohttp_server: ServerFactory) -> None:
    url = await serve(aiohttp_server, OLD)
    async with CardResolver(settings=LOCAL) as plain:
        original = (await plain.resolve(url)).to_dict()

    async def tampered(request: web.Request) -> web.Response:
        document: dict[str, Any] = dict(original)
        document["supportedInterfaces"] = [
            {"url": "https://evil.example/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ]
        return web.json_response(document)

    proxy = web.Application()
    proxy.router.add_get("/.well-known/agent-card.json", tampered)
    evil = str((await aiohttp_server(proxy)).make_url("/"))
    async with CardResolver(settings=LOCAL) as plain:
        await plain.resolve(evil)  # without verification the tampering goes unnoticed
    async with CardResolver(settings=LOCAL, verifier=trusting(OLD)) as resolver:
        with pytest.raises(CardSignatureError) as caught:
            await resolver.resolve(evil)
    assert "does not match the card" in caught.value.reasons[0]


async def test_cached_cards_are_verified_too(aiohttp_server: ServerFactory) -> None:
    url = await serve(aiohttp_server, OLD)
    cache = CardCache()
    async with CardResolver(settings=LOCAL, cache=cache) as plain:
        await plain.resolve(url)
    async with CardResolver(settings=LOCAL, cache=cache, verifier=trusting(NEW)) as resolver:
        with pytest.raises(CardSignatureError, match="key id '2025-old' is not trusted$"):
            await resolver.resolve(url)  # fresh in the cache, still checked


async def test_unsigned_card_is_refused_when_verification_is_required(
    aiohttp_server: ServerFactory,
) -> None:
    server = await aiohttp_server(create_app(make_card(), ScriptedAgent()))
    async with CardResolver(settings=LOCAL, verifier=trusting(OLD)) as resolver:
        with pytest.raises(CardSignatureError) as caught:
            await resolver.resolve(str(server.make_url("/")))
    assert caught.value.reasons == ("the card has no signatures",)


async def test_the_extended_card_is_signed_as_served(aiohttp_client: Any) -> None:
    security = SecurityConfig(
        clients=[RegisteredClient("alice", token_hash=hash_secret("tok-alice", log2_n=4))],
        extended_card=True,
        card_signer=CardSigner([OLD]),
    )
    settings = ServerSettings(public_url="http://127.0.0.1:1")
    app = create_app(
        make_card(extended=True), ScriptedAgent(), settings=settings, security=security
    )
    client = await aiohttp_client(app)
    headers = {"Authorization": "Bearer tok-alice"}
    card = await result(client, "GetExtendedAgentCard", None, headers=headers)
    assert AgentCard.from_dict(card).to_dict() == card  # verified as received, no normalising
    assert trusting(OLD).verify(card) == "2025-old"


def test_signing_needs_a_public_url() -> None:
    security = SecurityConfig(card_signer=CardSigner([OLD]))
    with pytest.raises(ValueError, match="public_url"):
        create_app(make_card(), ScriptedAgent(), security=security)
