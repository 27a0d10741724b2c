"""An identity provider that is down: cut, stalled or answering 5xx (tests/fault_proxy.py).

The server reaches the provider of tests/oauth_provider.py only through a fault proxy (its
discovery document names the JWKS behind the proxy too). With no key in hand the caller gets
503 + ``Retry-After`` and the -32000 error it may retry, never 401; with keys in hand tokens
keep being accepted, and a stalled refetch holds none of them back. A stall is bounded by
``fetch_timeout_seconds``: the tests wait for each answer with a deadline far above it, so a
fetch without one fails a test rather than hanging it. Our client, end to end, gets an
``UnavailableError`` whose ``retry_after`` is enough.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fault_proxy import FaultProxy
from oauth_provider import AUDIENCE, Provider
from server_support import ScriptedAgent, make_card
from test_security_oauth import (
    SETTINGS,
    SETTINGS_INTERVAL,
    Clock,
    fetch_token,
    send,
    token_settings,
)

from a2a_wire.client import A2AClient, ClientCredentials, ClientSettings
from a2a_wire.errors import UnavailableError
from a2a_wire.server import Principal, SecurityConfig, TokenIssuer, create_app
from a2a_wire.types import Message, Part, Role, SendMessageRequest

FETCH_TIMEOUT = 0.5  # seconds; the stall tests show the answer comes after about this long
PATIENCE = 60.0  # what a test waits for an answer before it calls the server hung


@pytest.fixture
async def provider() -> AsyncIterator[Provider]:
    provider = await Provider().start()
    provider.add_client("orders-agent", "orders-secret", "a2a")
    yield provider
    await provider.stop()


@pytest.fixture
async def proxy(provider: Provider) -> AsyncIterator[FaultProxy]:
    port = int(provider.issuer.rsplit(":", 1)[1])
    proxy = await FaultProxy("127.0.0.1", port).start()
    provider.discovery_overrides["jwks_uri"] = f"http://127.0.0.1:{proxy.port}/jwks"
    yield proxy
    await proxy.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def client(
    aiohttp_client: Any, agent: ScriptedAgent, provider: Provider, proxy: FaultProxy, clock: Clock
) -> Any:
    discovery = f"http://127.0.0.1:{proxy.port}/.well-known/openid-configuration"
    trusted = TokenIssuer(provider.issuer, AUDIENCE, discovery_url=discovery)
    tokens = dataclasses.replace(token_settings(clock), fetch_timeout_seconds=FETCH_TIMEOUT)
    security = SecurityConfig(oauth2=[trusted], tokens=tokens)
    return await aiohttp_client(
        create_app(make_card(), agent, security=security, settings=SETTINGS)
    )


@dataclasses.dataclass
class Fault:
    """One way for the provider to be down, started and ended by the test."""

    kind: str
    proxy: FaultProxy
    provider: Provider

    async def start(self) -> None:
        if self.kind == "cut":
            await self.proxy.cut()
        elif self.kind == "stall":
            self.proxy.stall()
        else:
            self.provider.jwks_status = 503

    async def heal(self) -> None:
        self.provider.jwks_status = 200
        await self.proxy.heal()


@pytest.fixture(params=["cut", "stall", "HTTP 503"])
def fault(request: pytest.FixtureRequest, proxy: FaultProxy, provider: Provider) -> Fault:
    return Fault(request.param, proxy, provider)


async def answer(client: Any, token: str) -> tuple[int, dict[str, str], dict[str, Any]]:
    """Status, headers and body of a SendMessage, which must come within ``PATIENCE``."""
    async with asyncio.timeout(PATIENCE):
        response = await send(client, token)
        return response.status, dict(response.headers), await response.json()


def assert_unavailable(status: int, headers: dict[str, str], body: dict[str, Any]) -> int:
    """The retryable answer; returns its ``Retry-After`` in seconds."""
    assert status == 503
    assert "WWW-Authenticate" not in headers
    retry_after = int(headers["Retry-After"])
    assert 1 <= retry_after <= SETTINGS_INTERVAL
    error = body["error"]
    assert error["code"] == -32000
    (info,) = error["data"]
    assert info["reason"] == "IDENTITY_PROVIDER_UNAVAILABLE"
    assert info["metadata"]["retryAfterSeconds"] == str(retry_after)
    return retry_after


async def test_a_provider_down_at_first_use_answers_503_the_caller_may_retry(
    client: Any, provider: Provider, fault: Fault, agent: ScriptedAgent, clock: Clock, caplog: Any
) -> None:
    token = await fetch_token(provider, "orders-agent", "orders-secret")  # not through the proxy
    await fault.start()
    status, headers, body = await answer(client, token)
    assert_unavailable(status, headers, body)
    assert token not in json.dumps(body)
    assert agent.contexts == []
    # the next request within the refetch interval costs no fetch and gets the same answer
    hits = (provider.discovery_hits, provider.jwks_hits)
    assert_unavailable(*await answer(client, token))
    assert (provider.discovery_hits, provider.jwks_hits) == hits
    assert any("keys of issuer" in r.getMessage() for r in caplog.records)
    assert all(token not in r.getMessage() for r in caplog.records)
    await fault.heal()
    clock.advance(SETTINGS_INTERVAL + 1)
    status, _, body = await answer(client, token)
    assert status == 200, body
    assert len(agent.contexts) == 1


async def test_held_keys_keep_working_while_the_provider_is_down(
    client: Any,
    provider: Provider,
    fault: Fault,
    agent: ScriptedAgent,
    clock: Clock,
    signature_checks: list[str],
) -> None:
    token = await fetch_token(provider, "orders-agent", "orders-secret")
    assert (await answer(client, token))[0] == 200
    await fault.start()
    clock.advance(400)  # past the JWKS's max-age of 300 s: a refetch is due, and fails
    another = await fetch_token(provider, "orders-agent", "orders-secret")  # same key, not seen
    assert (await answer(client, another))[0] == 200
    assert len(signature_checks) == 2
    for _ in range(3):  # remembered: the stale key is the one a check would use anyway
        assert (await answer(client, another))[0] == 200
        assert (await answer(client, token))[0] == 200
    assert len(signature_checks) == 2  # the outage costs no signature check per request
    # a key rotated in meanwhile cannot be had: retry later, not "your token is bad"
    provider.rotate()
    rotated = await fetch_token(provider, "orders-agent", "orders-secret")
    assert_unavailable(*await answer(client, rotated))
    await fault.heal()
    clock.advance(SETTINGS_INTERVAL + 1)
    assert (await answer(client, rotated))[0] == 200
    assert len(agent.contexts) == 9  # every accepted request ran the agent


async def test_a_stalled_fetch_ends_at_its_deadline(
    client: Any, provider: Provider, proxy: FaultProxy
) -> None:
    token = await fetch_token(provider, "orders-agent", "orders-secret")
    proxy.stall()
    loop = asyncio.get_running_loop()
    started = loop.time()
    waiting = [asyncio.ensure_future(answer(client, token)) for _ in range(5)]
    answers = await asyncio.gather(*waiting)
    for status, headers, body in answers:
        assert_unavailable(status, headers, body)
    assert loop.time() - started >= FETCH_TIMEOUT  # the answer came from the deadline
    assert provider.discovery_hits == 0  # the stall held the one fetch back; nobody else fetched
    await proxy.heal()


async def test_while_a_refetch_stalls_a_held_key_is_used_without_waiting(
    provider: Provider, proxy: FaultProxy, clock: Clock
) -> None:
    from a2a_wire.server._oauth._verify import TokenVerifier

    discovery = f"http://127.0.0.1:{proxy.port}/.well-known/openid-configuration"
    issuer = TokenIssuer(provider.issuer, AUDIENCE, discovery_url=discovery)
    # the fetch's own deadline is beyond the test's patience: only healing ends the stall
    tokens = dataclasses.replace(token_settings(clock), fetch_timeout_seconds=2 * PATIENCE)
    verifier = TokenVerifier([issuer], tokens)
    try:
        token = await fetch_token(provider, "orders-agent", "orders-secret")
        assert isinstance(await verifier.verify(token), Principal)
        keys = verifier.keys[provider.issuer]
        clock.advance(400)  # past the JWKS's max-age: the keys are stale, a refetch is due
        proxy.stall()
        another = await fetch_token(provider, "orders-agent", "orders-secret")
        refetching = asyncio.ensure_future(verifier.verify(another))
        async with asyncio.timeout(PATIENCE):
            while keys.fetches < 2:
                await asyncio.sleep(0.01)
            assert isinstance(await verifier.verify(token), Principal)  # no wait for the fetch
        assert not refetching.done()
        await proxy.heal()
        assert isinstance(await asyncio.wait_for(refetching, PATIENCE), Principal)
        assert provider.jwks_hits == 2
    finally:
        await verifier.close()


async def test_our_client_gets_an_unavailable_error_it_can_act_on(
    client: Any, provider: Provider, proxy: FaultProxy, clock: Clock
) -> None:
    """End to end: our client's token comes from the provider; the server cannot check it."""
    credentials = ClientCredentials(
        "orders-agent",
        "orders-secret",
        token_url=provider.token_url,
        scopes=["a2a"],
        settings=ClientSettings(allow=["127.0.0.1"]),
    )
    await proxy.cut()
    message = Message(role=Role.USER, parts=[Part(text="hello")], message_id="m1")
    url = str(client.make_url("/"))
    async with A2AClient(url, credentials=credentials, settings=credentials.settings) as a2a:
        with pytest.raises(UnavailableError) as caught:
            await a2a.send_message(SendMessageRequest(message=message))
        assert caught.value.data is not None
        assert caught.value.data[0]["reason"] == "IDENTITY_PROVIDER_UNAVAILABLE"
        assert 1 <= caught.value.retry_after <= SETTINGS_INTERVAL
        assert credentials.fetches == 1  # a 503 is not a refused token: no new one was asked for
        await proxy.heal()
        clock.advance(caught.value.retry_after)  # the wait the server asked for
        assert (await a2a.send_message(SendMessageRequest(message=message))).task is not None
