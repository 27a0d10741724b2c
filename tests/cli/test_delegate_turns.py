"""Follow-ups through the ``delegate`` skill, sent the moment the remote agent asks for input.

A remote agent that asks for input (or authentication) on every turn, behind a local server whose
``delegate`` skill relays to it: each follow-up is sent as soon as the local answer (blocking) or
stream (streamed) shows the interrupted state, and none may be refused as busy. On memory,
SQLite, and two servers on one PostgreSQL schema taking turns (a follow-up reaching the process
that did not start the task finds the remote task again from the task's history).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from server_support import (
    EventReader,
    envelope,
    make_card,
    post,
    result,
    rpc,
    send_params,
    serve_like_the_cli,
    states,
)

from a2a_wire.cli._skills import DelegateSkill, RemoteAgent
from a2a_wire.client import ClientSettings
from a2a_wire.server import AgentExecutor, EventQueue, RequestContext, TaskUpdater, create_app
from a2a_wire.server.store import EventLogStore, PostgresTaskStore, SQLiteTaskStore

pytestmark = pytest.mark.timeout(240)

FOLLOW_UPS = 200


class AsksEveryTurn(AgentExecutor):
    """Asks for input on every turn (for authentication when the text starts with ``auth``)."""

    def __init__(self) -> None:
        self.turns = 0

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        self.turns += 1
        assert context.message is not None
        updater = TaskUpdater(events, context)
        if (context.message.parts[0].text or "").startswith("auth"):
            await updater.require_auth("sign in")
        else:
            await updater.require_input("more?")


@contextlib.asynccontextmanager
async def _servers(
    stores: list[EventLogStore | None],
) -> AsyncIterator[tuple[AsksEveryTurn, list[Any]]]:
    """The remote agent, and one local delegating server per store (HTTP sessions on them)."""
    remote = AsksEveryTurn()
    async with contextlib.AsyncExitStack() as stack:
        host, port = await stack.enter_async_context(
            serve_like_the_cli(create_app(make_card(), remote))
        )
        settings = ClientSettings(allow=("127.0.0.1",))
        agents = {"remote": RemoteAgent("remote", f"http://{host}:{port}", settings=settings)}
        sessions = []
        for store in stores:
            app = create_app(make_card(), DelegateSkill(agents), store=store)
            h, p = await stack.enter_async_context(serve_like_the_cli(app))
            session = aiohttp.ClientSession(base_url=f"http://{h}:{p}")
            sessions.append(await stack.enter_async_context(session))
        yield remote, sessions


async def _turns(servers: list[Any], first: str, *, streamed: bool) -> list[Any]:
    """Ask, then follow up FOLLOW_UPS times at once, on the servers in turn; the refusals."""
    asked = (await result(servers[0], "SendMessage", send_params(first)))["task"]
    assert asked["status"]["state"].endswith(("INPUT_REQUIRED", "AUTH_REQUIRED"))
    refusals: list[Any] = []
    for i in range(FOLLOW_UPS):
        server = servers[(i + 1) % len(servers)]
        params = send_params(f"{first}{i}", taskId=asked["id"])
        if not streamed:
            answer = await rpc(server, "SendMessage", params)
            if "error" in answer or answer["result"]["task"]["status"]["state"].endswith("FAILED"):
                refusals.append(answer)
            continue
        response = await post(server, envelope("SendStreamingMessage", params))
        if response.content_type != "text/event-stream":
            refusals.append(await response.json())
            continue
        events = await EventReader(response).rest()
        if not states(events)[-1].endswith(("INPUT_REQUIRED", "AUTH_REQUIRED")):
            refusals.append(events)
    return refusals


@pytest.mark.parametrize("first", ["ask", "auth"])
async def test_follow_ups_through_delegate_on_memory(first: str) -> None:
    async with _servers([None]) as (remote, servers):
        assert await _turns(servers, first, streamed=False) == []
        assert remote.turns == FOLLOW_UPS + 1  # every follow-up reached the same remote task


async def test_streamed_follow_ups_through_delegate_on_sqlite(tmp_path: Path) -> None:
    async with _servers([SQLiteTaskStore(tmp_path / "tasks.sqlite3")]) as (remote, servers):
        assert await _turns(servers, "ask", streamed=True) == []
        assert remote.turns == FOLLOW_UPS + 1


@pytest.mark.slow
@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
async def test_follow_ups_through_delegate_across_two_processes(
    postgres_dsn: str, postgres_schema: str, streamed: bool
) -> None:
    stores: list[EventLogStore | None] = [
        PostgresTaskStore(postgres_dsn, schema=postgres_schema, heartbeat_seconds=0.5)
        for _ in range(2)
    ]
    async with _servers(stores) as (remote, servers):
        assert await _turns(servers, "ask", streamed=streamed) == []
        assert remote.turns == FOLLOW_UPS + 1
