"""Shared test configuration: Hypothesis profiles, and the app the server and functional tests serve.

Profiles: ``dev`` (default) explores with fresh random examples; ``ci`` (selected when the ``CI``
environment variable is set, or with ``HYPOTHESIS_PROFILE=ci``) is derandomized so that a failure
reproduces exactly, has no deadline (shared runners are slow) and prints the reproduction blob.
``thorough`` (``HYPOTHESIS_PROFILE=thorough``) is for hunting bugs locally.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from aiohttp import web
from hypothesis import HealthCheck, settings
from server_support import ScriptedAgent, make_card

from a2a_wire.server import create_app

settings.register_profile(
    "dev",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "ci",
    max_examples=50,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("thorough", parent=settings.get_profile("dev"), max_examples=2000)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Options of this suite (declared here, at the root, so they parse for any selection)."""
    parser.addoption(
        "--write-interop-table",
        action="store_true",
        help="write docs/interop.md from the interop tests' outcomes (make interop-table)",
    )


@pytest.fixture(autouse=True)
def _fresh_shared_card_cache() -> Iterator[None]:
    """Tests reuse ports, so a card cached by URL in one test must not leak into the next."""
    from a2a_wire.client._client import SHARED_CARD_CACHE

    SHARED_CARD_CACHE.clear()
    yield
    SHARED_CARD_CACHE.clear()


@pytest.fixture
def agent() -> ScriptedAgent:
    """The executor of ``app``, a fresh :class:`ScriptedAgent` (tests/client/ overrides ``agent``
    with the fake HTTP agent its client talks to)."""
    return ScriptedAgent()


@pytest.fixture
def app(agent: ScriptedAgent) -> web.Application:
    """The server under test: ``agent`` behind the default card and settings. A module that needs
    other settings, a security config or another executor overrides this fixture."""
    return create_app(make_card(), agent)
