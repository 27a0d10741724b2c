"""Fixtures of the inspector's tests: Debian's headless Chromium driven by Playwright for Python,
one ``a2a-wire serve`` with the test agents (tests/inspector_agents.py), a small
server of hand-made cards, an OAuth 2.0 provider (tests/oauth_provider.py) and an agent that
trusts it, and an ``a2a-wire inspect`` process per test.

Where Chromium or Playwright is missing, every browser test is skipped for the same reason, at
the same place, so the summary shows one line saying how to install them. With
``A2A_WIRE_REQUIRE_BROWSER=1`` (``.ci/run`` sets it) they fail instead. Playwright's own browser
downloads are never used: the browser is ``/usr/bin/chromium`` (or ``$A2A_WIRE_CHROMIUM``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_support import ServerProcess, environment, free_port, write_config
from inspector_support import (
    AGENT_TOKEN,
    API_KEY,
    CLIENT_ID,
    CLIENT_SECRET,
    Background,
    CardServer,
    Inspector,
    broken_card,
    signed_cards,
)
from oauth_provider import AUDIENCE, Provider

CHROMIUM = Path(os.environ.get("A2A_WIRE_CHROMIUM") or "/usr/bin/chromium")
REQUIRE = "A2A_WIRE_REQUIRE_BROWSER"
HOW = (
    "install them with `apt-get install chromium` and `pip install -e '.[test]'` "
    "(Playwright for Python; its own browser download is not needed)"
)

CONFIG = """
[server]
host = "127.0.0.1"
port = {port}
storage = "memory"
shutdown_grace_seconds = 1.0

[limits]
stream_queue_size = 30000    # the 10,000-event stream must not drop its reader

[card]
name = "inspector test agent"
description = "The agents of the inspector's browser tests"

[push]
allow_http = true
allow = ["127.0.0.1"]
backoff_base_seconds = 0.1

[[clients]]
id = "tester"
token_env = "INSPECT_AGENT_TOKEN"

[security]
extended_card = true

[[skills]]
executor = "echo"
default = true
options = {{ chunk_size = 4, chunk_delay_seconds = 0.01 }}

[[skills]]
id = "ask"
name = "Ask"
description = "Asks for a name, then greets"
tags = ["test"]
executor = "inspector_agents:Ask"

[[skills]]
id = "interview"
name = "Interview"
description = "Asks for a name, then for a sign-in, then welcomes"
tags = ["test"]
executor = "inspector_agents:Interview"

[[skills]]
id = "steps"
name = "Steps"
description = "One artifact chunk per word, each after its gate"
tags = ["test"]
executor = "inspector_agents:Steps"
options = {{ gate_dir = "{gates}" }}

[[skills]]
id = "hold"
name = "Hold"
description = "Works until released or canceled"
tags = ["test"]
executor = "inspector_agents:Hold"
options = {{ gate_dir = "{gates}" }}

[[skills]]
id = "flood"
name = "Flood"
description = "Ten thousand artifact chunks"
tags = ["test"]
executor = "inspector_agents:Flood"

[[skills]]
id = "backstage"
name = "Backstage"
description = "Only on the extended card"
tags = ["test"]
executor = "echo"
public = false
"""


GUARDED = """
[server]
host = "127.0.0.1"
port = {port}
storage = "memory"
shutdown_grace_seconds = 1.0

[card]
name = "guarded agent"
description = "Trusts one OAuth 2.0 provider, and one API key"

[[clients]]
id = "keyed"
api_key_env = "INSPECT_AGENT_KEY"

[[security.oauth2]]
issuer = "{issuer}"
audience = "{audience}"
required_scopes = ["a2a"]
token_url = "{token_url}"

[security.tokens]
allow_http = true
allow = ["127.0.0.1"]

