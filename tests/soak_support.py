"""Helpers of the scale-out soak (tests/functional/test_scale_out_soak.py): its agent, three
``a2a-wire serve`` processes on one PostgreSQL schema, and a stream reader that resumes on
another process.

* :class:`SoakAgent` (``soak_support:SoakAgent``) works a little while (a few artifact chunks
  with short pauses) and then completes, asks for input, or holds until it is canceled or its
  process dies, as the first word of the message says.
* :class:`Cluster` starts the processes (each on its own port, all with one configuration and one
  ``data_dir``, so one page-token key), SIGKILLs one and starts it again on the same port.
* :func:`follow` reads one SendStreamingMessage or SubscribeToTask stream as raw SSE and, when
  the connection drops before the stream's end, subscribes again on the next process with
  ``Last-Event-ID``; it keeps every event id and body it received (:class:`StreamRecord`), so
  the test can compare them with the events table, duplicates included (a2a-wire's client
  would skip a replayed event: its own resumes are checked apart).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from e2e_support import ServerProcess, environment, free_port, write_atomically, write_config
from patience import PATIENCE

from a2a_wire._protocol.sse import SSEDecoder
from a2a_wire.server import AgentExecutor, EventQueue, RequestContext, TaskUpdater

HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
SETTLED = {
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
    "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_AUTH_REQUIRED",
}
TERMINAL = SETTLED - {"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"}
RUNNING = ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")

CONFIG = """
[server]
port = {port}
storage = "postgresql"
data_dir = "{data}"
log_level = "warning"
keepalive_seconds = {keepalive}

[postgresql]
dsn_env = "SOAK_TASKS_DSN"
schema = "{schema}"
pool_size = 4
poll_interval_seconds = 0.5
lease_seconds = {lease}
heartbeat_seconds = {heartbeat}
{postgresql}
[limits]
{limits}

