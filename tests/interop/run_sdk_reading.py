"""Interop scenario, run in a subprocess: the a2a-sdk 1.3.0 client reads the scripted server.

Usage: ``python tests/interop/run_sdk_reading.py OUT.json``. The scripted server
(:mod:`interop_scripted`) answers with what the proto does not define; for each input this
writes what the SDK made of it: the parsed value as ProtoJSON plus the facts the table reports
(which oneof member each part or event has, the state's enum name), or the error it raised.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
)
from google.protobuf.json_format import MessageToDict
from interop_scripted import TASKS, scripted_app
from interop_support import serve, write_result


def facts(task: Task) -> dict[str, Any]:
    parts = [p.WhichOneof("content") for a in task.artifacts for p in a.parts]
    return {
        "parsed": MessageToDict(task),
        "state": TaskState.Name(task.status.state),
        "has_timestamp": task.status.HasField("timestamp"),
        "artifact_part_kinds": parts,
    }


async def read_task(client: Client, task_id: str) -> dict[str, Any]:
    try:
        task = await client.get_task(GetTaskRequest(id=task_id))
    except Exception as exc:  # recorded, not judged here
        return {"error": type(exc).__name__}
    return facts(task)


async def read_stream(client: Client) -> dict[str, Any]:
    message = Message(message_id="m-1", role=Role.ROLE_USER, parts=[Part(text="go")])
    events = []
    try:
        async for event in client.send_message(SendMessageRequest(message=message)):
            events.append(event.WhichOneof("payload"))
    except Exception as exc:  # recorded, not judged here
        return {"members": events, "error": type(exc).__name__}
    return {"members": events}


async def main(out: Path) -> None:
    async with serve(scripted_app()) as base:
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, base).get_agent_card()
        client = ClientFactory(ClientConfig(streaming=True)).create(card)
        try:
            result = {task_id: await read_task(client, task_id) for task_id in TASKS}
            result["stream"] = await read_stream(client)
        finally:
            await client.close()
    write_result(out, result)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
