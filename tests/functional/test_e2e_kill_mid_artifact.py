"""SIGKILL in the middle of a 5,000-chunk streamed artifact: what streams saw survives the restart.

``a2a-wire serve`` on SQLite runs ``e2e_support:ChunkAgent``, which streams one artifact of tiny
chunks (part ``i`` is the text ``f"{i:05d}"``) and never sends the last one. A
SendStreamingMessage client and, once the artifact has begun, a SubscribeToTask client record
the chunks they receive. When both have received 1,000, the server is killed with
SIGKILL (no shutdown code runs) and restarted on the same data directory. Then the task's
artifact (GetTask) is a prefix of the chunks sent and holds at least every chunk any stream
received (no stream shows an event before it is committed), and the task, running at the kill,
is FAILED with the restart message (recovery, docs/server.md).

It runs on PostgreSQL too, where the restarted process fails the task by lease takeover rather
than on open (``store_support.ServeStorage``): the test waits for the FAILED state.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest
from e2e_support import ServerProcess, free_port, write_config
from patience import PATIENCE
from store_support import ServeStorage

from a2a_wire.client import A2AClient, ClientError, ClientSettings, EventStream
from a2a_wire.types import GetTaskRequest, StreamResponse, SubscribeToTaskRequest, Task, TaskState

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

CHUNKS = 5000
KILL_AFTER = 1000  # chunks each stream must have received before the kill
SENT = [f"{i:05d}" for i in range(CHUNKS)]
LOCAL = ClientSettings(allow=["127.0.0.1"])

CONFIG = """
[server]
port = {port}
data_dir = "{data}"
log_level = "warning"

[[skills]]
id = "chunks"
executor = "e2e_support:ChunkAgent"
options = {{ chunks = {chunks} }}
"""


class Recorder:
    """The chunks one stream delivered, in order (a Task snapshot restarts the record)."""

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.task_id = ""
        self.started = asyncio.Event()
        self.enough = asyncio.Event()

    def see(self, event: StreamResponse) -> None:
        if event.task is not None:
            self.task_id = event.task.id
            artifacts = event.task.artifacts
            self.chunks = [p.text or "" for p in artifacts[0].parts] if artifacts else []
        elif event.artifact_update is not None and event.artifact_update.artifact is not None:
            parts = [p.text or "" for p in event.artifact_update.artifact.parts]
            self.chunks = self.chunks + parts if event.artifact_update.append else parts
        if self.chunks:
            self.started.set()
        if len(self.chunks) >= KILL_AFTER:
            self.enough.set()

    async def follow(self, stream: EventStream) -> None:
        """Record events until the stream breaks (the kill)."""
        try:
            async with stream:
                async for event in stream:
                    self.see(event)
        except ClientError:
            pass  # the server died under the stream


async def _final(client: A2AClient, task_id: str) -> Task:
    """The task once it is FAILED (at once on SQLite; after the lease on PostgreSQL)."""
    async with asyncio.timeout(PATIENCE):
        while True:
            task = await client.get_task(GetTaskRequest(id=task_id))
            if task.status is not None and task.status.state is TaskState.FAILED:
                return task
            await asyncio.sleep(0.05)


async def test_sigkill_mid_artifact_keeps_every_streamed_chunk(
    tmp_path: Path, serve_storage: ServeStorage
) -> None:
    port = free_port()
    config = write_config(
        tmp_path / "k.toml",
        serve_storage.config(CONFIG),
        port=port,
        data=tmp_path / "data",
        chunks=CHUNKS,
    )
    server = ServerProcess(["--config", str(config)], tmp_path / "server.log", port)
    sender, subscriber = Recorder(), Recorder()
    try:
        await asyncio.to_thread(server.start)
        async with A2AClient(server.url + "/", settings=LOCAL) as client:
            request = A2AClient.text_request("stream it")
            sending = asyncio.create_task(sender.follow(client.send_streaming_message(request)))
            await asyncio.wait_for(sender.started.wait(), 30)
            watch = client.subscribe_to_task(SubscribeToTaskRequest(id=sender.task_id))
            subscribing = asyncio.create_task(subscriber.follow(watch))
            try:
                await asyncio.wait_for(
                    asyncio.gather(sender.enough.wait(), subscriber.enough.wait()), 60
                )
            except TimeoutError:
                counts = f"sender {len(sender.chunks)}, subscriber {len(subscriber.chunks)}"
                raise AssertionError(f"chunks before the kill: {counts}\n{server.log()}") from None
            assert server.proc is not None
            os.kill(server.proc.pid, signal.SIGKILL)
            await asyncio.wait_for(asyncio.gather(sending, subscribing), 10)
        assert await asyncio.to_thread(server.proc.wait, 10) == -signal.SIGKILL

        await asyncio.to_thread(server.start)
        async with A2AClient(server.url + "/", settings=LOCAL) as client:
            task = await _final(client, sender.task_id)
    finally:
        server.close()

    assert task.status is not None and task.status.state is TaskState.FAILED
    assert task.status.message is not None
    assert [p.text for p in task.status.message.parts] == [serve_storage.lost_message]
    assert len(task.artifacts) == 1
    stored = [p.text for p in task.artifacts[0].parts]
    assert stored == SENT[: len(stored)]  # a prefix of what the agent sent, in order
    assert len(stored) < CHUNKS  # the artifact was cut: the kill came mid-artifact
    for seen in (sender.chunks, subscriber.chunks):
        assert len(seen) >= KILL_AFTER
        assert seen == SENT[: len(seen)]  # each stream got a gapless prefix too
        assert len(stored) >= len(seen)  # and every chunk it got was kept
