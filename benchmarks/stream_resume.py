"""Resume benchmark: a subscriber that drops its stream every 100 events and resumes with Last-Event-ID.

Run ``.venv/bin/python benchmarks/stream_resume.py`` (well under a minute) or ``--quick`` (1,000
events).

It needs a server that numbers the events of a task (SSE ``id:`` = the task's event sequence
number, on every stream event) and answers SubscribeToTask with a ``Last-Event-ID`` header with
exactly the events after that number, then the live ones (docs/client.md, "Resuming streams").
A server without that fails the run with a clear message ("server does not honour
Last-Event-ID") and exit status 1.

For each store (``ours-sqlite``, ``ours-memory``: benchmarks/_servers.py ``--agent chunks``, in
its own process pinned to CPU 0, this process on CPU 1), one SendStreamingMessage asks for an
artifact of ``--events`` chunks (10,000; chunk ``i`` starts with its number). The subscriber
reads the stream's raw SSE (the sans-IO decoder, so that it sees exactly what the server sent),
closes the connection after every ``--every`` (100) events and opens SubscribeToTask with
``Last-Event-ID`` set to the id of the last event it read. The agent does not wait for it: a
resume is served from the log when the agent is ahead, live when it is not.

Checked: the ids are 1, 2, 3, ... with no gap and no repeat across all connections; the first
event is the Task and the last the COMPLETED status; the chunks arrive once each, in order,
all of them. Reported: the time to resume, from opening the new connection to receiving its
first event (the first one missed), p50 / p99 / max over all resumes, and the whole run's time.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from _servers import chunk_text
from server import pin_load_generator, running

from a2a_wire._protocol.sse import SSEDecoder

STORES = ("ours-sqlite", "ours-memory")
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json", "Accept": "text/event-stream"}
NOT_HONOURED = "server does not honour Last-Event-ID"


class ResumeError(AssertionError):
    """The server broke the resumption rule (or the stream's shape)."""


@dataclass
class Follower:
    """What the subscriber has seen, across all its connections."""

    events: int
    last_id: int = 0
    received: int = 0
    chunks: int = 0
    task_id: str = ""
    state: str = ""
    resumes: list[float] = field(default_factory=list)  # seconds to the first event

    def see(self, event_id: str | None, result: dict[str, Any], connection: int) -> None:
        """Check one event against everything before it."""
        if event_id is None or not event_id.isdigit():
            raise ResumeError(f"{NOT_HONOURED}: its stream events carry no SSE id ({event_id!r})")
        seq = int(event_id)
        if "task" in result and connection > 0:
            raise ResumeError(
                f"{NOT_HONOURED}: asked for the events after id {self.last_id}, it sent a Task "
                f"snapshot (id {seq}) first"
            )
        first = self.last_id == 0  # the stream's opening Task: the task as of its own id
        if seq != self.last_id + 1 and not first:
            what = "repeated" if seq <= self.last_id else "skipped"
            raise ResumeError(f"event id {seq} after {self.last_id}: events {what}")
        if first and "task" not in result:
            raise ResumeError(f"the first event (id {seq}) is not the Task")
        self.last_id = seq
        self.received += 1
        if "task" in result:
            task = result["task"]
            self.task_id, self.state = task["id"], task["status"]["state"]
            for artifact in task.get("artifacts", []):
                self._chunks(artifact["parts"])
        elif "statusUpdate" in result:
            self.state = result["statusUpdate"]["status"]["state"]
        elif "artifactUpdate" in result:
            self._chunks(result["artifactUpdate"]["artifact"]["parts"])

    def _chunks(self, parts: list[dict[str, Any]]) -> None:
        for part in parts:
            if part.get("text") != chunk_text(self.chunks):
                raise ResumeError(f"chunk {self.chunks} is {part.get('text')!r}")
            self.chunks += 1

    @property
    def finished(self) -> bool:
        return self.state == "TASK_STATE_COMPLETED"


def _call(rid: int, method: str, params: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


def _first_call(events: int) -> bytes:
    message = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": str(events)}],
    }
    return _call(1, "SendStreamingMessage", {"message": message})


async def connection(
    session: aiohttp.ClientSession, url: str, follower: Follower, n: int, every: int
) -> None:
    """One connection: read up to ``every`` events (or to the end), then drop it."""
    headers = dict(HEADERS)
    if n:
        headers["Last-Event-ID"] = str(follower.last_id)
        body = _call(n + 1, "SubscribeToTask", {"id": follower.task_id})
    else:
        body = _first_call(follower.events)
    started, seen, decoder = time.perf_counter(), 0, SSEDecoder()
    async with session.post(url, data=body, headers=headers) as response:
        if response.status != 200:
            raise ResumeError(f"HTTP {response.status}: {await response.text()}")
        async for data in response.content.iter_any():
            for event in decoder.feed(data):
                answer = orjson.loads(event.data)
                if "result" not in answer:
                    raise ResumeError(f"error event: {answer.get('error')}")
                if seen == 0 and n:
                    follower.resumes.append(time.perf_counter() - started)
                follower.see(event.id, answer["result"], n)
                seen += 1
                if seen == every or follower.finished:
                    return  # leaving the block closes the connection: the drop
    if not follower.finished:
        raise ResumeError(f"stream ended after {seen} events, before the task finished")


async def follow(url: str, events: int, every: int) -> tuple[Follower, float]:
    """The whole run: the first stream, then resumes until the task's COMPLETED status."""
    follower = Follower(events)
    started = time.perf_counter()
    connector = aiohttp.TCPConnector(force_close=True)  # every drop is a real new connection
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout()) as s:
        n = 0
        while not follower.finished:
            await connection(s, url, follower, n, every)
            n += 1
            if n > events // every + 10:
                raise ResumeError(f"no end after {n} connections")
    if follower.chunks != events:
        raise ResumeError(f"{follower.chunks} chunks arrived, {events} were sent")
    return follower, time.perf_counter() - started


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def report(store: str, follower: Follower, elapsed: float) -> None:
    times = sorted(follower.resumes)
    p50 = statistics.median(times) if times else 0.0
    p99 = times[min(len(times) - 1, round(0.99 * (len(times) - 1)))] if times else 0.0
    print(
        f"| {store} | {follower.received:,} | {follower.last_id:,} | {follower.chunks:,} "
        f"| {len(times)} | {_ms(p50)} "
        f"| {_ms(p99)} | {_ms(times[-1] if times else 0.0)} | {elapsed:.2f} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 events")
    parser.add_argument("--events", type=int, default=None, help="artifact chunks (10,000)")
    parser.add_argument("--every", type=int, default=100, help="events per connection")
    parser.add_argument("--stores", default=",".join(STORES), help="comma-separated subset")
    args = parser.parse_args()
    events = args.events or (1_000 if args.quick else 10_000)
    pin = pin_load_generator()
    print(f"workload: {events:,} chunks; the subscriber drops every {args.every} events")
    print(
        "| store | events | last id | chunks | resumes | resume p50 ms | p99 ms | max ms | run s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    failed = 0
    with tempfile.TemporaryDirectory(prefix="a2a-resume-") as tmp:
        for store in [s for s in args.stores.split(",") if s]:
            db = Path(tmp, f"{store}.sqlite3")
            with running(store, pin, db=db, extra=["--agent", "chunks"]) as server:
                try:
                    follower, elapsed = asyncio.run(follow(server.url, events, args.every))
                except ResumeError as exc:
                    print(f"| {store} | FAILED: {exc} |")
                    failed += 1
                    continue
            report(store, follower, elapsed)
    print()
    print("every event exactly once, in order: " + ("NO" if failed else "yes"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
