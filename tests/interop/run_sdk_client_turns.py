"""Interop scenario, run in a subprocess: conversations of the a2a-sdk 1.3.0 client with our server.

Usage: ``python tests/interop/run_sdk_client_turns.py OUT.json``. pytest never imports this file
(see ``run_sdk_client.py``); ``test_sdk_client_turns.py`` runs it and checks what it wrote.

Our server runs :class:`interop_agents.InteropAgent`, whose ``ask-input`` and ``ask-auth``
scripts ask twice (INPUT_REQUIRED, or AUTH_REQUIRED) and complete at the third turn. The SDK's
JSON-RPC client holds each conversation blocking and streamed, each follow-up naming the task and
its context; for every turn the output holds what the SDK parsed (ProtoJSON) next to the task our
server stored when the turn ended, and then the error the SDK raises for a fourth message. A third
time, the SDK's client subscribes to the task after the first question and answers it with a
blocking call: the subscription follows the second turn.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import SubscribeToTaskRequest
from interop_agents import InteropAgent, interop_card
from interop_support import error_name, serve, write_result
from run_sdk_client import collect, pb, request

from a2a_wire.server import create_app
from a2a_wire.server.store import InMemoryTaskStore

ANSWERS = ("Ada", "Lovelace")


async def conversation(client: Client, store: InMemoryTaskStore, script: str) -> dict[str, Any]:
    """Three turns: ``script``, then the two answers; what the SDK parsed and what was stored.

    ``after`` is the error the SDK raises for a fourth message, to the completed task.
    """
    turns = []
    task_id = context_id = ""
    for text in (script, *ANSWERS):
        reply = request(text, task_id=task_id, context_id=context_id)
        events = await collect(client.send_message(reply))
        task_id = events[0]["task"]["id"]
        context_id = events[0]["task"]["contextId"]
        stored = await store.get(task_id)
        assert stored is not None, task_id
        turns.append({"sdk": events, "stored": stored.to_dict()})
    fourth = request("one more", task_id=task_id, context_id=context_id)
    return {"turns": turns, "after": await error_name(collect(client.send_message(fourth)))}


async def subscribed(
    blocking: Client, streaming: Client, store: InMemoryTaskStore, script: str
) -> dict[str, Any]:
    """SubscribeToTask after the first question; the answer sent blocking; what both saw."""
    [first] = await collect(blocking.send_message(request(script)))
    task_id, context_id = first["task"]["id"], first["task"]["contextId"]
    stream = streaming.subscribe(SubscribeToTaskRequest(id=task_id))
    opened = pb(await anext(stream))  # the server holds the subscription from here on
    reply = request(ANSWERS[0], task_id=task_id, context_id=context_id)
    [answered] = await collect(blocking.send_message(reply))
    events = [opened, *await collect(stream)]
    stored = await store.get(task_id)
    assert stored is not None, task_id
    return {"sdk": events, "answered": answered, "stored": stored.to_dict()}


async def main(out: Path) -> None:
    store = InMemoryTaskStore()
    app = create_app(interop_card(), InteropAgent(), store=store)
    result: dict[str, Any] = {}
    async with serve(app) as base:
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, base).get_agent_card()
        blocking = ClientFactory(ClientConfig(streaming=False)).create(card)
        streaming = ClientFactory(ClientConfig(streaming=True)).create(card)
        try:
            for script in ("ask-input", "ask-auth"):
                result[f"blocking {script}"] = await conversation(blocking, store, script)
                result[f"streamed {script}"] = await conversation(streaming, store, script)
                result[f"subscribed {script}"] = await subscribed(
                    blocking, streaming, store, script
                )
        finally:
            await blocking.close()
            await streaming.close()
    write_result(out, result)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
