"""What finding the client of a credential costs, counted in scrypt runs (never timed).

The rules (``a2a_wire.server._auth``, "Cost of a lookup"): a credential with a key id costs one
scrypt run whatever the number of clients, and none when no hash has its key id; a plain
credential the server read at start costs none; a verified value is remembered; concurrent first
uses of one value share one run; hashes without a key id cost one run each for a value without
one, and only they do; scrypt runs off the event loop.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from multidict import CIMultiDict

from a2a_wire.server import (
    AuthFailure,
    ClientRegistry,
    Principal,
    RegisteredClient,
    _scrypt,
    generate_token,
    hash_secret,
    verify_secret,
)

FAST = 4  # scrypt cost exponent for tests; the default is 14
WAIT = 30.0  # generous: the machine may be busy


@dataclass
class Counter:
    """Counts the scrypt runs of verifications; can hold them at a gate the test opens."""

    calls: int = 0
    gated: bool = False
    entered: threading.Event = field(default_factory=threading.Event)
    gate: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)


@pytest.fixture
def scrypt_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter]:
    counter = Counter()
    real = _scrypt._scrypt

    def counted(secret: str, salt: bytes, log2_n: int, r: int, p: int, size: int) -> bytes:
        with counter.lock:
            counter.calls += 1
        if counter.gated:
            counter.entered.set()
            assert counter.gate.wait(WAIT), "the test never opened the gate"
        return real(secret, salt, log2_n, r, p, size)

    monkeypatch.setattr(_scrypt, "_scrypt", counted)
    yield counter
    counter.gate.set()  # never leave a worker thread waiting


def bearer(value: str) -> CIMultiDict[str]:
    return CIMultiDict({"Authorization": f"Bearer {value}"})


def with_key_ids(n: int) -> tuple[list[RegisteredClient], list[str]]:
    """``n`` clients whose tokens have key ids, and the tokens."""
    tokens = [generate_token() for _ in range(n)]
    clients = [
        RegisteredClient(f"c{i}", token_hash=hash_secret(token, log2_n=FAST))
        for i, token in enumerate(tokens)
    ]
    return clients, tokens


def without_key_ids(n: int) -> tuple[list[RegisteredClient], list[str]]:
    """``n`` clients whose tokens (of any other form) were hashed without a key id."""
    tokens = [f"legacy-token-{i}" for i in range(n)]
    clients = [
        RegisteredClient(f"old{i}", token_hash=hash_secret(token, log2_n=FAST))
        for i, token in enumerate(tokens)
    ]
    return clients, tokens


# -- the token form and its hash ------------------------------------------------------------------


def test_generated_tokens_carry_a_key_id_into_their_hash() -> None:
    token = generate_token()
    prefix, kid, secret = token.split("_", 2)
    assert prefix == "a2w" and len(kid) == 12 and int(kid, 16) >= 0 and len(secret) >= 43
    hashed = hash_secret(token, log2_n=FAST)
    assert hashed.startswith(f"$scrypt$ln={FAST},r=8,p=1,kid={kid}$")
    assert secret not in hashed
    assert verify_secret(token, hashed)
    assert _scrypt.ScryptHash.parse(hashed).kid == kid
    other = f"a2w_{'0' * 12 if kid != '0' * 12 else '1' * 12}_{secret}"
    assert not verify_secret(other, hashed)  # the key id is part of what is hashed
    assert generate_token() != token


def test_hashes_without_key_id_still_parse() -> None:
    hashed = hash_secret("any old token", log2_n=FAST)
    assert ",kid=" not in hashed
    assert _scrypt.ScryptHash.parse(hashed).kid == ""
    assert _scrypt.key_id("a2w_0123456789AB_x") == ""  # upper case is not a key id
    assert _scrypt.key_id("a2w_0123456789ab_") == ""
    with pytest.raises(ValueError):
        _scrypt.ScryptHash.parse(hashed.replace("p=1$", "p=1,kid=xyz$"))


# -- one scrypt run at most -----------------------------------------------------------------------


@pytest.mark.parametrize("registered", [1, 50])
async def test_a_key_id_costs_one_run_whatever_the_number_of_clients(
    registered: int, scrypt_runs: Counter
) -> None:
    clients, tokens = with_key_ids(registered)
    registry = ClientRegistry(clients)
    scrypt_runs.calls = 0
    assert await registry.authenticate(bearer(tokens[-1])) == Principal(f"c{registered - 1}")
    assert scrypt_runs.calls == 1
    assert await registry.authenticate(bearer(tokens[-1])) == Principal(f"c{registered - 1}")
    assert scrypt_runs.calls == 1  # remembered


async def test_a_wrong_secret_with_a_known_key_id_costs_one_run_each_time(
    scrypt_runs: Counter,
) -> None:
    clients, tokens = with_key_ids(50)
    registry = ClientRegistry(clients)
    scrypt_runs.calls = 0
    wrong = tokens[7][:-4] + "AAAA"
    for attempt in (1, 2):
        failure = await registry.authenticate(bearer(wrong))
        assert isinstance(failure, AuthFailure) and failure.bearer_error == "invalid_token"
        assert scrypt_runs.calls == attempt  # a failure is not remembered


@pytest.mark.parametrize("value", ["a2w_ffffffffffff_nobody-has-this-key-id", "no-key-id-at-all"])
async def test_values_no_hash_can_match_cost_nothing(value: str, scrypt_runs: Counter) -> None:
    clients, _ = with_key_ids(50)
    registry = ClientRegistry(clients)
    scrypt_runs.calls = 0
    assert isinstance(await registry.authenticate(bearer(value)), AuthFailure)
    assert isinstance(await registry.authenticate(CIMultiDict({"X-API-Key": value})), AuthFailure)
    assert scrypt_runs.calls == 0


async def test_only_hashes_without_key_id_are_tried_for_a_value_without_one(
    scrypt_runs: Counter, caplog: pytest.LogCaptureFixture
) -> None:
    new, new_tokens = with_key_ids(50)
    old, old_tokens = without_key_ids(3)
    with caplog.at_level(logging.WARNING, logger="a2a_wire.server"):
        registry = ClientRegistry([*new, *old])
    [warning] = [r.getMessage() for r in caplog.records]
    assert "'old0', 'old1', 'old2'" in warning and "up to 3 scrypt runs" in warning
    assert "--generate" in warning and not any(t in warning for t in old_tokens)
    scrypt_runs.calls = 0
    assert isinstance(await registry.authenticate(bearer("wrong")), AuthFailure)
    assert scrypt_runs.calls == 3  # the three old hashes, none of the fifty new ones
    assert await registry.authenticate(bearer(old_tokens[0])) == Principal("old0")
    assert scrypt_runs.calls == 6  # all three tried even after the first matched
    assert await registry.authenticate(bearer(new_tokens[0])) == Principal("c0")
    assert scrypt_runs.calls == 7


async def test_a_single_hash_without_key_id_is_one_run_and_no_warning(
    scrypt_runs: Counter, caplog: pytest.LogCaptureFixture
) -> None:
    new, _ = with_key_ids(10)
    old, old_tokens = without_key_ids(1)
    with caplog.at_level(logging.WARNING, logger="a2a_wire.server"):
        registry = ClientRegistry([*new, *old])
    assert not caplog.records
    scrypt_runs.calls = 0
    assert await registry.authenticate(bearer(old_tokens[0])) == Principal("old0")
    assert scrypt_runs.calls == 1


async def test_plain_credentials_read_at_start_cost_no_run(scrypt_runs: Counter) -> None:
    plain = [
        RegisteredClient.from_secrets(f"p{i}", token=f"env-token-{i}", log2_n=FAST)
        for i in range(20)
    ]
    keyed = RegisteredClient.from_secrets("k", api_key="env-key", log2_n=FAST)
    assert "env-token-3" not in repr(plain[3]) and "env-key" not in repr(keyed)
    assert verify_secret("env-token-3", plain[3].token_hash)
    registry = ClientRegistry([*plain, keyed])
    scrypt_runs.calls = 0
    assert await registry.authenticate(bearer("env-token-13")) == Principal("p13")
    assert await registry.authenticate(CIMultiDict({"X-API-Key": "env-key"})) == Principal("k")
    assert isinstance(await registry.authenticate(bearer("env-token-99")), AuthFailure)
    assert isinstance(await registry.authenticate(bearer("env-key")), AuthFailure)
    assert scrypt_runs.calls == 0  # known exactly, and no hash is left to try


def test_a_credential_is_either_plain_or_hashed() -> None:
    with pytest.raises(ValueError, match="'x'"):
        RegisteredClient.from_secrets("x", token="t", token_hash=hash_secret("t", log2_n=FAST))
    mixed = RegisteredClient.from_secrets(
        "m", token="t", api_key_hash=hash_secret("k", log2_n=FAST), log2_n=FAST
    )
    assert mixed.token_hash and mixed.api_key_hash


def test_two_hashes_with_one_key_id_are_refused() -> None:
    token = generate_token()
    one = RegisteredClient("one", token_hash=hash_secret(token, log2_n=FAST))
    two = RegisteredClient("two", token_hash=hash_secret(token, log2_n=FAST))
    with pytest.raises(ValueError, match="'one' and 'two'.*same key id"):
        ClientRegistry([one, two])
    assert one.key_ids == {"bearer": token[4:16]}
    # the same key id for two kinds is two different credentials
    both = RegisteredClient("b", token_hash=one.token_hash, api_key_hash=one.token_hash)
    assert ClientRegistry([both]).enabled


# -- single-flight and the event loop -------------------------------------------------------------


async def _until_entered(counter: Counter) -> None:
    assert await asyncio.to_thread(counter.entered.wait, WAIT), "scrypt never started"


@pytest.mark.parametrize("valid", [True, False])
async def test_concurrent_first_uses_share_one_run(valid: bool, scrypt_runs: Counter) -> None:
    clients, tokens = with_key_ids(50)
    registry = ClientRegistry(clients)
    value = tokens[20] if valid else tokens[20][:-4] + "AAAA"
    scrypt_runs.calls, scrypt_runs.gated = 0, True
    calls = [asyncio.create_task(registry.authenticate(bearer(value))) for _ in range(200)]
    await _until_entered(scrypt_runs)
    scrypt_runs.gate.set()
    answers = await asyncio.gather(*calls)
    expected = Principal("c20") if valid else AuthFailure("unknown bearer token", "invalid_token")
    assert answers == [expected] * 200
    assert scrypt_runs.calls == 1


async def test_a_verification_never_blocks_the_event_loop(scrypt_runs: Counter) -> None:
    clients, tokens = with_key_ids(3)
    plain = RegisteredClient.from_secrets("p", token="env-token", log2_n=FAST)
    registry = ClientRegistry([*clients, plain])
    assert await registry.authenticate(bearer(tokens[0])) == Principal("c0")
    scrypt_runs.calls, scrypt_runs.gated = 0, True
    held = asyncio.create_task(registry.authenticate(bearer(tokens[1])))
    await _until_entered(scrypt_runs)
    # scrypt is held in its thread; other requests go on
    assert await registry.authenticate(bearer(tokens[0])) == Principal("c0")
    assert await registry.authenticate(bearer("env-token")) == Principal("p")
    assert not held.done()
    scrypt_runs.gate.set()
    assert await held == Principal("c1")
    assert scrypt_runs.calls == 1


async def test_a_caller_going_away_does_not_cancel_the_shared_run(scrypt_runs: Counter) -> None:
    clients, tokens = with_key_ids(5)
    registry = ClientRegistry(clients)
    scrypt_runs.calls, scrypt_runs.gated = 0, True
    first = asyncio.create_task(registry.authenticate(bearer(tokens[2])))
    second = asyncio.create_task(registry.authenticate(bearer(tokens[2])))
    await _until_entered(scrypt_runs)
    first.cancel()
    scrypt_runs.gate.set()
    assert await second == Principal("c2")
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await registry.authenticate(bearer(tokens[2])) == Principal("c2")
    assert scrypt_runs.calls == 1


async def test_a_verification_cancelled_before_it_ran_is_not_reused(scrypt_runs: Counter) -> None:
    clients, tokens = with_key_ids(3)
    registry = ClientRegistry(clients)
    scrypt_runs.calls = 0
    first = asyncio.create_task(registry.authenticate(bearer(tokens[0])))
    pending = registry._keyring._pending
    for _ in range(100):  # scheduling steps, not time: until the first caller waits
        if pending:
            break
        await asyncio.sleep(0)
    [verification] = pending.values()
    verification.cancel()  # e.g. the loop shutting down
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await registry.authenticate(bearer(tokens[0])) == Principal("c0")
    assert scrypt_runs.calls == 1 and not pending


# -- secrets and constant time --------------------------------------------------------------------


async def test_only_keyed_tags_of_values_are_kept(scrypt_runs: Counter) -> None:
    clients, tokens = with_key_ids(2)
    plain = RegisteredClient.from_secrets("p", token="env-token", log2_n=FAST)
    registry = ClientRegistry([*clients, plain])
    await registry.authenticate(bearer(tokens[0]))
    keyring = registry._keyring
    kept = [*keyring._known, *keyring._pins, *plain._pins.values()]
    assert kept and all(isinstance(k, bytes) and len(k) == 32 for k in kept)
    assert not any(tokens[0].encode() in k or b"env-token" in k for k in kept)


async def test_verifications_compare_in_constant_time(
    scrypt_runs: Counter, monkeypatch: pytest.MonkeyPatch
) -> None:
    clients, tokens = with_key_ids(2)
    old, old_tokens = without_key_ids(2)
    registry = ClientRegistry([*clients, *old])
    scrypt_runs.calls = 0
    compared: list[int] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append(1)
        return real(a, b)

    monkeypatch.setattr(_scrypt.hmac, "compare_digest", spy)
    assert await registry.authenticate(bearer(tokens[1])) == Principal("c1")
    assert await registry.authenticate(bearer(old_tokens[1])) == Principal("old1")
    assert len(compared) == 3 == scrypt_runs.calls
