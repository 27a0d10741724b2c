"""JWT access tokens from an OAuth 2.0 / OpenID Connect provider on loopback (RFC 6750, 9068).

The provider (tests/oauth_provider.py) is Authlib's authorization server: tokens come from its
client-credentials endpoint, keys from its discovery document and JWKS. The server's clock is
the wall clock plus an offset a test moves forward, so that key refetch intervals and cache
lifetimes pass without waiting. Every refusal is checked for its status, its challenge and that
no task was made (the agent never ran).
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from oauth_provider import AUDIENCE, Provider, new_key
from server_support import ScriptedAgent, envelope, make_card, post, send_params

from a2a_wire.netguard import AddressPolicy
from a2a_wire.server import (
    AgentExecutor,
    EventQueue,
    RegisteredClient,
    RequestContext,
    SecurityConfig,
    ServerSettings,
    Skill,
    TaskUpdater,
    TokenIssuer,
    TokenSettings,
    create_app,
    hash_secret,
)
from a2a_wire.types import AgentSkill

INVALID = 'Bearer realm="a2a", error="invalid_token"'
STATIC_TOKEN = "static-token-of-alice-5d1c"


class Clock:
    """The server's clock: the wall clock plus an offset the test moves."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


@pytest.fixture
def store_kind() -> str:
    return "memory"  # authentication does not depend on the store


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def provider() -> AsyncIterator[Provider]:
    provider = await Provider().start()
    provider.add_client("orders-agent", "orders-secret", "a2a")
    provider.add_client("billing-agent", "billing-secret", "a2a")
    provider.add_client("no-scope-agent", "no-scope-secret", "other")
    yield provider
    await provider.stop()


def token_settings(clock: Clock, *allow: str) -> TokenSettings:
    return TokenSettings(
        allow_http=True, allowlist=AddressPolicy.from_strings(allow or ["127.0.0.1"]), clock=clock
    )


def security(provider: Provider, clock: Clock, *allow: str, **issuer: Any) -> SecurityConfig:
    trusted = TokenIssuer(provider.issuer, AUDIENCE, required_scopes=("a2a",), **issuer)
    alice = RegisteredClient("alice", token_hash=hash_secret(STATIC_TOKEN, log2_n=4))
    return SecurityConfig(clients=[alice], oauth2=[trusted], tokens=token_settings(clock, *allow))


SETTINGS = ServerSettings(auth_failures_per_minute=100_000)


@pytest.fixture
def app(agent: ScriptedAgent, provider: Provider, clock: Clock) -> web.Application:
    return create_app(make_card(), agent, security=security(provider, clock), settings=SETTINGS)


async def fetch_token(
    provider: Provider, client_id: str, secret: str, *, basic: bool = True
) -> str:
    form = {"grant_type": "client_credentials", "scope": "a2a"}
    headers = {}
    if basic:
        headers["Authorization"] = aiohttp.encode_basic_auth(client_id, secret)
    else:
        form |= {"client_id": client_id, "client_secret": secret}
    async with (
        aiohttp.ClientSession() as session,
        session.post(provider.token_url, data=form, headers=headers) as response,
    ):
        assert response.status == 200, await response.text()
        body = await response.json()
    assert body["token_type"] == "Bearer"
    return str(body["access_token"])


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def send(client: Any, token: str, text: str = "hello") -> aiohttp.ClientResponse:
    return await post(client, envelope("SendMessage", send_params(text)), headers=bearer(token))


async def task_ids(client: Any, headers: dict[str, str]) -> list[str]:
    response = await post(client, envelope("ListTasks", {}), headers=headers)
    body = await response.json()
    assert "result" in body, body
    return [task["id"] for task in body["result"].get("tasks", [])]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned(header: dict[str, Any], claims: dict[str, Any], signature: bytes = b"") -> str:
    head = b64(json.dumps(header).encode())
    body = b64(json.dumps(claims).encode())
    return f"{head}.{body}.{b64(signature)}"