[[skills]]
id = "soak"
executor = "soak_support:SoakAgent"
default = true
options = {{ chunks = {chunks}, pause_seconds = {pause}, runs = "{runs}" }}
"""


class SoakAgent(AgentExecutor):
    """Works ``chunks`` artifact chunks, ``pause_seconds`` apart, then acts on the first word.

    ``hold``: waits after the first chunk until the run is cancelled (CancelTask, or its process
    dies). ``ask``: INPUT_REQUIRED after the chunks; the follow-up turn (any text) works again
    and completes. Anything else: COMPLETED after the chunks.

    With ``runs``, every run writes its process id to ``runs/<task id>.<turn>.started`` as it
    begins (turn 1, or 2 for the follow-up; so the test knows which process ran a turn), and
    ``runs/<task id>.<turn>.stopped`` when it is cancelled (so the test sees which runs a cancel
    ended), and ``runs/<task id>.<turn>.ended`` however it ends.

    Args:
        chunks: Artifact chunks per turn.
        pause_seconds: Pause after each chunk.
        runs: Directory for the files that note runs (``""``: none).
    """

    def __init__(self, chunks: int = 4, pause_seconds: float = 0.05, runs: str = "") -> None:
        self.chunks = chunks
        self.pause = pause_seconds
        self.runs = Path(runs) if runs else None

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        assert context.message is not None
        word = " ".join(p.text or "" for p in context.message.parts).split(" ")[0]
        follow_up = context.task is not None
        turn = 2 if follow_up else 1
        self._note(f"{context.task_id}.{turn}.started")
        try:
            await self._turn(TaskUpdater(events, context), word, follow_up)
        except asyncio.CancelledError:
            self._note(f"{context.task_id}.{turn}.stopped")
            raise
        finally:
            self._note(f"{context.task_id}.{turn}.ended")

    async def _turn(self, updater: TaskUpdater, word: str, follow_up: bool) -> None:
        await updater.start_work()
        artifact_id = ""
        for index in range(self.chunks):
            artifact_id = await updater.add_artifact(
                f"{index};",
                artifact_id=artifact_id,
                name="turn-2" if follow_up else "turn-1",
                append=index > 0,
                last_chunk=index == self.chunks - 1,
            )
            if word == "hold" and not follow_up:
                await asyncio.Event().wait()  # ends by cancellation only
            await asyncio.sleep(self.pause)
        if word == "ask" and not follow_up:
            await updater.require_input("one more message, please")
        else:
            await updater.complete()

    def _note(self, name: str) -> None:
        if self.runs is not None:
            write_atomically(self.runs / name, str(os.getpid()))


@dataclass
class Cluster:
    """``count`` serve processes on one schema; :meth:`close` kills whatever still runs."""

    tmp_path: Path
    dsn: str
    schema: str
    lease_seconds: float
    heartbeat_seconds: float
    keepalive_seconds: float = 3600.0
    count: int = 3
    dsns: list[str] = field(default_factory=list)
    """Each process's own DSN (e.g. through its own proxy); ``dsn`` for all when empty."""
    postgresql: str = ""
    """More lines of each process's ``[postgresql]`` table."""
    limits: str = ""
    """Lines of each process's ``[limits]`` table."""
    servers: list[ServerProcess] = field(default_factory=list)
    kills: int = 0

    def __post_init__(self) -> None:
        self.runs.mkdir(parents=True, exist_ok=True)
        for index in range(self.count):
            env = environment(SOAK_TASKS_DSN=self.dsns[index] if self.dsns else self.dsn)
            port = free_port()
            config = write_config(
                self.tmp_path / f"serve-{index}.toml",
                CONFIG,
                port=port,
                data=self.tmp_path / "data",
                schema=self.schema,
                lease=self.lease_seconds,
                heartbeat=self.heartbeat_seconds,
                keepalive=self.keepalive_seconds,
                chunks=4,
                runs=self.runs,
                pause=0.05,
                postgresql=self.postgresql,
                limits=self.limits,
            )
            log = self.tmp_path / f"server-{index}.log"
            self.servers.append(ServerProcess(["--config", str(config)], log, port, env=env))

    @property
    def runs(self) -> Path:
        """Where the agent notes its held runs (:class:`SoakAgent`)."""
        return self.tmp_path / "runs"

    def runner(self, task_id: str, turn: int = 1) -> int | None:
        """The process id that ran a turn of the task (``None``: no run of it began)."""
        started = self.runs / f"{task_id}.{turn}.started"
        return int(started.read_text()) if started.exists() else None

    def pids(self) -> set[int]:
        """The process ids of the processes running now."""
        return {s.proc.pid for s in self.servers if s.proc is not None and s.proc.poll() is None}

    @property
    def urls(self) -> list[str]:
        return [server.url + "/" for server in self.servers]

    async def start(self) -> None:
        """Start them one after the other (the first one makes the page-token key)."""
        for server in self.servers:
            await asyncio.to_thread(server.start, 120.0)

    async def kill(self, index: int) -> None:
        """SIGKILL process ``index`` and wait for its end."""
        server = self.servers[index]
        assert server.proc is not None
        server.proc.send_signal(signal.SIGKILL)
        await asyncio.to_thread(server.proc.wait, 30)
        self.kills += 1

    async def restart(self, index: int) -> None:
        """Start process ``index`` again on its port (after :meth:`kill`)."""
        await asyncio.to_thread(self.servers[index].start, 120.0)

    async def kill_and_restart(self, index: int) -> None:
        """SIGKILL process ``index``, wait for its end, start it again on its port."""
        await self.kill(index)
        await self.restart(index)

    def close(self) -> None:
        for server in self.servers:
            server.close()

    def logs(self) -> str:
        return "\n".join(f"--- server {i}\n{s.log()[-4000:]}" for i, s in enumerate(self.servers))


