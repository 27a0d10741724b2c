"""A task write the store refused before writing anything is tried again (server/_write_retry.py).

The rule alone, then the real thing: a server on a throwaway PostgreSQL cluster that the test
stops while an agent writes, and starts again once the store has refused the write.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import Any

import aiohttp
import pg_support
import pytest
from patience import PATIENCE, poll
from server_support import ScriptedAgent, make_card, result, send_params, serve_like_the_cli

from a2a_wire.server import ServerSettings, create_app
from a2a_wire.server._write_retry import retry_unwritten
from a2a_wire.server.store import PostgresTaskStore, StoreUnavailableError

# -- the rule ---------------------------------------------------------------------------------


class Writes:
    """A write that fails with the given errors first, then returns ``"written"``."""

    def __init__(self, *failures: StoreUnavailableError) -> None:
        self.failures = list(failures)
        self.tries = 0

    async def __call__(self) -> str:
        self.tries += 1
        if self.failures:
            raise self.failures.pop(0)
        return "written"


def _refused(*, unwritten: bool) -> StoreUnavailableError:
    return StoreUnavailableError("test", unwritten=unwritten)


async def test_a_write_refused_before_reaching_the_database_is_tried_until_it_is_written() -> None:
    write = Writes(*(_refused(unwritten=True) for _ in range(3)))
    assert await retry_unwritten(write, PATIENCE) == "written"
    assert write.tries == 4


async def test_a_write_that_may_have_reached_the_database_is_never_tried_again() -> None:
    write = Writes(_refused(unwritten=True), _refused(unwritten=False))
    with pytest.raises(StoreUnavailableError) as caught:
        await retry_unwritten(write, PATIENCE)
    assert caught.value.unwritten is False
    assert write.tries == 2


async def test_no_time_to_retry_tries_once() -> None:
    write = Writes(_refused(unwritten=True))
    with pytest.raises(StoreUnavailableError):
        await retry_unwritten(write, 0.0)
    assert write.tries == 1


def test_the_setting_refuses_a_negative_duration() -> None:
    assert ServerSettings(store_write_retry_seconds=0).store_write_retry_seconds == 0
    with pytest.raises(ValueError, match="store_write_retry_seconds"):
        ServerSettings(store_write_retry_seconds=-1)


# -- on PostgreSQL, stopped and started again --------------------------------------------------


class CountedStore(PostgresTaskStore):
    """The PostgreSQL store, counting the creates and appends it refused."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refused: collections.Counter[str] = collections.Counter()

    async def create(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().create(*args, **kwargs)
        except StoreUnavailableError:
            self.refused["create"] += 1
            raise

    async def append(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().append(*args, **kwargs)
        except StoreUnavailableError:
            self.refused["append"] += 1
            raise


async def _now(value: Any) -> Any:
    return value


async def test_agent_writes_and_new_tasks_ride_out_a_database_restart(
    pg_cluster: pg_support.Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    agent = ScriptedAgent()
    store = CountedStore(pg_cluster.dsn, schema=pg_support.new_schema())
    settings = ServerSettings(store_write_retry_seconds=PATIENCE * 2)
    app = create_app(make_card(), agent, store=store, settings=settings)
    async with (
        serve_like_the_cli(app) as (host, port),
        aiohttp.ClientSession(base_url=f"http://{host}:{port}") as client,
    ):
        blocked = asyncio.create_task(result(client, "SendMessage", send_params("wait")))
        await agent.started.wait()
        await asyncio.to_thread(pg_cluster.stop_server)
        try:
            agent.gate.set()  # its artifact and COMPLETED meet no database
            await poll(lambda: _now(store.refused["append"]), lambda n: n >= 2)  # tried again
            new = asyncio.create_task(result(client, "SendMessage", send_params("task")))
            await poll(lambda: _now(store.refused["create"]), lambda n: n >= 2)
        finally:
            await asyncio.to_thread(pg_cluster.start_server)
        task = (await blocked)["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert [a["parts"] for a in task["artifacts"]] == [[{"text": "wait"}]]  # written once
        made = (await new)["task"]
        assert made["status"]["state"] == "TASK_STATE_COMPLETED"
        stored = await result(client, "GetTask", {"id": task["id"]})
        assert stored["status"]["state"] == "TASK_STATE_COMPLETED"
        assert len(stored["artifacts"]) == 1
    warnings = [r.getMessage() for r in caplog.records]
    assert sum("PostgreSQL is unavailable" in line for line in warnings) >= 1
    assert not [r.getMessage() for r in caplog.records if r.exc_info]  # no traceback
    assert not any(
        "failed" in r.getMessage() for r in caplog.records if r.name == "a2a_wire.server"
    )
