"""CPU per request: a JWT access token of an issuer versus a registered client's static token.

One process, one run, both credentials side by side: the Authlib authorization server of
tests/oauth_provider.py on 127.0.0.1 issues an RS256 token by the client-credentials grant, and
the server (``create_app`` with ``SecurityConfig(clients=..., oauth2=...)``, in-memory store)
accepts both it and a static token read at start (``RegisteredClient.from_secrets``: known
without scrypt, one HMAC a request). Two measures, each over ``--requests`` requests per
credential, alternating the credentials in rounds so that both meet the same machine state:

``authenticate``
    ``ClientRegistry.authenticate`` alone: the process CPU time of finding the caller; the JWT
    also with ``verified_cache_size = 0``, its signature checked on every request.
``request``
    a whole GetTask over HTTP to the server in the same process (client and server CPU both;
    the answer is -32001, the task id being made up): what a caller costs end to end.

The JWKS is fetched once per registry, on the first JWT: the script prints the provider's counts at the end
to show that no request after it touches the network.

Run: ``.venv/bin/python benchmarks/jwt_auth.py`` (about a minute) or ``--requests 200``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
from aiohttp.test_utils import TestServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from oauth_provider import AUDIENCE, Provider  # noqa: E402
from server_support import ScriptedAgent, make_card  # noqa: E402

from a2a_wire.netguard import AddressPolicy  # noqa: E402
from a2a_wire.server import (  # noqa: E402
    ClientRegistry,
    RegisteredClient,
    SecurityConfig,
    ServerSettings,
    TokenIssuer,
    TokenSettings,
    create_app,
)

STATIC = "static-token-of-the-benchmark-4d1f"
BODY = b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"nope"}}'


async def token_of(provider: Provider) -> str:
    form = {"grant_type": "client_credentials", "scope": "a2a"}
    headers = {"Authorization": aiohttp.encode_basic_auth("bench", "bench-secret")}
    async with (
        aiohttp.ClientSession() as session,
        session.post(provider.token_url, data=form, headers=headers) as response,
    ):
        return str((await response.json())["access_token"])


async def cpu_per_call(call: Callable[[], Awaitable[None]], count: int) -> float:
    """Process CPU microseconds per call, over ``count`` calls."""
    start = time.process_time()
    for _ in range(count):
        await call()
    return (time.process_time() - start) / count * 1e6


async def main(requests: int, rounds: int) -> None:
    provider = await Provider().start()
    provider.add_client("bench", "bench-secret", "a2a")
    issuer = TokenIssuer(provider.issuer, AUDIENCE, required_scopes=("a2a",))
    tokens = TokenSettings(allow_http=True, allowlist=AddressPolicy.from_strings(["127.0.0.1"]))
    static = RegisteredClient.from_secrets("static-client", token=STATIC)
    security = SecurityConfig(clients=[static], oauth2=[issuer], tokens=tokens)
    settings = ServerSettings(requests_per_second=1e9, request_burst=10**9)
    app = create_app(make_card(), ScriptedAgent(), security=security, settings=settings)
    server = TestServer(app)
    await server.start_server()
    jwt = await token_of(provider)
    registry = security.registry()
    uncached = dataclasses.replace(tokens, verified_cache_size=0)
    checking = dataclasses.replace(security, tokens=uncached).registry()
    credentials = {"JWT (RS256)": jwt, "static token": STATIC}
    url = server.make_url("/")
    base = {"Content-Type": "application/json", "A2A-Version": "1.0"}
    results: dict[tuple[str, str], list[float]] = {}
    async with aiohttp.ClientSession() as session:

        def by_registry(value: str, of: ClientRegistry = registry) -> Callable[[], Awaitable[None]]:
            headers = {"Authorization": f"Bearer {value}"}

            async def call() -> None:
                found = await of.authenticate(headers)
                assert getattr(found, "client_id", ""), found

            return call

        def by_request(value: str) -> Callable[[], Awaitable[None]]:
            headers = {**base, "Authorization": f"Bearer {value}"}

            async def call() -> None:
                async with session.post(url, data=BODY, headers=headers) as response:
                    assert response.status == 200, response.status
                    await response.read()

            return call

        for value in credentials.values():  # warm up: the JWKS fetch, the pins
            await by_registry(value)()
            await by_request(value)()
        await by_registry(jwt, checking)()
        fetched = provider.jwks_hits  # the app's registry and the two here: one fetch each
        for number in range(rounds):
            cells = [
                ("authenticate", name, by_registry(value)) for name, value in credentials.items()
            ]
            cells.append(
                ("authenticate", "JWT, verified_cache_size = 0", by_registry(jwt, checking))
            )
            cells += [("request", name, by_request(value)) for name, value in credentials.items()]
            for measure, name, call in cells if number % 2 else reversed(cells):  # both orders
                cpu = await cpu_per_call(call, requests)
                results.setdefault((measure, name), []).append(cpu)
    await registry.close()
    await checking.close()
    await server.close()
    print(f"# {platform.python_implementation()} {platform.python_version()}, {platform.machine()}")
    print(f"# {rounds} rounds x {requests} requests per credential; median CPU per request")
    print("| measure | credential | CPU per request (us) |")
    print("|---|---|---|")
    for (measure, name), values in sorted(results.items()):
        print(f"| {measure} | {name} | {statistics.median(values):.0f} |")
    print(
        f"\nJWKS fetches: {fetched} while warming up (one per registry), "
        f"{provider.jwks_hits - fetched} during the measured requests"
    )
    await provider.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.requests, args.rounds))
