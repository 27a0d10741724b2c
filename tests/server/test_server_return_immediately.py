"""SendMessage with returnImmediately answers even when the agent is slow to send its first event.

The agent's first event decides between a task and a direct Message reply, so the server waits
for it, but only ``ServerSettings.first_event_seconds``: after that it makes the SUBMITTED task
itself, answers with it, and the agent's later updates apply to that task.
"""

from __future__ import annotations

import asyncio
from typing import Any

from patience import PATIENCE, poll
from server_support import ScriptedAgent, make_card, message, result
from store_support import ServerStores

from a2a_wire.server import (
    AgentExecutor,
    EventQueue,
    RequestContext,
    ServerSettings,
    TaskUpdater,
    create_app,
)

FINAL = ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED")


class SlowStarter(AgentExecutor):
    """Sends nothing until :attr:`gate` opens, then works and completes."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        await self.gate.wait()
        updater = TaskUpdater(events, context)
        await updater.start_work()
        await updater.add_artifact("late")
        await updater.complete()


async def test_a_silent_agent_still_gets_a_submitted_task_answered(
    aiohttp_client: Any, store_for: ServerStores
) -> None:
    agent = SlowStarter()
    settings = ServerSettings(first_event_seconds=0.05)
    app = create_app(make_card(), agent, settings=settings, store=store_for(settings))
    client = await aiohttp_client(app)
    params = {"message": message("hi"), "configuration": {"returnImmediately": True}}
    sent = await asyncio.wait_for(result(client, "SendMessage", params), PATIENCE)
    task = sent["task"]
    assert task["status"]["state"] == "TASK_STATE_SUBMITTED"
    stored = await result(client, "GetTask", {"id": task["id"]})
    assert stored["status"]["state"] == "TASK_STATE_SUBMITTED"
    agent.gate.set()
    done = await poll(
        lambda: result(client, "GetTask", {"id": task["id"]}),
        lambda t: t["status"]["state"] in FINAL,  # WORKING may be seen on the way
    )
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["artifacts"][0]["parts"][0]["text"] == "late"


async def test_a_quick_direct_reply_is_still_a_message(
    aiohttp_client: Any, store_for: ServerStores
) -> None:
    client = await aiohttp_client(create_app(make_card(), ScriptedAgent(), store=store_for()))
    params = {"message": message("reply"), "configuration": {"returnImmediately": True}}
    sent = await result(client, "SendMessage", params)
    assert "message" in sent and "task" not in sent
