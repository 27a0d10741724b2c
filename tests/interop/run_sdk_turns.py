"""Interop scenario, run in a subprocess: multi-turn exchanges with an a2a-sdk 1.3.0 server.

Usage: ``python tests/interop/run_sdk_turns.py OUT.json NAME``, NAME a key of
:data:`CONVERSATIONS`. pytest never imports this file (see ``run_sdk_client.py``);
``test_sdk_turns.py`` runs it once per conversation and checks what it wrote.

The SDK's server (``run_sdk_server.sdk_server``) runs :class:`TurnsAgent`, which holds
conversations of three turns in the SDK's own idiom: the first turn enqueues the Task and asks
(:data:`CONVERSATIONS`: for the user's name then a sign-in, or for a sign-in twice), the second
asks again, the third completes with an artifact; the follow-up turns enqueue status and
artifact updates only, so their streams begin with an update, not the Task. The a2a-wire client
holds the conversation blocking, streamed and through ``a2a-wire send`` (blocking and
``--stream``, with ``a2a-wire subscribe`` beside the latter); the output holds what each saw,
next to the task the SDK stored.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import a2a_pb2 as pb2
from interop_support import error_name, write_result
from run_sdk_server import SDK_CONTEXT, pb, sdk_server

from a2a_wire.client import A2AClient, ClientSettings, EventStream
from a2a_wire.types import StreamResponse

ALLOW = ClientSettings(allow=("127.0.0.1",))
QUESTION = "What is your name?"
SIGN_IN = "Please sign in to go on."
SIGN_IN_AGAIN = "That sign-in has expired; please sign in again."
CONVERSATIONS = {  # what the user says in each turn; what the agent asks in the first two
    "input-first": (("hello", "Ada", "signed-in"), (("input", QUESTION), ("auth", SIGN_IN))),
    "auth-first": (
        ("open the vault", "Ada", "signed-in again"),
        (("auth", SIGN_IN), ("auth", SIGN_IN_AGAIN)),
    ),
}


class TurnsAgent(AgentExecutor):
    """Asks twice (:data:`CONVERSATIONS`), then answers; follow-ups send updates only."""

    def __init__(self) -> None:
        self.turns: Counter[str] = Counter()
        self.asks: dict[str, tuple[tuple[str, str], ...]] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.message is not None
        self.turns[context.task_id] += 1
        turn = self.turns[context.task_id]
        current = context.current_task
        context_id = current.context_id if current is not None else context.context_id
        assert context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context_id)
        if current is None:
            opening = context.message.parts[0].text
            self.asks[context.task_id] = next(
                asks for said, asks in CONVERSATIONS.values() if said[0] == opening
            )
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        else:
            await updater.start_work()
        if turn <= 2:
            kind, text = self.asks[context.task_id][turn - 1]
            ask = updater.requires_input if kind == "input" else updater.requires_auth
            await ask(updater.new_agent_message([pb2.Part(text=text)]))
            return
        said = [m.parts[0].text for m in current.history if m.role == pb2.Role.ROLE_USER]
        name = said[1] if len(said) > 1 else "?"
        await updater.add_artifact([pb2.Part(text=f"hello, {name}")], name="greeting")
        await updater.complete(updater.new_agent_message([pb2.Part(text="done")]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


class Warnings(logging.Handler):
    """Counts the client's warnings that a stream began with an update."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "not the Task (spec 3.1.2)" in record.getMessage():
            self.count += 1


async def blocking(client: A2AClient, said: tuple[str, ...]) -> dict[str, Any]:
    states, asked = [], []
    task_id = None
    for text in said:
        answer = await client.send_text(text, task_id=task_id)
        assert answer.task is not None and answer.task.status is not None
        task_id = answer.task.id
        states.append(answer.task.status.state.value)
        message = answer.task.status.message
        asked.append(message.parts[0].text if message is not None else None)
    assert task_id is not None
    after = await error_name(client.send_text("one more", task_id=task_id))  # to a completed task
    return {"states": states, "asked": asked, "task_id": task_id, "after": after}


