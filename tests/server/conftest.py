"""Fixtures of the server tests: the app under test (``app``, see tests/conftest.py) driven in
process through aiohttp's test client on 127.0.0.1, and a count of JWT signature checks."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web
from store_support import store_kind  # noqa: F401  (each test of ``app`` on every server store)


@pytest.fixture
async def client(aiohttp_client: Any, app: web.Application) -> Any:
    """aiohttp's test client of ``app``; raw JSON-RPC goes through ``server_support``."""
    return await aiohttp_client(app)


@pytest.fixture
def signature_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Counts jwcrypto's signature checks (the algorithm of each)."""
    from jwcrypto import jws

    checks: list[str] = []
    original = jws.JWS.verify

    def counted(self: Any, key: Any, alg: Any = None, detached_payload: Any = None) -> None:
        checks.append(alg)
        original(self, key, alg, detached_payload)

    monkeypatch.setattr(jws.JWS, "verify", counted)
    return checks