def claims(provider: Provider, **changes: Any) -> dict[str, Any]:
    now = int(time.time())
    body = {"iss": provider.issuer, "aud": AUDIENCE, "sub": "forger", "scope": "a2a"}
    body |= {"iat": now, "exp": now + 600}
    return body | changes


# -- accepted tokens --------------------------------------------------------------------------


@pytest.mark.parametrize("basic", [True, False], ids=["client_secret_basic", "client_secret_post"])
async def test_a_token_of_the_provider_is_accepted(
    client: Any, provider: Provider, agent: ScriptedAgent, basic: bool
) -> None:
    token = await fetch_token(provider, "orders-agent", "orders-secret", basic=basic)
    response = await send(client, token)
    assert response.status == 200
    body = await response.json()
    assert body["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert len(agent.contexts) == 1
    assert (provider.discovery_hits, provider.jwks_hits) == (1, 1)


async def test_tasks_are_owned_per_caller(client: Any, provider: Provider) -> None:
    orders = bearer(await fetch_token(provider, "orders-agent", "orders-secret"))
    billing = bearer(await fetch_token(provider, "billing-agent", "billing-secret"))
    alice = bearer(STATIC_TOKEN)
    made = {}
    for name, headers in (("orders", orders), ("billing", billing), ("alice", alice)):
        response = await post(client, envelope("SendMessage", send_params("hi")), headers=headers)
        made[name] = (await response.json())["result"]["task"]["id"]
    assert await task_ids(client, orders) == [made["orders"]]
    assert await task_ids(client, billing) == [made["billing"]]
    assert await task_ids(client, alice) == [made["alice"]]
    response = await post(client, envelope("GetTask", {"id": made["orders"]}), headers=billing)
    assert (await response.json())["error"]["code"] == -32001  # as if it never existed
    # a second token of the same client is the same caller
    again = bearer(await fetch_token(provider, "orders-agent", "orders-secret"))
    assert await task_ids(client, again) == [made["orders"]]


async def test_a_rotated_key_is_picked_up_without_a_failed_call(
    client: Any, provider: Provider, clock: Clock
) -> None:
    old = await fetch_token(provider, "orders-agent", "orders-secret")
    assert (await send(client, old)).status == 200
    provider.rotate()
    new = await fetch_token(provider, "orders-agent", "orders-secret")
    assert json.loads(base64.urlsafe_b64decode(new.split(".")[0] + "=="))["kid"] == (
        provider.signing_key.kid
    )
    clock.advance(SETTINGS_INTERVAL + 1)  # the last fetch is older than the refetch interval
    assert (await send(client, new)).status == 200
    assert (await send(client, old)).status == 200  # the old key is still published
    assert provider.jwks_hits == 2
    provider.rotate(retire=True)
    clock.advance(SETTINGS_INTERVAL + 1)
    newest = await fetch_token(provider, "orders-agent", "orders-secret")
    assert (await send(client, newest)).status == 200
    assert provider.jwks_hits == 3


SETTINGS_INTERVAL = TokenSettings().jwks_refetch_interval_seconds


async def test_registered_clients_keep_working_beside_the_issuer(client: Any) -> None:
    assert (await send(client, STATIC_TOKEN)).status == 200
    response = await send(client, "wrong-static-token")
    assert response.status == 401


# -- refused tokens ---------------------------------------------------------------------------


async def assert_refused(
    client: Any,
    agent: ScriptedAgent,
    token: str,
    status: int = 401,
    challenge: str = INVALID,
) -> None:
    response = await send(client, token)
    assert response.status == status
    assert response.headers.getall("WWW-Authenticate")[0] == challenge
    body = await response.json()
    assert body["id"] is None and body["error"]["code"] == -32600
    assert token not in json.dumps(body)
    assert agent.contexts == []  # no task was made


def _hs256_with_public_key(provider: Provider) -> str:
    public = provider.signing_key.as_dict(private=False)
    from jwcrypto import jwk

    pem = jwk.JWK(**public).export_to_pem()  # the RSA public key, as an attacker has it
    header = {"alg": "HS256", "typ": "at+jwt", "kid": provider.signing_key.kid}
    token = unsigned(header, claims(provider))
    signing_input = token.rsplit(".", 1)[0].encode()
    signature = hmac.new(pem, signing_input, hashlib.sha256).digest()
    return f"{signing_input.decode()}.{b64(signature)}"


CASES = {  # case: (token, the reason the server logs)
    "expired": (lambda p: p.mint(exp=int(time.time()) - 120), "token expired"),
    "not yet valid": (lambda p: p.mint(nbf=int(time.time()) + 600), "token not yet valid"),
    "wrong issuer": (lambda p: p.mint(iss="https://login.example.org/other"), "unknown issuer"),
    "issuer with a trailing slash": (lambda p: p.mint(iss=p.issuer + "/"), "unknown issuer"),
    "issuer as a list": (lambda p: p.mint(iss=[p.issuer]), "unknown issuer"),
    "claims not an object": (lambda p: unsigned({"alg": "RS256"}, [1]), "malformed token"),  # type: ignore[arg-type]
    "wrong audience": (lambda p: p.mint(aud="https://another-agent.example"), "wrong audience"),
    "audience list without ours": (lambda p: p.mint(aud=["a", "b"]), "wrong audience"),
    "no exp": (lambda p: p.mint(exp=None), "token without exp"),
    "no subject": (lambda p: p.mint(sub=None), "no usable sub claim"),
    "alg none": (
        lambda p: unsigned({"alg": "none", "kid": p.signing_key.kid}, claims(p)),
        "algorithm not accepted",
    ),
    "HS256 signed with the RSA public key": (_hs256_with_public_key, "algorithm not accepted"),
    "unknown kid": (lambda p: p.mint(key=new_key()), "unknown key id"),
    "bad signature": (
        lambda p: p.mint().rsplit(".", 1)[0] + "." + b64(b"\x00" * 256),
        "bad signature",
    ),
    "signed by another key under a known kid": (
        lambda p: p.mint(key=new_key(), header={"kid": p.signing_key.kid}),
        "bad signature",
    ),
    "PS256 not in the allowlist": (
        lambda p: p.mint(header={"alg": "PS256"}),
        "algorithm not accepted",
    ),
    "typ of another kind": (lambda p: p.mint(header={"typ": "secevent+jwt"}), "not a JWT"),
    "malformed": (lambda p: "eyJ.not-base64.x", "malformed token"),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_a_bad_token_is_refused_with_invalid_token(
    client: Any,
    provider: Provider,
    agent: ScriptedAgent,
    case: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    make, reason = CASES[case]
    token = make(provider)
    await assert_refused(client, agent, token)
    refusals = [
        r.getMessage() for r in caplog.records if "authentication refused" in r.getMessage()
    ]
    assert refusals and refusals[-1].endswith(f": {reason}")
    assert all(token not in r.getMessage() for r in caplog.records)


async def test_a_token_without_the_required_scope_is_403(
    client: Any, provider: Provider, agent: ScriptedAgent
) -> None:
    token = await fetch_token(provider, "no-scope-agent", "no-scope-secret")
    challenge = 'Bearer realm="a2a", error="insufficient_scope", scope="a2a"'
    await assert_refused(client, agent, token, 403, challenge)
    response = await send(client, token)
    assert (await response.json())["error"]["data"][0]["reason"] == "INSUFFICIENT_SCOPE"


async def test_a_100_kb_token_is_refused_unread(
    agent: ScriptedAgent, provider: Provider, clock: Clock
) -> None:
    app = create_app(make_card(), agent, security=security(provider, clock), settings=SETTINGS)
    server = TestServer(app)
    await server.start_server(max_field_size=256 * 1024)  # aiohttp's own 8 KiB limit out of the way
    async with TestClient(server) as big_headers:
        token = provider.mint(padding="x" * 100_000)
        assert len(token) > 100_000
        await assert_refused(big_headers, agent, token)
    assert provider.jwks_hits == 0  # refused before any key was looked for


async def test_a_thousand_random_kids_cost_one_jwks_fetch(
    client: Any, provider: Provider, agent: ScriptedAgent, clock: Clock
) -> None:
    good = await fetch_token(provider, "orders-agent", "orders-secret")
    assert (await send(client, good)).status == 200
    clock.advance(SETTINGS_INTERVAL + 1)
    made_up = [
        unsigned({"alg": "RS256", "kid": uuid.uuid4().hex}, claims(provider), b"\x01" * 256)
        for _ in range(1000)
    ]
    statuses: list[int] = []
    for start in range(0, len(made_up), 50):
        answers = await asyncio.gather(*(send(client, t) for t in made_up[start : start + 50]))
        statuses += [answer.status for answer in answers]
    assert statuses == [401] * 1000
    assert provider.jwks_hits == 2  # the first unknown kid refetched; the 999 others did not
    assert len(agent.contexts) == 1


async def test_cached_keys_are_kept_while_the_jwks_endpoint_is_down(
    client: Any, provider: Provider, agent: ScriptedAgent, clock: Clock
) -> None:
    token = await fetch_token(provider, "orders-agent", "orders-secret")
    assert (await send(client, token)).status == 200
    provider.jwks_status = 503
    clock.advance(400)  # past the JWKS's max-age of 300 s: a refetch is due, and fails
    assert (await send(client, token)).status == 200
    assert provider.jwks_hits == 2
    assert (await send(client, token)).status == 200
    assert provider.jwks_hits == 2  # no second try within the refetch interval
    provider.rotate()
    rotated = await fetch_token(provider, "orders-agent", "orders-secret")
    clock.advance(SETTINGS_INTERVAL + 1)
    response = await send(client, rotated)  # its key cannot be fetched: retry later
    assert response.status == 503 and int(response.headers["Retry-After"]) >= 1
    body = await response.json()
    assert body["error"]["data"][0]["reason"] == "IDENTITY_PROVIDER_UNAVAILABLE"
    provider.jwks_status = 200
    clock.advance(SETTINGS_INTERVAL + 1)
    assert (await send(client, rotated)).status == 200
    assert len(agent.contexts) == 4


# -- the address guard ------------------------------------------------------------------------


async def test_a_loopback_issuer_is_refused_by_the_guard_unless_allowed(
    agent: ScriptedAgent, provider: Provider, clock: Clock, aiohttp_client: Any
) -> None:
    trusted = TokenIssuer(provider.issuer, AUDIENCE)
    tokens = TokenSettings(allow_http=True, clock=clock)  # no allowlist: loopback is forbidden
    config = SecurityConfig(oauth2=[trusted], tokens=tokens)
    client = await aiohttp_client(create_app(make_card(), agent, security=config))
    token = await fetch_token(provider, "orders-agent", "orders-secret")
    await assert_refused(client, agent, token)
    assert (provider.discovery_hits, provider.jwks_hits) == (0, 0)


@pytest.mark.parametrize("allowed", [False, True])
async def test_a_discovery_document_pointing_at_a_private_address(
    agent: ScriptedAgent, clock: Clock, aiohttp_client: Any, allowed: bool
) -> None:
    provider = await Provider(host="localhost").start()  # reached by name, allowlisted by name
    try:
        provider.add_client("orders-agent", "orders-secret", "a2a")
        port = provider.issuer.rsplit(":", 1)[1]
        provider.discovery_overrides["jwks_uri"] = f"http://127.0.0.1:{port}/jwks"
        allow = ("localhost", "127.0.0.1") if allowed else ("localhost",)
        app = create_app(make_card(), agent, security=security(provider, clock, *allow))
        client = await aiohttp_client(app)
        token = await fetch_token(provider, "orders-agent", "orders-secret")
        assert (
            provider.issuer
            in orjson.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))["iss"]
        )
        if allowed:
            assert (await send(client, token)).status == 200
            assert provider.jwks_hits == 1
        else:
            await assert_refused(client, agent, token)
            assert (provider.discovery_hits, provider.jwks_hits) == (1, 0)
    finally:
        await provider.stop()


async def test_http_issuer_urls_need_allow_http(
    agent: ScriptedAgent, provider: Provider, clock: Clock, aiohttp_client: Any
) -> None:
    tokens = TokenSettings(allowlist=AddressPolicy.from_strings(["127.0.0.1"]), clock=clock)
    config = SecurityConfig(oauth2=[TokenIssuer(provider.issuer, AUDIENCE)], tokens=tokens)
    client = await aiohttp_client(create_app(make_card(), agent, security=config))
    token = await fetch_token(provider, "orders-agent", "orders-secret")
    await assert_refused(client, agent, token)
    assert provider.discovery_hits == 0


# -- the card says it -------------------------------------------------------------------------


class Named(AgentExecutor):
    """Answers with an artifact naming its skill."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        updater = TaskUpdater(events, context)
        await updater.add_artifact(self.name)
        await updater.complete()

    async def cancel(self, context: RequestContext, events: EventQueue) -> None:
        pass


def skill(skill_id: str, **kwargs: Any) -> Skill:
    card = AgentSkill(id=skill_id, name=skill_id, description=skill_id, tags=["t"])
    return Skill(card, Named(skill_id), **kwargs)


@pytest.fixture
def skills_app(provider: Provider, clock: Clock) -> web.Application:
    """Two issuers (one OAuth 2.0 with a token URL, one OpenID Connect), a static client, and
    skills opened by scopes."""
    oauth2 = TokenIssuer(
        provider.issuer,
        AUDIENCE,
        required_scopes=("a2a",),
        skills_by_scope={"a2a.search": ("search",), "a2a.admin": ("*",)},
        token_url=provider.token_url,
        description="client credentials at the test provider",
    )
    oidc = TokenIssuer("https://accounts.example.com", AUDIENCE, scheme_name="google")
    alice = RegisteredClient("alice", token_hash=hash_secret(STATIC_TOKEN, log2_n=4))
    config = SecurityConfig(
        clients=[alice],
        oauth2=[oauth2, oidc],
        tokens=token_settings(clock),
        skills=[skill("search", default=True), skill("report"), skill("secret", public=False)],
        extended_card=True,
    )
    return create_app(make_card(extended=True), security=config, settings=SETTINGS)


async def test_the_card_advertises_the_issuers(
    aiohttp_client: Any, skills_app: Any, provider: Provider
) -> None:
    client = await aiohttp_client(skills_app)
    card = await (await client.get("/.well-known/agent-card.json")).json()
    assert card["securitySchemes"] == {
        "oauth2": {
            "oauth2SecurityScheme": {
                "description": "client credentials at the test provider",
                "flows": {
                    "clientCredentials": {
                        "tokenUrl": provider.token_url,
                        "scopes": {
                            "a2a": "a2a",
                            "a2a.search": "a2a.search",
                            "a2a.admin": "a2a.admin",
                        },
                    }
                },
                "oauth2MetadataUrl": provider.issuer + "/.well-known/openid-configuration",
            }
        },
        "google": {
            "openIdConnectSecurityScheme": {
                "openIdConnectUrl": "https://accounts.example.com/.well-known/openid-configuration"
            }
        },
        "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "description": "Bearer token"}},
    }
    assert card["securityRequirements"] == [
        {"schemes": {"oauth2": {"list": ["a2a"]}}},
        {"schemes": {"google": {}}},
        {"schemes": {"bearer": {}}},
    ]
    by_id = {s["id"]: s for s in card["skills"]}
    assert set(by_id) == {"search", "report"}
    assert by_id["search"]["securityRequirements"] == [
        {"schemes": {"oauth2": {"list": ["a2a", "a2a.search"]}}},
        {"schemes": {"oauth2": {"list": ["a2a", "a2a.admin"]}}},
        {"schemes": {"google": {}}},
        {"schemes": {"bearer": {}}},
    ]
    assert by_id["report"]["securityRequirements"] == [
        {"schemes": {"oauth2": {"list": ["a2a", "a2a.admin"]}}},
        {"schemes": {"google": {}}},
        {"schemes": {"bearer": {}}},
    ]


async def test_scopes_open_skills_and_the_extended_card_lists_them(
    aiohttp_client: Any, skills_app: Any, provider: Provider
) -> None:
    client = await aiohttp_client(skills_app)
    provider.add_client("searcher", "searcher-secret", "a2a", "a2a.search")
    provider.add_client("admin", "admin-secret", "a2a", "a2a.admin")
    searcher = bearer(await fetch_token_scoped(provider, "searcher", "a2a a2a.search"))
    admin = bearer(await fetch_token_scoped(provider, "admin", "a2a a2a.admin"))
    for headers, allowed in ((searcher, {"search"}), (admin, {"search", "report", "secret"})):
        for name in ("search", "report", "secret"):
            params = send_params("x", metadata={"skillId": name})
            answer = await (
                await post(client, envelope("SendMessage", params), headers=headers)
            ).json()
            if name in allowed:
                assert answer["result"]["task"]["artifacts"][0]["parts"][0]["text"] == name
            else:
                assert answer["error"]["code"] == -32602
        extended = await (
            await post(client, envelope("GetExtendedAgentCard"), headers=headers)
        ).json()
        assert {s["id"] for s in extended["result"]["skills"]} == allowed


async def fetch_token_scoped(provider: Provider, client_id: str, scope: str) -> str:
    form = {"grant_type": "client_credentials", "scope": scope}
    headers = {"Authorization": aiohttp.encode_basic_auth(client_id, f"{client_id}-secret")}
    async with (
        aiohttp.ClientSession() as session,
        session.post(provider.token_url, data=form, headers=headers) as response,
    ):
        assert response.status == 200
        return str((await response.json())["access_token"])


async def test_the_card_stays_public(client: Any) -> None:
    response = await client.get("/.well-known/agent-card.json")
    assert response.status == 200


# -- the verified-token cache -----------------------------------------------------------------


async def test_a_callers_later_requests_skip_the_signature_check(
    client: Any, provider: Provider, clock: Clock, signature_checks: list[str]
) -> None:
    token = await fetch_token(provider, "orders-agent", "orders-secret")
    for _ in range(5):
        assert (await send(client, token)).status == 200
    assert signature_checks == ["RS256"]
    clock.advance(400)  # past the JWKS's max-age: the keys are stale, so the whole check again
    assert (await send(client, token)).status == 200
    assert signature_checks == ["RS256", "RS256"] and provider.jwks_hits == 2


async def test_a_remembered_token_still_expires(
    client: Any, provider: Provider, agent: ScriptedAgent, clock: Clock
) -> None:
    token = provider.mint(lifetime=100)
    assert (await send(client, token)).status == 200
    clock.advance(100 + TokenSettings().leeway_seconds)
    response = await send(client, token)
    assert response.status == 401
    assert response.headers.getall("WWW-Authenticate")[0] == INVALID


async def test_without_the_cache_every_request_is_checked(
    agent: ScriptedAgent,
    provider: Provider,
    clock: Clock,
    aiohttp_client: Any,
    signature_checks: list[str],
) -> None:
    config = security(provider, clock)
    tokens = dataclasses.replace(config.tokens, verified_cache_size=0)
    app = create_app(
        make_card(),
        agent,
        security=dataclasses.replace(config, tokens=tokens),
        settings=SETTINGS,
    )
    client = await aiohttp_client(app)
    token = await fetch_token(provider, "orders-agent", "orders-secret")
    for _ in range(3):
        assert (await send(client, token)).status == 200
    assert len(signature_checks) == 3
