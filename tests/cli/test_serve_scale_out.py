"""Three ``a2a-wire serve`` processes on one PostgreSQL schema (docs/scale-out.md).

A, B and C are separate processes on separate ports, so each request goes to the process the
test picks. Their agent (tests/scale_agents.py) writes marker files naming the process it runs
in, and waits at files the test creates: every wait is for a file, an event or a process,
with a generous deadline, never for a time. Streams have a keep-alive of an hour: an event that
reaches a stream on a process the task does not run on was woken through the database. Leases
are short (``lease_seconds = 5``), so the SIGKILL test settles quickly.

The processes are started once for the module; the last test kills A.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pg_support
import pytest
from e2e_support import ServerProcess, environment, free_port, write_config
from patience import PATIENCE
from scale_agents import CHUNKS
from server_support import EventReader, error, open_stream, result, send_params, states

from a2a_wire.server.store import PROCESS_LOST_MESSAGE

pytestmark = pytest.mark.slow

LEASE_SECONDS = 5.0
HEARTBEAT_SECONDS = 0.5
MARGIN_SECONDS = 10.0
"""Allowed on top of the lease for a takeover to be seen (a scan period, a busy machine)."""

CONFIG = """
[server]
port = {port}
storage = "postgresql"
data_dir = "{data}"
keepalive_seconds = 3600.0

[postgresql]
dsn_env = "TEST_TASKS_DSN"
schema = "{schema}"
pool_size = 4
lease_seconds = {lease}
heartbeat_seconds = {beat}

