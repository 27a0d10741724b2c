"""The cost of authentication over real HTTP, the configuration and the CLI, in scrypt runs.

The unit rules are in tests/runtime/test_auth_cost.py; here the same counts hold through the
app: many clients and many concurrent first requests cost one run per distinct credential,
failures stay rate-limited per source, credentials read at start cost none, and
``a2a-wire hash-secret --generate`` makes credentials with a key id.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_support import cli
from server_support import ScriptedAgent, envelope, make_card, post

from a2a_wire.cli._app import build_app
from a2a_wire.cli.config import ConfigError, load
from a2a_wire.server import (
    RegisteredClient,
    SecurityConfig,
    ServerSettings,
    _scrypt,
    create_app,
    generate_token,
    hash_secret,
    verify_secret,
)

FAST = 4


class Runs:
    """The number of scrypt runs since the last :meth:`reset`."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()

    def add(self) -> None:
        with self._lock:
            self.calls += 1

    def reset(self) -> None:
        with self._lock:
            self.calls = 0


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Runs]:
    counter = Runs()
    real = _scrypt._scrypt

    def counted(secret: str, salt: bytes, log2_n: int, r: int, p: int, size: int) -> bytes:
        counter.add()
        return real(secret, salt, log2_n, r, p, size)

    monkeypatch.setattr(_scrypt, "_scrypt", counted)
    yield counter


def registered(n: int) -> tuple[list[RegisteredClient], list[str]]:
    tokens = [generate_token() for _ in range(n)]
    clients = [
        RegisteredClient(f"c{i}", token_hash=hash_secret(t, log2_n=FAST))
        for i, t in enumerate(tokens)
    ]
    return clients, tokens


async def get_task(client: Any, token: str) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    response = await post(client, envelope("GetTask", {"id": "no-such-task"}), headers=headers)
    return response.status, (await response.json()).get("error", {}).get("code")


async def test_many_concurrent_first_requests_cost_one_run_per_credential(
    aiohttp_client: Any, runs: Runs
) -> None:
    clients, tokens = registered(50)
    settings = ServerSettings(requests_per_second=10_000, request_burst=10_000)
    app = create_app(
        make_card(), ScriptedAgent(), settings=settings, security=SecurityConfig(clients=clients)
    )
    client = await aiohttp_client(app)
    runs.reset()
    one = await asyncio.gather(*(get_task(client, tokens[49]) for _ in range(100)))
    assert one == [(200, -32001)] * 100  # authenticated: the task is simply unknown
    assert runs.calls == 1
    spread = await asyncio.gather(*(get_task(client, tokens[i % 50]) for i in range(200)))
    assert spread == [(200, -32001)] * 200
    assert runs.calls == 50  # one run for each of the 49 others, none for the one known


async def test_wrong_tokens_stay_rate_limited_per_source(aiohttp_client: Any, runs: Runs) -> None:
    clients, tokens = registered(50)
    settings = ServerSettings(auth_failures_per_minute=3)
    app = create_app(
        make_card(), ScriptedAgent(), settings=settings, security=SecurityConfig(clients=clients)
    )
    client = await aiohttp_client(app)
    runs.reset()
    for attempt in (1, 2, 3):
        status, _ = await get_task(client, tokens[3][:-4] + f"WRG{attempt}")
        assert status == 401
        assert runs.calls == attempt  # one run each: the key id picks the hash
    status, _ = await get_task(client, tokens[3])  # even the good token now
    assert status == 429
    assert runs.calls == 3  # refused before its credential is looked at


CONFIG = """\
[server]
storage = "memory"

[[skills]]
executor = "echo"
"""


def client_table(client_id: str, line: str) -> str:
    return f'\n[[clients]]\nid = "{client_id}"\n{line}\n'


async def test_credentials_read_at_start_cost_no_run(
    aiohttp_client: Any, runs: Runs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bob.key").write_text("bob-key-from-a-file\n", encoding="utf-8")
    monkeypatch.setenv("ALICE_TOKEN", "alice-token-from-the-environment")
    text = CONFIG + client_table("alice", 'token_env = "ALICE_TOKEN"')
    text += client_table("bob", 'api_key_file = "bob.key"')
    (tmp_path / "serve.toml").write_text(text, encoding="utf-8")
    app, _ = build_app(load(tmp_path / "serve.toml", data_dir=str(tmp_path)))
    client = await aiohttp_client(app)
    runs.reset()
    assert await get_task(client, "alice-token-from-the-environment") == (200, -32001)
    headers = {"X-API-Key": "bob-key-from-a-file"}
    response = await post(client, envelope("GetTask", {"id": "x"}), headers=headers)
    assert response.status == 200
    assert (await get_task(client, "someone-else"))[0] == 401
    assert runs.calls == 0


def test_a_key_id_used_twice_is_a_configuration_problem(tmp_path: Path) -> None:
    hashed = hash_secret(generate_token(), log2_n=FAST)
    text = CONFIG + client_table("one", f'token_hash = "{hashed}"')
    text += client_table("two", f'token_hash = "{hashed}"')
    path = tmp_path / "serve.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load(path, data_dir=str(tmp_path))
    assert str(info.value).splitlines() == [
        f"{path}:11: clients[1]: has the same bearer key id as client 'one'; make a new one"
    ]


def test_hash_secret_generates_a_credential_with_a_key_id() -> None:
    done = cli("hash-secret", "--generate")
    assert done.returncode == 0, done.stderr
    token, hashed = done.stdout.splitlines()
    assert token.startswith("a2w_") and f",kid={token[4:16]}$" in hashed
    assert hashed.startswith("$scrypt$ln=14,")  # the default cost, not the tests'
    assert verify_secret(token, hashed)
    assert "line 1" in done.stderr and token not in done.stderr
