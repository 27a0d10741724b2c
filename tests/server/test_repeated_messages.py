"""A follow-up whose messageId the task has taken already is not taken twice (spec 3.3.1).

The retry of a message whose first answer was lost (a dropped connection, a 503 after the
store took it) gets the answer of that message's run, or the task as it is; the agent runs on
it once. On each server backend (``store_for``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from server_support import (
    EventReader,
    envelope,
    make_card,
    open_stream,
    post,
    result,
    send_params,
    states,
)
from store_support import ServerStores

from a2a_wire.server import AgentExecutor, EventQueue, RequestContext, TaskUpdater, create_app


class AsksThenWaits(AgentExecutor):
    """Asks for input; a follow-up works, waits at :attr:`gate`, and completes."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.working = asyncio.Event()
        self.follow_ups = 0

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        updater = TaskUpdater(events, context)
        if context.task is None:
            await updater.require_input("your name?")
            return
        self.follow_ups += 1
        await updater.start_work()
        self.working.set()
        await self.gate.wait()
        await updater.complete("hello")


async def _asked(aiohttp_client: Any, store_for: ServerStores) -> tuple[Any, AsksThenWaits, str]:
    agent = AsksThenWaits()
    client = await aiohttp_client(create_app(make_card(), agent, store=store_for()))
    task = (await result(client, "SendMessage", send_params("hi")))["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    return client, agent, task["id"]


def _follow_up(task_id: str) -> dict[str, Any]:
    params = send_params("Ada", taskId=task_id)
    params["message"]["messageId"] = "the-follow-up"
    return params


def _users(task: dict[str, Any]) -> list[str]:
    return [m["messageId"] for m in task.get("history", []) if m["role"] == "ROLE_USER"]


async def test_a_retry_while_its_run_works_gets_that_runs_answer(
    aiohttp_client: Any, store_for: ServerStores
) -> None:
    client, agent, task_id = await _asked(aiohttp_client, store_for)
    first = asyncio.create_task(post(client, envelope("SendMessage", _follow_up(task_id))))
    await agent.working.wait()
    first.cancel()  # the client's connection dropped: it never saw the answer
    retry = asyncio.create_task(result(client, "SendMessage", _follow_up(task_id)))
    agent.gate.set()
    task = (await retry)["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert agent.follow_ups == 1
    assert _users(task).count("the-follow-up") == 1


async def test_a_retry_after_the_task_ended_gets_the_task_as_it_is(
    aiohttp_client: Any, store_for: ServerStores
) -> None:
    client, agent, task_id = await _asked(aiohttp_client, store_for)
    agent.gate.set()
    done = (await result(client, "SendMessage", _follow_up(task_id)))["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    again = (await result(client, "SendMessage", _follow_up(task_id)))["task"]
    assert again["status"] == done["status"]  # not -32004 "terminal": the same answer
    assert agent.follow_ups == 1
    assert _users(again).count("the-follow-up") == 1
    reader: EventReader = await open_stream(client, "SendStreamingMessage", _follow_up(task_id))
    assert states(await reader.rest()) == ["TASK_STATE_COMPLETED"]  # the task, and the end
    assert agent.follow_ups == 1


async def test_a_new_message_id_is_a_new_follow_up(
    aiohttp_client: Any, store_for: ServerStores
) -> None:
    client, agent, task_id = await _asked(aiohttp_client, store_for)
    agent.gate.set()
    await result(client, "SendMessage", _follow_up(task_id))
    other = send_params("Grace", taskId=task_id)
    answer = await post(client, envelope("SendMessage", other))
    assert (await answer.json())["error"]["code"] == -32004  # terminal: takes no more messages