async def streamed(client: A2AClient, said: tuple[str, ...], warnings: Warnings) -> dict[str, Any]:
    turns = []
    task_id = None
    for text in said:
        before = warnings.count
        stream = client.send_streaming_message(client.text_request(text, task_id=task_id))
        async with stream:
            events = [event.to_dict() async for event in stream]
        task_id = stream.task_id
        turns.append(
            {
                "events": events,
                "state": stream.state.value if stream.state is not None else None,
                "finished": stream.finished,
                "warnings": warnings.count - before,
            }
        )
    assert task_id is not None
    whole = await client.get_task(task_id)
    fourth = client.send_streaming_message(client.text_request("one more", task_id=task_id))
    after = await error_name(drain(fourth))  # to a completed task
    return {"turns": turns, "task_id": task_id, "fetched": whole.to_dict(), "after": after}


async def drain(stream: EventStream) -> list[StreamResponse]:
    async with stream:
        return [event async for event in stream]


async def spawn(*args: str) -> asyncio.subprocess.Process:
    """Start ``a2a-wire ARGS`` without the caller's A2A_WIRE_ settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_WIRE_")}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "a2a_wire",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )


async def finish(proc: asyncio.subprocess.Process, before: bytes = b"") -> dict[str, Any]:
    """Wait for ``proc`` (killed after 60 s); its code and output, ``before`` read already."""
    try:
        async with asyncio.timeout(60):
            out, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return {"code": proc.returncode, "out": (before + out).decode(), "err": err.decode()}


async def cli(base: str, *args: str) -> dict[str, Any]:
    return await finish(await spawn("send", base, *args))


async def through_the_cli(base: str, said: tuple[str, ...], *stream: str) -> dict[str, Any]:
    """``a2a-wire send`` for each turn, with ``stream`` (``--stream`` or nothing) as options.

    With ``--stream``, after the first question ``a2a-wire subscribe --turn`` runs, and
    ``a2a-wire subscribe`` (following across turns) from then until the task completes.
    """
    first = await cli(base, said[0], *stream, "--json")
    task = json.loads(first["out"].splitlines()[0])["task"]["id"]
    result: dict[str, Any] = {"task_id": task}
    if not stream:
        second = await cli(base, said[1], "--task-id", task)
        third = await cli(base, said[2], "--task-id", task)
        return {**result, "runs": [first, second, third]}
    result["turn"] = await finish(await spawn("subscribe", base, task, "--turn", "--json"))
    follower = await spawn("subscribe", base, task, "--json", "--timeout", "60")
    try:
        assert follower.stdout is not None
        async with asyncio.timeout(60):
            opened = await follower.stdout.readline()  # the Task: the SDK holds the stream now
        second = await cli(base, said[1], "--task-id", task, *stream)
        third = await cli(base, said[2], "--task-id", task, *stream)
    except BaseException:
        follower.kill()
        await follower.wait()
        raise
    result["follow"] = await finish(follower, opened)
    return {**result, "runs": [first, second, third]}


async def conversation(
    base: str, handler: Any, said: tuple[str, ...], warnings: Warnings
) -> dict[str, Any]:
    """The conversation held four ways; what each saw and the task the SDK stored."""
    result: dict[str, Any] = {}
    async with await A2AClient.connect(base, settings=ALLOW) as client:
        result["blocking"] = await blocking(client, said)
        result["streamed"] = await streamed(client, said, warnings)
    result["cli"] = await through_the_cli(base, said, "--stream")
    result["cli blocking"] = await through_the_cli(base, said)
    for cell in result.values():
        stored = await handler.task_store.get(cell["task_id"], SDK_CONTEXT)
        assert stored is not None
        cell["stored"] = pb(stored)
    return result


async def main(out: Path, name: str) -> None:
    warnings = Warnings()
    logging.getLogger("a2a_wire.client").addHandler(warnings)
    said, _ = CONVERSATIONS[name]
    async with sdk_server(TurnsAgent()) as (base, handler):  # type: ignore[arg-type]
        result = await conversation(base, handler, said, warnings)
    write_result(out, result)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2]))