def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC request body."""
    return {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}


def message(text: str, task_id: str = "", **configuration: Any) -> dict[str, Any]:
    """SendMessage params: one user text part, optional task id and configuration."""
    body: dict[str, Any] = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER"}
    body["parts"] = [{"text": text}]
    if task_id:
        body["taskId"] = task_id
    params: dict[str, Any] = {"message": body}
    if configuration:
        params["configuration"] = configuration
    return params


def state_of(result: dict[str, Any]) -> str:
    """The task state a StreamResponse (or Task) JSON carries, ``""`` when it carries none."""
    holder = result.get("task") or result.get("statusUpdate") or result
    return str(holder.get("status", {}).get("state", ""))


@dataclass
class StreamRecord:
    """What one followed stream received, over all its connections.

    Attributes:
        label: What the load meant it for.
        task_id: The task followed (``""`` until the first event showed it).
        ids: The SSE id of every event received, as numbers, in order.
        bodies: Each event's ``result``, in the same order.
        snapshots: Indexes in ``ids`` of events that began a SubscribeToTask without
            ``Last-Event-ID`` (a Task built from the snapshot, not a logged event).
        connections: The process index of each connection that answered.
        finished: The stream reached its end (an event leaving the task settled).
        refused: The JSON-RPC error answered instead of a stream, if any.
        problems: Anything the reader found wrong.
        ended: Set once :func:`follow` returned.
        received_at: The ``time.monotonic()`` at which each event arrived.
        errors_end: An error event ends the stream as an answer (:attr:`error`), not a problem.
        error: The error event that ended the stream, with ``errors_end``.
        refused_status: The HTTP status of the answer that refused the stream.
        refused_retry_after: Its ``Retry-After`` header, if any.
    """

    label: str
    task_id: str = ""
    ids: list[int] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    snapshots: list[int] = field(default_factory=list)
    connections: list[int] = field(default_factory=list)
    finished: bool = False
    refused: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    ended: bool = False
    received_at: list[float] = field(default_factory=list)
    errors_end: bool = False
    error: dict[str, Any] | None = None
    refused_status: int = 0
    refused_retry_after: str | None = None

    @property
    def resumes(self) -> int:
        return max(0, len(self.connections) - 1)


async def follow(
    session: aiohttp.ClientSession,
    urls: list[str],
    start: int,
    record: StreamRecord,
    body: dict[str, Any],
    patience: float,
) -> StreamRecord:
    """Read a stream to its end, resuming on the next process after each drop.

    Args:
        session: The HTTP session.
        urls: The JSON-RPC URL of every process.
        start: The index of the process to open the stream on.
        record: Where the events go; ``record.task_id`` set means the stream follows that task.
        body: The first request (SendStreamingMessage or SubscribeToTask).
        patience: Seconds to keep trying to reach a process, and to wait for an event.

    Returns:
        ``record``, finished, refused, or with a problem noted.
    """
    try:
        index = start
        loop = asyncio.get_running_loop()
        deadline = loop.time() + patience
        while not (record.finished or record.refused or record.error or record.problems):
            headers = {**HEADERS, "Accept": "text/event-stream"}
            if record.ids:
                headers["Last-Event-ID"] = str(record.ids[-1])
            try:
                await _read(session, urls[index], index, record, body, headers, patience)
                deadline = loop.time() + patience
            except aiohttp.SocketTimeoutError:
                record.problems.append(f"no event for {patience} s on process {index}")
            except (aiohttp.ClientError, ConnectionError):
                pass  # the process is down or went down: resume on the next one
            if not record.task_id:
                return record  # dropped before the task was acknowledged
            if loop.time() > deadline:
                record.problems.append("no process answered")
            body = rpc("SubscribeToTask", {"id": record.task_id})
            index = (index + 1) % len(urls)
            await asyncio.sleep(0.02)
        return record
    finally:
        record.ended = True


async def _read(
    session: aiohttp.ClientSession,
    url: str,
    index: int,
    record: StreamRecord,
    body: dict[str, Any],
    headers: dict[str, str],
    patience: float,
) -> None:
    """One connection of :func:`follow`."""
    plain_subscribe = body["method"] == "SubscribeToTask" and "Last-Event-ID" not in headers
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=5, sock_read=patience)
    async with session.post(url, json=body, headers=headers, timeout=timeout) as response:
        if response.content_type != "text/event-stream":
            answer = await response.json(content_type=None)
            record.refused = answer.get("error") or {"answer": answer}
            record.refused_status = response.status
            record.refused_retry_after = response.headers.get("Retry-After")
            return
        record.connections.append(index)
        decoder = SSEDecoder()
        async for chunk in response.content.iter_any():
            for sse in decoder.feed(chunk):
                if _event(record, sse.id, sse.data, plain_subscribe):
                    return
                plain_subscribe = False


def _event(record: StreamRecord, sse_id: str | None, data: str, plain_subscribe: bool) -> bool:
    """Record one event; whether the stream has ended with it."""
    answer = json.loads(data)
    if "result" not in answer and record.errors_end:
        record.error = answer.get("error") or {"answer": answer}
        return True
    if "result" not in answer:
        record.problems.append(f"error event {answer.get('error')} after ids {record.ids[-3:]}")
        return True
    result = answer["result"]
    if not (sse_id or "").isdigit():
        record.problems.append(f"event without a numeric id: {sse_id!r}")
        return True
    if plain_subscribe:
        record.snapshots.append(len(record.ids))
    record.ids.append(int(sse_id or "0"))
    record.bodies.append(result)
    record.received_at.append(time.monotonic())
    if not record.task_id:
        task = result.get("task") or {}
        update = result.get("statusUpdate") or result.get("artifactUpdate") or {}
        record.task_id = str(task.get("id") or update.get("taskId") or "")
    if state_of(result) in SETTLED and not plain_subscribe:
        record.finished = True
    return record.finished


async def ready(record: StreamRecord, count: int) -> None:
    """Return once ``record`` has ``count`` events, or once its stream will have no more."""
    async with asyncio.timeout(PATIENCE):
        while len(record.ids) < count and not record.ended:
            await asyncio.sleep(0.02)
