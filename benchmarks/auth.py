"""Authentication cost: concurrent first requests of registered clients, in time and scrypt runs.

Each cell starts a fresh server process (``a2a_wire.server.create_app``, in-memory store) on
127.0.0.1 with ``--clients`` registered clients (default 50) whose bearer tokens it has never seen,
opens ``--requests`` keep-alive connections (default 600) by reading the public card, then sends
one GetTask per connection, all at once, and measures each from just before it is written to the
end of its answer. Every answer must be HTTP 200 with the JSON-RPC error -32001 (the task id is
made up): the caller was authenticated, and nothing else was done. The server counts its scrypt
runs (an instrumented ``a2a_wire.server._scrypt._scrypt``) and reports them at the end.

Ways, each on its own server:

``key ids``
    tokens from ``generate_token`` (``a2a-wire hash-secret --generate``): one scrypt run per
    distinct token, whatever the number of clients.
``no key ids``
    the same code with tokens of another form (hashes as made before key ids): concurrent uses
    of one token share one verification, but each distinct token is tried against every hash
    (the trade-off documented in ``a2a_wire.server._auth``).
``before``
    the reference, the lookup as it was before this benchmark existed, replayed here: on a
    miss, every client's hash in a worker thread, and concurrent misses are not merged. Its cost
    is requests x clients scrypt runs, so it gets only ``--before-requests`` requests (default
    20); the runs for the full count are printed beside it.

Scenarios: ``one token`` (every request carries the same token, as in the issue's report) and
``every token`` (the requests are spread over all clients' tokens). The server's request rate
limit is raised out of the way; the failure limit plays no part (every token is valid).

Run: ``.venv/bin/python benchmarks/auth.py`` (2 to 5 minutes on 2 CPUs, most of it in the slow
``no key ids`` and ``before`` cells) or ``--quick``.
The issue's target: p99 under 1 s with 50 clients and 600 concurrent first requests.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import logging
import os
import platform
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from _pg import free_port, stop, wait_port

HOST = "127.0.0.1"
HERE = Path(__file__).resolve().parent
RUNS_PATH = "/_bench/scrypt-runs"
HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}
WAYS = ("key ids", "no key ids", "before")
SCENARIOS = ("one token", "every token")


# --- the server process --------------------------------------------------------------------------


def before_registry(clients: Any) -> Any:
    """A registry that looks credentials up as a2a_wire did before key ids (module docstring)."""
    from a2a_wire.server import ANONYMOUS, AuthFailure, ClientRegistry, Principal

    class BeforeRegistry(ClientRegistry):
        def __init__(self, clients: Any) -> None:
            super().__init__(clients)
            self._before_key = secrets.token_bytes(32)
            self._before_known: dict[bytes, str] = {}

        def _search(self, kind: Any, value: str) -> str:
            found = ""
            for client in self.clients.values():
                hashed = client._hashes.get(kind)
                if hashed is not None and hashed.matches(value) and not found:
                    found = client.id
            return found

        async def authenticate(self, headers: Mapping[str, str]) -> Any:
            if not self.enabled:
                return ANONYMOUS
            credential = self.presented(headers)
            if isinstance(credential, AuthFailure):
                return credential
            kind, value = credential
            tag = hmac.new(self._before_key, f"{kind}\0{value}".encode(), hashlib.sha256).digest()
            client_id = self._before_known.get(tag)
            if client_id is None:
                client_id = await asyncio.to_thread(self._search, kind, value)
                if not client_id:
                    return AuthFailure("unknown bearer token", "invalid_token")
                self._before_known[tag] = client_id
            return Principal(client_id, self.clients[client_id].permitted)

    return BeforeRegistry(clients)


def _count_scrypt_runs() -> list[int]:
    """Instrument ``a2a_wire.server._scrypt._scrypt``; the one-item list holds the count."""
    import threading

    from a2a_wire.server import _scrypt

    runs = [0]
    lock = threading.Lock()
    real = _scrypt._scrypt

    def counted(secret: str, salt: bytes, log2_n: int, r: int, p: int, size: int) -> bytes:
        with lock:
            runs[0] += 1
        return real(secret, salt, log2_n, r, p, size)

    _scrypt._scrypt = counted  # type: ignore[assignment]
    return runs


def _card() -> Any:
    from a2a_wire.types import AgentCapabilities, AgentCard, AgentSkill

    skill = AgentSkill(id="none", name="none", description="never used", tags=["bench"])
    return AgentCard(
        name="auth-bench",
        description="authentication benchmark",
        version="1.0.0",
        capabilities=AgentCapabilities(),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[skill],
    )


def serve(way: str, port: int, hashes_file: Path) -> None:
    """The server of one cell (``--serve``): the clients of ``hashes_file``, runs counted."""
    from aiohttp import web

    from a2a_wire.server import (
        AgentExecutor,
        EventQueue,
        RegisteredClient,
        RequestContext,
        SecurityConfig,
        ServerSettings,
        create_app,
    )

    logging.getLogger("a2a_wire.server").setLevel(logging.ERROR)  # the warning about no key ids
    runs = _count_scrypt_runs()

    class NoAgent(AgentExecutor):
        async def execute(self, context: RequestContext, events: EventQueue) -> None:
            raise RuntimeError("GetTask never runs the agent")

    class Security(SecurityConfig):
        def registry(self) -> Any:
            return before_registry(self.clients) if way == "before" else super().registry()

    hashes = json.loads(hashes_file.read_text())
    clients = [RegisteredClient(f"c{i}", token_hash=h) for i, h in enumerate(hashes)]
    settings = ServerSettings(requests_per_second=1e6, request_burst=1_000_000)
    app = create_app(_card(), NoAgent(), settings=settings, security=Security(clients=clients))

    async def scrypt_runs(_request: web.Request) -> web.Response:
        return web.json_response({"runs": runs[0]})

    app.router.add_get(RUNS_PATH, scrypt_runs)
    web.run_app(app, host=HOST, port=port, access_log=None, print=None, backlog=4096)


# --- the load ------------------------------------------------------------------------------------


@dataclass
class Cell:
    way: str
    scenario: str
    requests: int
    runs: int
    latencies: list[float]
    wall: float


@contextmanager
def running(way: str, hashes: list[str]) -> Iterator[str]:
    """A fresh server for one cell; its base URL. Always stopped on exit."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="a2a-auth-bench-") as tmp:
        hashes_file = Path(tmp, "hashes.json")
        hashes_file.write_text(json.dumps(hashes))
        cmd = [sys.executable, __file__, "--serve", way, "--port", str(port)]
        cmd += ["--hashes", str(hashes_file)]
        process = subprocess.Popen(cmd, cwd=HERE.parent, stdin=subprocess.DEVNULL)
        try:
            wait_port(process, port, 60.0)
            yield f"http://{HOST}:{port}"
        finally:
            stop(process)


