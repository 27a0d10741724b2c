"""Client credentials from the card, end to end: our client -> the provider's token endpoint ->
our server, all on 127.0.0.1 (the provider is tests/oauth_provider.py, Authlib's server).

The client's clock (token lifetimes) and the server's (key refetches) are moved by the tests,
never waited for.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from oauth_provider import AUDIENCE, Provider
from server_support import ScriptedAgent, make_card

from a2a_wire.card_signing import SigningKey
from a2a_wire.client import (
    A2AClient,
    AuthenticationError,
    CardCache,
    ClientCredentials,
    ClientSettings,
    CredentialRequest,
    CredentialsError,
)
from a2a_wire.netguard import AddressPolicy
from a2a_wire.server import SecurityConfig, ServerSettings, TokenIssuer, TokenSettings, create_app
from a2a_wire.types import Message, Part, Role, SendMessageRequest

LOCAL = ClientSettings(allow=["127.0.0.1"])
SECRET = "orders-secret-0b7e4d"


class Clock:
    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
async def provider() -> AsyncIterator[Provider]:
    provider = await Provider(token_seconds=600).start()
    provider.add_client("orders-agent", SECRET, "a2a")
    yield provider
    await provider.stop()


@pytest.fixture
def server_clock() -> Clock:
    return Clock(time.time())


async def serve(provider: Provider, server_clock: Clock, **issuer: Any) -> TestServer:
    fields = {"required_scopes": ("a2a",), "token_url": provider.token_url} | issuer
    trusted = TokenIssuer(provider.issuer, AUDIENCE, **fields)
    tokens = TokenSettings(
        allow_http=True, allowlist=AddressPolicy.from_strings(["127.0.0.1"]), clock=server_clock
    )
    config = SecurityConfig(oauth2=[trusted], tokens=tokens)
    settings = ServerSettings(auth_failures_per_minute=1000)
    app = create_app(make_card(), ScriptedAgent(), security=config, settings=settings)
    server = TestServer(app)
    await server.start_server()
    return server


def hello() -> SendMessageRequest:
    text = Part(text="hello")
    return SendMessageRequest(message=Message(role=Role.USER, parts=[text], message_id="m1"))


async def connect(server: TestServer, credentials: ClientCredentials) -> A2AClient:
    url = str(server.make_url("/"))
    return await A2AClient.connect(
        url, settings=LOCAL, credentials=credentials, card_cache=CardCache()
    )


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
async def test_a_token_from_the_cards_scheme_is_fetched_once_and_reused(
    provider: Provider, server_clock: Clock, method: str
) -> None:
    server = await serve(provider, server_clock)
    clock = Clock()
    credentials = ClientCredentials(
        "orders-agent", SECRET, auth_method=method, settings=LOCAL, clock=clock
    )
    try:
        async with await connect(server, credentials) as client:
            for _ in range(3):
                answer = await client.send_message(hello())
                assert answer.task is not None
            assert provider.token_hits == 1  # cached across calls
            clock.advance(600 - 30)  # within the refresh margin of its expiry
            await client.send_message(hello())
            assert provider.token_hits == 2
    finally:
        await server.close()


async def test_the_openid_connect_scheme_leads_to_the_token_endpoint(
    provider: Provider, server_clock: Clock
) -> None:
    server = await serve(provider, server_clock, token_url="")  # the card names discovery only
    credentials = ClientCredentials("orders-agent", SECRET, settings=LOCAL)
    try:
        async with await connect(server, credentials) as client:
            scheme = client.card.security_schemes["oauth2"] if client.card else None
            assert scheme is not None and scheme.open_id_connect_security_scheme is not None
            assert (await client.send_message(hello())).task is not None
        assert provider.token_hits == 1
        assert provider.discovery_hits == 2  # the server's key lookup and the client's
    finally:
        await server.close()


async def test_a_401_invalid_token_refreshes_once_and_retries_once(
    provider: Provider, server_clock: Clock
) -> None:
    server = await serve(provider, server_clock)
    credentials = ClientCredentials("orders-agent", SECRET, settings=LOCAL)
    try:
        async with await connect(server, credentials) as client:
            assert (await client.send_message(hello())).task is not None
            provider.rotate(retire=True)  # the cached token's key is gone from the JWKS
            server_clock.advance(301)  # past the JWKS's max-age: the server refetches the keys
            assert (await client.send_message(hello())).task is not None  # no failed call
            assert provider.token_hits == 2
    finally:
        await server.close()


async def test_a_stream_opened_with_a_refused_token_is_opened_once_more(
    provider: Provider, server_clock: Clock
) -> None:
    server = await serve(provider, server_clock)
    credentials = ClientCredentials("orders-agent", SECRET, settings=LOCAL)
    try:
        async with await connect(server, credentials) as client:
            assert (await client.send_message(hello())).task is not None
            provider.rotate(retire=True)
            server_clock.advance(301)  # the server refetches the keys: the cached token's is gone
            async with client.send_streaming_message(hello()) as stream:
                events = [event async for event in stream]
            assert events and events[-1].status_update is not None
            assert provider.token_hits == 2
    finally:
        await server.close()


async def test_a_token_the_server_keeps_refusing_is_retried_only_once(
    provider: Provider, server_clock: Clock
) -> None:
    provider.audience = "https://another-agent.example"  # every token names the wrong agent
    server = await serve(provider, server_clock)
    credentials = ClientCredentials("orders-agent", SECRET, settings=LOCAL)
    try:
        async with await connect(server, credentials) as client:
            with pytest.raises(AuthenticationError) as info:
                await client.send_message(hello())
        assert info.value.status == 401 and "invalid_token" in info.value.challenge
        assert provider.token_hits == 2
    finally:
        await server.close()


async def test_a_wrong_secret_is_a_credentials_error_without_the_secret(
    provider: Provider, server_clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server = await serve(provider, server_clock)
    wrong = "not-the-secret-9f3a"
    credentials = ClientCredentials("orders-agent", wrong, settings=LOCAL)
    try:
        async with await connect(server, credentials) as client:
            with pytest.raises(CredentialsError) as info:
                await client.send_message(hello())
        assert "HTTP 401 (invalid_client)" in str(info.value)
        assert wrong not in str(info.value) and wrong not in repr(credentials)
        ours = [r for r in caplog.records if not r.name.startswith("authlib")]  # not the provider's
        assert all(wrong not in record.getMessage() for record in ours)
    finally:
        await server.close()


async def test_neither_secret_nor_token_is_logged(
    provider: Provider, server_clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server = await serve(provider, server_clock)
    credentials = ClientCredentials("orders-agent", SECRET, settings=LOCAL)
    try:
        async with await connect(server, credentials) as client:
            await client.send_message(hello())
        token = provider.issued[0]["access_token"]
        ours = [r for r in caplog.records if not r.name.startswith("authlib")]  # not the provider's
        logged = "\n".join(record.getMessage() for record in ours)
        assert SECRET not in logged and token not in logged
        assert SECRET not in repr(credentials)
    finally:
        await server.close()


async def test_the_token_endpoint_is_behind_the_address_guard(
    provider: Provider, server_clock: Clock
) -> None:
    server = await serve(provider, server_clock)
    credentials = ClientCredentials("orders-agent", SECRET)  # default guard: loopback forbidden
    try:
        async with await connect(server, credentials) as client:
            with pytest.raises(CredentialsError, match="loopback"):
                await client.send_message(hello())
        assert provider.token_hits == 0
    finally:
        await server.close()


def test_a_client_id_and_secret_are_needed_and_the_method_known() -> None:
    with pytest.raises(ValueError, match="client id and a secret"):
        ClientCredentials("x", "")
    with pytest.raises(ValueError, match="client id and a private key"):
        ClientCredentials("x", "y", auth_method="private_key_jwt")
    with pytest.raises(ValueError, match="auth_method"):
        ClientCredentials("x", "y", auth_method="client_secret_jwt")


async def test_private_key_jwt_signs_an_assertion_per_token_request(
    provider: Provider, server_clock: Clock
) -> None:
    from joserfc.jwk import import_key

    key = SigningKey.generate("client-key-1", "ES256")
    provider.add_client("keyed-agent", "", "a2a", public_key=import_key(key.public_jwk()))
    server = await serve(provider, server_clock)
    clock = Clock()
    credentials = ClientCredentials("keyed-agent", private_key=key, settings=LOCAL, clock=clock)
    assert credentials.auth_method == "private_key_jwt"
    try:
        async with await connect(server, credentials) as client:
            assert (await client.send_message(hello())).task is not None
            clock.advance(600)  # a new token, so a new assertion (its jti is fresh)
            assert (await client.send_message(hello())).task is not None
        assert provider.token_hits == 2
        assert all(token["access_token"] for token in provider.issued)
    finally:
        await server.close()


async def test_an_assertion_with_another_key_is_refused(
    provider: Provider, server_clock: Clock
) -> None:
    from joserfc.jwk import import_key

    registered = SigningKey.generate("registered", "ES256")
    provider.add_client("keyed-agent", "", "a2a", public_key=import_key(registered.public_jwk()))
    server = await serve(provider, server_clock)
    other = SigningKey.generate("registered", "ES256")
    credentials = ClientCredentials("keyed-agent", private_key=other, settings=LOCAL)
    try:
        async with await connect(server, credentials) as client:
            with pytest.raises(CredentialsError, match=r"HTTP 40\d \(invalid_client\)"):
                await client.send_message(hello())
        assert provider.token_hits == 0
    finally:
        await server.close()


async def test_a_card_without_a_client_credentials_scheme_is_refused() -> None:
    credentials = ClientCredentials("x", "y")
    card = make_card()
    with pytest.raises(CredentialsError, match="no OAuth 2.0 client-credentials scheme"):
        await credentials.headers(CredentialRequest("https://agent.example/", "SendMessage", card))
    with pytest.raises(CredentialsError, match="no agent card"):
        await credentials.headers(CredentialRequest("https://agent.example/", "SendMessage"))
