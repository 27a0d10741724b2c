"""A resumable stream rides out a server restart with the client's default budget.

The server (``create_app`` on SQLite, one fixed port) goes away in the middle of a stream, as a
crashed or redeployed process does: its connections close without a last event. It stays down
until the client's back-off has waited about 10 s (the pauses its ``on_resume`` notices
announce), then starts again on the same data directory and port. The restart fails the task
that was running (a one-process store: docs/server.md), and the client, resuming with
``Last-Event-ID``, reads exactly the events it had not: every event of the task once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp import web
from ports import free_port
from push_support import wait_until
from server_support import make_card

from a2a_wire.client import A2AClient, ClientSettings, Resubscription
from a2a_wire.server import (
    AgentExecutor,
    EventQueue,
    RequestContext,
    ServerSettings,
    TaskUpdater,
    create_app,
)
from a2a_wire.server.store import SQLiteTaskStore
from a2a_wire.types import StreamResponse, TaskState

pytestmark = pytest.mark.slow

DOWN_FOR = 10.0  # seconds of the client's pauses while the server is away


class Halfway(AgentExecutor):
    """Sends two chunks, then waits for ever (the restart ends the run)."""

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        updater = TaskUpdater(events, context)
        await updater.start_work()
        for i in range(2):
            await updater.add_artifact(f"chunk {i}", artifact_id="a1", append=i > 0)
        await asyncio.Event().wait()


async def _serve(port: int, data: Path) -> web.AppRunner:
    settings = ServerSettings()
    store = SQLiteTaskStore(data / "tasks.sqlite3")
    app = create_app(make_card(), Halfway(), settings=settings, store=store)
    runner = web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner


def _kind(event: StreamResponse) -> str:
    if event.status_update is not None and event.status_update.status is not None:
        return event.status_update.status.state.value
    return event.which_payload() or ""


@pytest.mark.slow
async def test_a_stream_resumes_after_a_restart_of_ten_seconds(tmp_path: Path) -> None:
    port = free_port()
    runner = await _serve(port, tmp_path)
    events: list[StreamResponse] = []
    notices: list[Resubscription] = []
    settings = ClientSettings(allow=["127.0.0.1"])  # the default resume budget
    async with A2AClient(f"http://127.0.0.1:{port}/", settings=settings) as client:
        stream = client.resumable(
            client.send_streaming_message(A2AClient.text_request("go")), on_resume=notices.append
        )

        async def read() -> None:
            async with stream:
                async for event in stream:
                    events.append(event)

        reader = asyncio.create_task(read())
        try:
            await wait_until(lambda: len(events) == 4)  # task, WORKING, both chunks
            seen_id = stream.last_event_id
            await runner.cleanup()  # the process goes away
            down = lambda: sum(n.pause for n in notices)  # noqa: E731
            await wait_until(lambda: reader.done() or down() >= DOWN_FOR, timeout=120)
            assert not reader.done(), f"gave up after {down():g} s: {reader.exception()!r}"
            runner = await _serve(port, tmp_path)  # back, on the same port and data
            await asyncio.wait_for(reader, 120)
            task = await client.get_task(stream.task_id)
        finally:
            reader.cancel()
            await runner.cleanup()
    assert task.status is not None and task.status.state is TaskState.FAILED
    assert [p.text for a in task.artifacts for p in a.parts] == ["chunk 0", "chunk 1"]
    kinds = [_kind(e) for e in events]
    assert kinds == [
        "task",
        "TASK_STATE_WORKING",
        "artifact_update",
        "artifact_update",
        "TASK_STATE_FAILED",
    ]
    assert stream.state is TaskState.FAILED  # the restart failed the task that was running
    assert len(notices) == stream.resubscribes >= 3
    assert all(n.last_event_id == seen_id for n in notices)  # resumed after the last event read
    assert [n.attempt for n in notices] == list(range(1, len(notices) + 1))
