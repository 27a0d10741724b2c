"""SIGKILL of the process delivering a push notification: another process delivers the rest.

Two ``a2a-wire serve`` processes share one PostgreSQL schema (a short ``[postgresql]
lease_seconds``, so claims of a dead process expire soon) and deliver to one webhook on
127.0.0.1, served by this test. Tasks are sent to both, each with an inline push config. The
webhook holds the first request it gets and never answers it; the process that sent it (found
by the request's source port, through ``/proc``) is killed with SIGKILL while its POST is open.
Then the other process must claim the held row once the claim expired, deliver it again with
the same delivery id, and deliver everything after it: every notification of every task reaches
the webhook at least once, and in the order of the task's events (a repeat can only follow the
delivery it repeats). Tasks sent after the kill are delivered too.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from e2e_support import ServerProcess, environment, free_port, write_config
from push_support import kind, task_of, wait_until
from server_support import result, send_params

from a2a_wire import codec
from a2a_wire.types import StreamResponse

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(180),
    pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc"),
]

CONFIG = """
[server]
port = {port}
storage = "postgresql"
data_dir = "{data}"
log_level = "warning"

[postgresql]
dsn_env = "TEST_TASKS_DSN"
schema = "{schema}"
lease_seconds = 5.0
heartbeat_seconds = 0.5

[push]
allow_http = true
allow = ["127.0.0.1"]
backoff_base_seconds = 0.05
backoff_cap_seconds = 1.0
poll_seconds = 0.2

[[skills]]
executor = "echo"
options = {{ chunk_size = 8, chunk_delay_seconds = 0 }}
"""

TEXT = "twenty-four characters!!"  # three chunks of 8
EXPECTED = ["task:TASK_STATE_SUBMITTED", "status:TASK_STATE_WORKING"]
EXPECTED += ["artifact"] * 3 + ["status:TASK_STATE_COMPLETED"]
BEFORE, AFTER = 8, 4  # tasks sent before and after the kill


class Webhook:
    """Answers 200 to every request but the first, which it holds until the test ends."""

    def __init__(self) -> None:
        self.answered: list[tuple[str, str, str]] = []  # (task id, delivery id, kind)
        self.held: tuple[str, int] | None = None  # (delivery id, source port)
        self.hit = asyncio.Event()
        self.gate = asyncio.Event()
        self.app = web.Application()
        self.app.router.add_post("/webhook", self.handle)

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        delivery_id = request.headers["X-A2A-Delivery-Id"]
        if self.held is None:
            peer = request.transport.get_extra_info("peername") if request.transport else None
            assert peer is not None
            self.held = (delivery_id, int(peer[1]))
            self.hit.set()
            await self.gate.wait()  # the sender dies first; then this connection just closes
        event = codec.decode(StreamResponse, body)
        self.answered.append((task_of(event), delivery_id, kind(event)))
        return web.Response()


def owner_of_port(port: int, pids: list[int]) -> int:
    """The process among ``pids`` whose TCP socket has local port ``port`` (from ``/proc``)."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].rsplit(":", 1)[1], 16) == port:
            inodes.add(fields[9])
    for pid in pids:
        fd_dir = Path(f"/proc/{pid}/fd")
        for fd in fd_dir.iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                return pid
    raise AssertionError(f"no server process holds port {port}")


@pytest.fixture
async def webhook(aiohttp_server: Any) -> AsyncIterator[tuple[Webhook, str]]:
    hook = Webhook()
    server = await aiohttp_server(hook.app)
    try:
        yield hook, str(server.make_url("/webhook"))
    finally:
        hook.gate.set()


async def send_tasks(url: str, hook_url: str, count: int) -> list[str]:
    inline = {"taskPushNotificationConfig": {"url": hook_url}}
    async with aiohttp.ClientSession(base_url=url) as session:
        tasks = [result(session, "SendMessage", send_params(TEXT, inline)) for _ in range(count)]
        answers = await asyncio.gather(*tasks)
    for answer in answers:
        assert answer["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    return [str(answer["task"]["id"]) for answer in answers]


def collapse(seen: list[tuple[str, str, str]], task_id: str) -> list[tuple[str, str]]:
    """A task's answered deliveries, in order, with each immediate repeat dropped."""
    out: list[tuple[str, str]] = []
    for owner, delivery_id, what in seen:
        if owner == task_id and (not out or out[-1][0] != delivery_id):
            out.append((delivery_id, what))
    return out


async def test_deliveries_go_on_after_the_delivering_process_is_killed(
    tmp_path: Path, postgres_dsn: str, postgres_schema: str, webhook: tuple[Webhook, str]
) -> None:
    hook, hook_url = webhook
    env = environment(TEST_TASKS_DSN=postgres_dsn)
    servers = []
    for name in ("a", "b"):
        port = free_port()
        values = {"port": port, "data": tmp_path / name, "schema": postgres_schema}
        config = write_config(tmp_path / f"{name}.toml", CONFIG, **values)
        servers.append(
            ServerProcess(["--config", str(config)], tmp_path / f"{name}.log", port, env)
        )
    try:
        for server in servers:
            server.start()
        half = BEFORE // 2
        sent = await send_tasks(servers[0].url, hook_url, half)
        sent += await send_tasks(servers[1].url, hook_url, BEFORE - half)
        await asyncio.wait_for(hook.hit.wait(), 60)
        assert hook.held is not None
        held_id, source_port = hook.held
        pids = [server.proc.pid for server in servers if server.proc is not None]
        victim = owner_of_port(source_port, pids)
        os.kill(victim, signal.SIGKILL)
        survivor = next(s for s in servers if s.proc is not None and s.proc.pid != victim)
        assert survivor.proc is not None
        sent += await send_tasks(survivor.url, hook_url, AFTER)
        await wait_until(
            lambda: all(len(collapse(hook.answered, t)) >= len(EXPECTED) for t in sent), 120
        )
        assert held_id in {delivery_id for _, delivery_id, _ in hook.answered}
        for task_id in sent:  # at least once each, in order per config
            got = collapse(hook.answered, task_id)
            assert [what for _, what in got] == EXPECTED, got
            assert len({delivery_id for delivery_id, _ in got}) == len(EXPECTED)
        assert survivor.proc.poll() is None
    finally:
        for server in servers:
            server.close()
