"""The default client reads what the default server answers within its own limits.

The server is ``a2a-wire serve``'s default configuration (the ``echo`` skill, SQLite, default
:class:`~a2a_wire.server.ServerSettings`) on 127.0.0.1; the client has default settings but
for the loopback allowlist. The message is as large as the server's ``max_body_bytes`` lets it
be, and the echo answer carries it twice (history and artifact), which the client's old 16 MiB
limit refused.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from aiohttp import web

from a2a_wire.cli._app import build_app
from a2a_wire.cli.config import load
from a2a_wire.client import A2AClient
from a2a_wire.server import ServerSettings
from a2a_wire.types import (
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def app(tmp_path: Path) -> web.Application:
    application, _ = build_app(load(None, data_dir=str(tmp_path / "data")))
    return application


def largest_message() -> Message:
    """A text file as large as the default server's body limit allows (base64 takes 4/3)."""
    room = ServerSettings().max_body_bytes - 4096  # the envelope, ids and names
    line = b"a line of the text file that is as large as the server accepts\n"
    raw = line * ((room * 3 // 4) // len(line))
    assert len(base64.b64encode(raw)) > ServerSettings().max_body_bytes * 0.99
    part = Part(raw=raw, filename="big7m.txt", media_type="text/plain")
    return Message(message_id="m-big", role=Role.USER, parts=[Part(text="here"), part])


async def test_the_largest_answer_of_the_default_server_is_readable(client: A2AClient) -> None:
    message = largest_message()
    raw = message.parts[1].raw
    answer = await client.send_message(SendMessageRequest(message=message))
    task = answer.task
    assert task is not None and task.status is not None
    assert task.status.state is TaskState.COMPLETED
    # The file came back twice: in the history and in the echo's attachments artifact.
    assert task.history[0].parts[1].raw == raw
    assert [p.raw for a in task.artifacts for p in a.parts if p.raw] == [raw]

    again = await client.get_task(GetTaskRequest(id=task.id))
    assert again.artifacts[-1].parts[0].raw == raw
    page = await client.list_tasks(ListTasksRequest(include_artifacts=True))
    assert [t.id for t in page.tasks] == [task.id]


async def test_a_stream_of_the_largest_message_is_readable(client: A2AClient) -> None:
    message = largest_message()
    async with client.send_streaming_message(SendMessageRequest(message=message)) as stream:
        events = [event async for event in stream]
    assert stream.state is TaskState.COMPLETED
    files = [
        part.raw
        for event in events
        if event.artifact_update is not None and event.artifact_update.artifact is not None
        for part in event.artifact_update.artifact.parts
        if part.raw
    ]
    assert files == [message.parts[1].raw]