[[skills]]
executor = "echo"
default = true
"""


def _missing() -> str:
    if importlib.util.find_spec("playwright") is None:
        return "Playwright for Python is not installed"
    if not (CHROMIUM.is_file() or shutil.which(str(CHROMIUM))):
        return f"no Chromium at {CHROMIUM}"
    return ""


def _reason() -> str:
    missing = _missing()
    return f"browser tests need Chromium and Playwright ({missing}): {HOW}" if missing else ""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the browser tests skipped when the browser is missing (and not required).

    A skip *mark* is what pytest folds into one summary line per file (a skip raised by a
    fixture is reported once per test).
    """
    reason = _reason()
    if not reason or os.environ.get(REQUIRE):
        return
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium; fails when it is missing but required (see the module docstring)."""
    reason = _reason()
    if reason:
        pytest.fail(f"{reason}; {REQUIRE} is set, so this fails", pytrace=False)
    from playwright.sync_api import sync_playwright

    args = ["--no-sandbox"] if os.geteuid() == 0 else []  # Chromium refuses root otherwise
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=args)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page; a JavaScript error on it fails the test."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    new = context.new_page()
    new.set_default_timeout(30_000)
    errors: list[str] = []
    new.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield new
    finally:
        context.close()
    assert not errors, errors


@pytest.fixture(scope="module")
def gates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the agents' gate files."""
    return tmp_path_factory.mktemp("gates")


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory, gates: Path) -> Iterator[ServerProcess]:
    """``a2a-wire serve`` with the test agents, stopped at the end of the module."""
    folder = tmp_path_factory.mktemp("agent")
    port = free_port()
    config = write_config(folder / "serve.toml", CONFIG, port=port, gates=gates)
    env = environment(INSPECT_AGENT_TOKEN=AGENT_TOKEN)
    server = ServerProcess(["--config", str(config)], folder / "serve.log", port, env)
    try:
        yield server.start()
    finally:
        server.close()


@pytest.fixture(scope="module")
def cards(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CardServer]:
    """Hand-made cards: ``/broken``, ``/signed`` and ``/tampered`` (their keys in ``keys``)."""
    keys = tmp_path_factory.mktemp("keys") / "jwks.json"
    server = CardServer()
    server.documents["/broken"] = broken_card()
    good, tampered, jwks = signed_cards(server.url)
    server.documents["/signed"] = good
    server.documents["/tampered"] = tampered
    keys.write_text(jwks, encoding="utf-8")
    server.keys = keys
    try:
        yield server.start()
    finally:
        server.close()


@pytest.fixture(scope="module")
def background() -> Iterator[Background]:
    """An event loop in a thread for the servers the tests run in their own process."""
    loop = Background()
    try:
        yield loop
    finally:
        loop.close()


@pytest.fixture(scope="module")
def provider(background: Background) -> Iterator[Provider]:
    """The loopback OAuth 2.0 provider, with the client ``CLIENT_ID``/``CLIENT_SECRET``."""
    started = background.run(Provider(token_seconds=600).start())
    started.add_client(CLIENT_ID, CLIENT_SECRET, "a2a")
    try:
        yield started
    finally:
        background.run(started.stop())


@pytest.fixture(scope="module")
def guarded(
    tmp_path_factory: pytest.TempPathFactory, provider: Provider
) -> Iterator[ServerProcess]:
    """``a2a-wire serve`` that takes the provider's tokens or the key ``API_KEY``, nothing else."""
    folder = tmp_path_factory.mktemp("guarded")
    port = free_port()
    config = write_config(
        folder / "serve.toml",
        GUARDED,
        port=port,
        issuer=provider.issuer,
        audience=AUDIENCE,
        token_url=provider.token_url,
    )
    env = environment(INSPECT_AGENT_KEY=API_KEY)
    server = ServerProcess(["--config", str(config)], folder / "serve.log", port, env)
    try:
        yield server.start()
    finally:
        server.close()


@pytest.fixture
def bare() -> Iterator[Inspector]:
    """``a2a-wire inspect`` without a credential of its own."""
    started = Inspector([], token="").start()
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def inspector(agent: ServerProcess, cards: CardServer) -> Iterator[Inspector]:
    """``a2a-wire inspect`` with the agent's credential and the cards' trusted keys."""
    started = Inspector(["--card-keys", str(cards.keys)]).start()
    try:
        yield started
    finally:
        started.close()