async def _get_task(session: aiohttp.ClientSession, url: str, token: str, rid: int) -> float:
    body = {"jsonrpc": "2.0", "id": rid, "method": "GetTask", "params": {"id": "no-such-task"}}
    headers = {**HEADERS, "Authorization": f"Bearer {token}"}
    start = time.perf_counter()
    async with session.post(url + "/", json=body, headers=headers) as response:
        answer = await response.json(content_type=None)
    elapsed = time.perf_counter() - start
    code = answer.get("error", {}).get("code") if isinstance(answer, dict) else None
    if response.status != 200 or code != -32001:
        raise RuntimeError(f"request {rid}: HTTP {response.status}, answer {answer!r:.200}")
    return elapsed


async def burst(url: str, tokens: list[str]) -> tuple[list[float], float, int]:
    """Open one connection per token, then send all GetTask calls at once."""
    connector = aiohttp.TCPConnector(limit=len(tokens))
    timeout = aiohttp.ClientTimeout(total=3600)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def card() -> None:
            async with session.get(url + "/.well-known/agent-card.json") as response:
                await response.read()

        await asyncio.gather(*(card() for _ in tokens))  # connections open, nothing cached
        start = time.perf_counter()
        latencies = await asyncio.gather(
            *(_get_task(session, url, token, i) for i, token in enumerate(tokens))
        )
        wall = time.perf_counter() - start
        async with session.get(url + RUNS_PATH) as response:
            runs = int((await response.json())["runs"])
    return sorted(latencies), wall, runs


def measure(way: str, scenario: str, tokens: list[str], hashes: list[str], n: int) -> Cell:
    """One cell on a fresh server: ``n`` requests with one token or spread over all."""
    if scenario == "one token":
        sent = [tokens[-1]] * n
    else:
        sent = [tokens[i % len(tokens)] for i in range(n)]
    with running(way, hashes) as url:
        latencies, wall, runs = asyncio.run(burst(url, sent))
    return Cell(way, scenario, n, runs, latencies, wall)


