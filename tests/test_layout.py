"""Client and server share the protocol core and nothing else; each imports without the other."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SHARED = {
    "a2a_wire",
    "a2a_wire._generated",
    "a2a_wire._generated._support",
    "a2a_wire._generated.methods",
    "a2a_wire._generated.types",
    "a2a_wire._protocol",
    "a2a_wire._protocol.jsonrpc",
    "a2a_wire._protocol.sse",
    "a2a_wire._protocol.states",
    "a2a_wire._protocol.wire",
    "a2a_wire.codec",
    "a2a_wire.errors",
    "a2a_wire.methods",
    "a2a_wire.types",
    # The address guard is shared on purpose: the client and push delivery refuse the same ranges.
    "a2a_wire.netguard",
}


def _loaded(module: str) -> set[str]:
    code = (
        f"import json, sys, {module}; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('a2a_wire'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


@pytest.fixture(scope="module")
def client_modules() -> set[str]:
    return _loaded("a2a_wire.client")


@pytest.fixture(scope="module")
def server_modules() -> set[str]:
    return _loaded("a2a_wire.server")


def test_roles_share_only_the_protocol_core(
    client_modules: set[str], server_modules: set[str]
) -> None:
    assert client_modules & server_modules <= SHARED


def test_client_does_not_load_server_modules(client_modules: set[str]) -> None:
    assert not {m for m in client_modules if m.startswith("a2a_wire.server")}
    assert "a2a_wire._protocol.tasks" not in client_modules


def test_server_does_not_load_client_modules(server_modules: set[str]) -> None:
    assert not {m for m in server_modules if m.startswith("a2a_wire.client")}


def test_package_import_loads_neither_role() -> None:
    assert _loaded("a2a_wire") == {"a2a_wire"}