[[skills]]
id = "scale"
executor = "scale_agents:ScaleAgent"
[skills.options]
name = "{name}"
folder = "{folder}"
"""


@dataclass
class Trio:
    """The three processes, by name, and the folder their agents mark."""

    servers: dict[str, ServerProcess]
    folder: Path

    def marker(self, kind: str, task_id: str) -> Path:
        return self.folder / kind / task_id

    def go(self, task_id: str) -> None:
        (self.folder / "go").mkdir(exist_ok=True)
        (self.folder / "go" / task_id).write_text("go", encoding="utf-8")


@pytest.fixture(scope="module")
def trio(tmp_path_factory: pytest.TempPathFactory, postgres_dsn: str) -> Iterator[Trio]:
    root = tmp_path_factory.mktemp("scale")
    folder = root / "markers"
    folder.mkdir()
    schema = pg_support.new_schema()
    env = environment(TEST_TASKS_DSN=postgres_dsn)
    servers: dict[str, ServerProcess] = {}
    try:
        for name in "ABC":
            port = free_port()
            text = CONFIG.format(
                port=port,
                data=root / f"data-{name}",
                schema=schema,
                lease=LEASE_SECONDS,
                beat=HEARTBEAT_SECONDS,
                name=name,
                folder=folder,
            )
            config = write_config(root / f"serve-{name}.toml", text)
            server = ServerProcess(["--config", str(config)], root / f"{name}.log", port, env=env)
            servers[name] = server
            server.start(timeout=PATIENCE)
        yield Trio(servers, folder)
    finally:
        for server in servers.values():
            server.close()
        asyncio.run(pg_support.drop_schema(postgres_dsn, schema))


@contextlib.asynccontextmanager
async def clients(trio: Trio) -> AsyncIterator[tuple[aiohttp.ClientSession, ...]]:
    """An HTTP session on each of A, B and C."""
    async with contextlib.AsyncExitStack() as stack:
        sessions = []
        for name in "ABC":
            session = aiohttp.ClientSession(base_url=trio.servers[name].url)
            sessions.append(await stack.enter_async_context(session))
        yield tuple(sessions)


async def until_file(path: Path) -> str:
    """The content of ``path`` once it exists (written atomically by the agent)."""
    async with asyncio.timeout(PATIENCE):
        while not path.exists():
            await asyncio.sleep(0.01)
    return path.read_text(encoding="utf-8")


async def held_task(
    client: aiohttp.ClientSession, trio: Trio, text: str
) -> tuple[EventReader, str]:
    """A streamed task whose agent waits (``hold`` or ``stuck``), and its stream."""
    reader = await open_stream(client, "SendStreamingMessage", send_params(text))
    first = await reader.next()
    assert first is not None, "the stream ended at once"
    task_id = first["result"]["task"]["id"]
    await until_file(trio.marker("held", task_id))
    return reader, task_id


def numbers(ids: list[str | None]) -> list[int]:
    assert all(i is not None for i in ids), ids
    return [int(i) for i in ids if i is not None]


async def test_a_task_on_a_is_streamed_from_b_and_c_with_the_same_gapless_events(
    trio: Trio,
) -> None:
    async with clients(trio) as (a, b, c):
        here, task_id = await held_task(a, trio, "hold")
        assert trio.marker("held", task_id).read_text(encoding="utf-8") == "A"
        there = [await open_stream(x, "SubscribeToTask", {"id": task_id}) for x in (b, c)]
        starts = [await view.next() for view in there]
        assert starts[0] == starts[1] and there[0].ids == there[1].ids  # the task, as of now
        trio.go(task_id)
        rests = [await view.rest() for view in there]
        mine = [await here.next(), await here.next()]  # WORKING and the first chunk on A
        mine += await here.rest()
    assert rests[0] == rests[1] and there[0].ids == there[1].ids
    assert states(rests[0])[-1] == "TASK_STATE_COMPLETED"
    ids = numbers(here.ids)
    assert ids == list(range(1, CHUNKS + 4))  # task, WORKING, the chunks, COMPLETED: no gap
    seen = numbers(there[0].ids)
    assert seen == list(range(seen[0], ids[-1] + 1))
    assert mine[-len(rests[0]) :] == rests[0]  # the very events A's own stream sent


async def test_subscribe_with_last_event_id_on_another_process_resumes_exactly(
    trio: Trio,
) -> None:
    async with clients(trio) as (a, _, c):
        here, task_id = await held_task(a, trio, "hold")
        working, chunk = await here.next(), await here.next()
        assert working is not None and chunk is not None and here.ids == ["1", "2", "3"]
        here.response.close()  # the connection drops after event 3; the task goes on
        again = await open_stream(
            c, "SubscribeToTask", {"id": task_id}, headers={"Last-Event-ID": "2"}
        )
        missed = await again.next()
        assert again.ids == ["3"] and missed == chunk  # exactly the event after 2, from C
        trio.go(task_id)
        rest = await again.rest()
    assert numbers(again.ids) == list(range(3, CHUNKS + 4))
    assert states(rest) == ["TASK_STATE_COMPLETED"]


async def test_a_cancel_sent_to_c_ends_the_run_on_a(trio: Trio) -> None:
    async with clients(trio) as (a, b, c):
        reader, task_id = await held_task(a, trio, "stuck")
        canceled = await result(c, "CancelTask", {"id": task_id})
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
        assert canceled["status"]["message"]["parts"] == [{"text": "canceled in A"}]  # A's hook
        assert await until_file(trio.marker("stopped", task_id)) == "A"  # A's run stopped
        assert states(await reader.rest()) == ["TASK_STATE_WORKING", "TASK_STATE_CANCELED"]
        seen = await result(b, "GetTask", {"id": task_id})
        assert seen["status"]["state"] == "TASK_STATE_CANCELED"
        again = await error(b, "CancelTask", {"id": task_id})
        assert again["code"] == -32002


async def test_a_follow_up_to_a_task_from_a_is_served_by_b(trio: Trio) -> None:
    async with clients(trio) as (a, b, _):
        asked = (await result(a, "SendMessage", send_params("ask")))["task"]
        assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        follow = send_params("this", taskId=asked["id"], contextId=asked["contextId"])
        done = (await result(b, "SendMessage", follow))["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["artifacts"][0]["parts"] == [{"text": "served by B"}]


async def test_sigkill_of_a_leaves_its_task_failed_as_seen_from_b(trio: Trio) -> None:
    async with clients(trio) as (a, b, _):
        mine, task_id = await held_task(a, trio, "stuck")
        there = await open_stream(b, "SubscribeToTask", {"id": task_id})
        first = await there.next()
        assert first is not None and first["result"]["task"]["status"]["state"] == (
            "TASK_STATE_WORKING"
        )
        killed = trio.servers["A"]
        assert killed.proc is not None
        killed.proc.send_signal(signal.SIGKILL)
        started = time.monotonic()
        mine.response.close()  # A's stream died with A
        rest = await there.rest()  # B's stream ends with the takeover's FAILED
        elapsed = time.monotonic() - started
        seen = await result(b, "GetTask", {"id": task_id})
    killed.proc.wait(timeout=PATIENCE)
    assert not trio.marker("stopped", task_id).exists()  # A's run never got to stop: killed
    assert states(rest) == ["TASK_STATE_FAILED"]
    status = rest[-1]["result"]["statusUpdate"]["status"]
    assert status["message"]["parts"] == [{"text": PROCESS_LOST_MESSAGE}]
    assert seen["status"] == status
    assert elapsed < LEASE_SECONDS + HEARTBEAT_SECONDS + MARGIN_SECONDS