# --- report --------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, max(0, round(q * len(values)) - 1))]


def scrypt_ms(log2_n: int) -> float:
    import a2a_wire.server._scrypt as s

    start = time.perf_counter()
    for _ in range(5):
        s._scrypt("x", b"0" * 16, log2_n, 8, 1, 32)
    return (time.perf_counter() - start) / 5 * 1000


def report(cells: list[Cell], clients: int, requests: int, one_run_ms: float) -> None:
    print(
        f"{'scenario':<12} {'way':<11} {'requests':>8} {'scrypt runs':>11} "
        f"{'p50 ms':>9} {'p99 ms':>9} {'max ms':>9} {'wall s':>7}"
    )
    for c in cells:
        p50, p99 = percentile(c.latencies, 0.5) * 1000, percentile(c.latencies, 0.99) * 1000
        print(
            f"{c.scenario:<12} {c.way:<11} {c.requests:>8} {c.runs:>11,} "
            f"{p50:>9.1f} {p99:>9.1f} {c.latencies[-1] * 1000:>9.1f} {c.wall:>7.2f}"
        )
        if c.way == "before" and c.requests != requests:
            print(
                f"{'':<12} {'':<11} {requests:>8} {requests * clients:>11,}   "
                "(scrypt runs the full burst would take: requests x clients)"
            )
    print(f"\ntarget: p99 under 1 s, {clients} clients, {requests} concurrent first requests")
    cpus = os.cpu_count() or 1
    for c in cells:
        if c.way != "key ids":
            continue
        p99 = percentile(c.latencies, 0.99) * 1000
        floor = -(-c.runs // cpus) * one_run_ms  # runs in parallel on every CPU, nothing else
        verdict = "met" if p99 < 1000 else "not met"
        print(
            f"  {c.scenario + ', key ids:':<22} p99 {p99:,.0f} ms with {c.runs} scrypt run(s): "
            f"{verdict} (those runs alone take at least {floor:,.0f} ms on {cpus} CPUs)"
        )


def _load_average() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--before-requests", type=int, default=20)
    parser.add_argument("--log2-n", type=int, default=14, help="scrypt cost exponent (14)")
    parser.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS))
    parser.add_argument("--quick", action="store_true", help="5 clients, 60 requests, ln=10")
    parser.add_argument("--serve", choices=WAYS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--hashes", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.clients, args.requests, args.before_requests, args.log2_n = 5, 60, 5, 10
    return args


def main() -> int:
    args = parse_args()
    if args.serve:
        serve(args.serve, args.port, args.hashes)
        return 0
    from a2a_wire.server import generate_token, hash_secret

    now, before = time.strftime("%Y-%m-%d %H:%M:%S %Z"), _load_average()
    print(f"date:     {now}")
    print(f"machine:  {platform.platform()}, {platform.machine()}, {os.cpu_count()} CPUs")
    print(f"python:   {platform.python_implementation()} {platform.python_version()}")
    one_run = scrypt_ms(args.log2_n)
    print(f"scrypt:   ln={args.log2_n},r=8,p=1, one run {one_run:.1f} ms here")
    print(
        f"load:     {args.clients} registered clients, {args.requests} concurrent first "
        "GetTask calls over HTTP on 127.0.0.1, one keep-alive connection each\n"
    )
    keyed = [generate_token() for _ in range(args.clients)]
    plain = [f"plain-token-{i}-{secrets.token_urlsafe(16)}" for i in range(args.clients)]
    hashes = {
        "key ids": [hash_secret(t, log2_n=args.log2_n) for t in keyed],
        "no key ids": [hash_secret(t, log2_n=args.log2_n) for t in plain],
    }
    hashes["before"] = hashes["no key ids"]
    cells = []
    for scenario in SCENARIOS:
        for way in args.ways:
            tokens = keyed if way == "key ids" else plain
            n = args.before_requests if way == "before" else args.requests
            cells.append(measure(way, scenario, tokens, hashes[way], n))
    report(cells, args.clients, args.requests, one_run)
    print(
        f"\nload average (1 min) of the machine: {before} at the start, {_load_average()} at the end"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
