"""The probes: ``GET /healthz`` (liveness, no store call) and ``GET /readyz`` (the store's ping,
bounded by ``readiness_timeout_seconds``; 503 with Retry-After when not ready or shutting down).

Through the real aiohttp app on 127.0.0.1, with a store that fails or stalls on demand
(tests/fault_store.py). The probes need no credentials, no A2A-Version and no Content-Type.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from aiohttp import web
from fault_store import ALL, FaultyStore
from server_support import ScriptedAgent, make_card

from a2a_wire.server import (
    RegisteredClient,
    SecurityConfig,
    ServerSettings,
    create_app,
    hash_secret,
)

SETTINGS = ServerSettings(
    readiness_timeout_seconds=0.3,
    store_retry_after_seconds=4,
    cors_origins=("https://app.example.com",),
)


@pytest.fixture
def store() -> FaultyStore:
    return FaultyStore()


@pytest.fixture
def app(agent: ScriptedAgent, store: FaultyStore) -> web.Application:
    # authentication on (a registered client) and CORS on: the probes are left alone by both
    security = SecurityConfig(
        clients=[RegisteredClient("alice", token_hash=hash_secret("s", log2_n=4))]
    )
    return create_app(make_card(), agent, store=store, settings=SETTINGS, security=security)


async def probe(client: Any, path: str) -> tuple[int, dict[str, Any], Any]:
    response = await client.get(path)  # no credentials, no A2A-Version
    assert response.content_type == "application/json"
    assert response.headers["Cache-Control"] == "no-store"
    return response.status, await response.json(), response.headers


async def test_both_answer_ok_without_credentials_or_version(client: Any) -> None:
    assert (await probe(client, "/healthz"))[:2] == (200, {"status": "ok"})
    assert (await probe(client, "/readyz"))[:2] == (200, {"status": "ok"})
    refused = await client.post("/", json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks"})
    assert refused.status == 401  # the JSON-RPC endpoint still needs them


async def test_not_ready_while_the_store_is_unavailable(client: Any, store: FaultyStore) -> None:
    store.failing = ALL
    status, body, headers = await probe(client, "/readyz")
    assert (status, body) == (503, {"status": "unavailable", "reason": "STORE_UNAVAILABLE"})
    assert headers["Retry-After"] == "4"
    assert (await probe(client, "/healthz"))[:2] == (200, {"status": "ok"})
    assert store.calls["ping"] == 1  # /healthz never calls the store
    store.failing = frozenset()
    assert (await probe(client, "/readyz"))[0] == 200


async def test_a_stalled_store_is_not_ready_within_the_timeout(
    client: Any, store: FaultyStore
) -> None:
    store.stalling, store.stall_seconds = {"ping"}, None  # ping hangs for ever
    store.stall.clear()
    start = time.monotonic()
    status, body, _ = await probe(client, "/readyz")
    assert (status, body["reason"]) == (503, "STORE_UNAVAILABLE")
    assert time.monotonic() - start < 0.3 + 5  # bounded by readiness_timeout_seconds


async def test_not_ready_once_shutdown_began(client: Any) -> None:
    await client.app.shutdown()
    status, body, headers = await probe(client, "/readyz")
    assert (status, body) == (503, {"status": "unavailable", "reason": "SHUTTING_DOWN"})
    assert headers["Retry-After"] == "4"
    assert (await probe(client, "/healthz"))[0] == 200


async def test_cors_headers_still_apply_to_a_listed_origin(client: Any) -> None:
    response = await client.get("/readyz", headers={"Origin": "https://app.example.com"})
    assert response.status == 200
    assert response.headers["Access-Control-Allow-Origin"] == "https://app.example.com"


def test_rpc_path_cannot_be_a_probe() -> None:
    with pytest.raises(ValueError, match="probe"):
        ServerSettings(rpc_path="/readyz")
