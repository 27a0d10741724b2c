"""Closed-loop load generator for benchmarks/server.py, written with aiohttp.

``concurrency`` workers share one keep-alive connection pool; each sends a request, waits for the
whole answer, checks it, and sends the next, until the deadline. Every answer is checked:

* SendMessage (``returnImmediately`` unset, so the call blocks): HTTP 200, a JSON-RPC response
  with the request's id whose ``result.task`` is COMPLETED and holds the one text artifact.
* SendStreamingMessage: HTTP 200, ``text/event-stream``, exactly three events, each a JSON-RPC
  response with the request's id, whose results are the task, then an ``artifactUpdate`` with the
  text artifact, then a ``statusUpdate`` to COMPLETED, all naming the same task.

Anything else (a wrong shape, an HTTP or connection error) is counted as an error and the
first few are kept for the report. Latency runs from just before the request is sent to the end
of the answer; for a stream, the time to the first event is recorded as well. The SSE parser is
a few lines of its own rather than a2a_wire's decoder, so the checks do not trust the code under
test.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

ARTIFACT_TEXT = "done"
SEND = "SendMessage"
STREAM = "SendStreamingMessage"
HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}
COMPLETED = "TASK_STATE_COMPLETED"
KEEP_ERRORS = 5


@dataclass
class LoadResult:
    """What one load run saw."""

    requests: int = 0
    errors: int = 0
    elapsed: float = 0.0
    latencies: list[float] = field(default_factory=list)
    first_event: list[float] = field(default_factory=list)
    samples: list[str] = field(default_factory=list)

    def error(self, what: str) -> None:
        self.errors += 1
        if len(self.samples) < KEEP_ERRORS:
            self.samples.append(what[:300])

    def merge(self, other: LoadResult) -> None:
        self.requests += other.requests
        self.errors += other.errors
        self.elapsed += other.elapsed
        self.latencies += other.latencies
        self.first_event += other.first_event
        self.samples += other.samples[: KEEP_ERRORS - len(self.samples)]


class CheckError(Exception):
    """An answer of the wrong shape."""


def _body(method: str, rid: int) -> bytes:
    message = {
        "messageId": f"bench-{rid}",
        "role": "ROLE_USER",
        "parts": [{"text": f"request {rid}"}],
    }
    call = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {"message": message}}
    return orjson.dumps(call)


def _expect(ok: bool, what: str) -> None:
    if not ok:
        raise CheckError(what)


def _check_artifact(artifact: Any) -> None:
    _expect(isinstance(artifact, dict), "artifact is not an object")
    parts = artifact.get("parts")
    _expect(
        isinstance(parts, list) and len(parts) == 1 and parts[0].get("text") == ARTIFACT_TEXT,
        f"artifact is not the one text part: {artifact!r}",
    )


def check_send(data: bytes, rid: int) -> None:
    """Check a SendMessage answer: a completed task with the one artifact."""
    answer = orjson.loads(data)
    _expect(answer.get("jsonrpc") == "2.0" and answer.get("id") == rid, "wrong envelope or id")
    _expect("result" in answer, f"no result: {data[:200]!r}")
    task = answer["result"].get("task")
    _expect(isinstance(task, dict), "result is not a task")
    _expect(task.get("status", {}).get("state") == COMPLETED, "task is not COMPLETED")
    artifacts = task.get("artifacts")
    _expect(isinstance(artifacts, list) and len(artifacts) == 1, "not exactly one artifact")
    _check_artifact(artifacts[0])


def sse_events(text: bytes) -> list[bytes]:
    """The ``data`` of each event in a complete SSE body (comments and other fields ignored)."""
    events: list[bytes] = []
    data: list[bytes] = []
    for line in text.replace(b"\r\n", b"\n").split(b"\n"):
        if not line:
            if data:
                events.append(b"\n".join(data))
                data = []
        elif line.startswith(b"data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(b" ") else value)
    if data:
        raise CheckError("stream ended inside an event")
    return events


def check_stream(events: list[bytes], rid: int) -> None:
    """Check a SendStreamingMessage stream: task, artifact update, COMPLETED status update."""
    _expect(len(events) == 3, f"{len(events)} events instead of 3")
    results = []
    for event in events:
        answer = orjson.loads(event)
        _expect(answer.get("jsonrpc") == "2.0" and answer.get("id") == rid, "wrong envelope")
        _expect("result" in answer, f"no result: {event[:200]!r}")
        results.append(answer["result"])
    task, artifact, status = (r.get(k) for r, k in zip(results, _STREAM_KEYS, strict=True))
    _expect(isinstance(task, dict), "first event is not the task")
    _expect(isinstance(artifact, dict), "second event is not an artifactUpdate")
    _expect(isinstance(status, dict), "third event is not a statusUpdate")
    _check_artifact(artifact.get("artifact"))
    _expect(status.get("status", {}).get("state") == COMPLETED, "final status is not COMPLETED")
    _expect(artifact.get("taskId") == status.get("taskId") == task.get("id"), "task ids differ")


_STREAM_KEYS = ("task", "artifactUpdate", "statusUpdate")
_IDS = itertools.count(1)  # request ids (and message ids) never repeat within a process


async def _send_once(session: aiohttp.ClientSession, url: str, rid: int, out: LoadResult) -> None:
    start = time.perf_counter()
    async with session.post(url, data=_body(SEND, rid), headers=HEADERS) as response:
        data = await response.read()
    out.latencies.append(time.perf_counter() - start)
    _expect(response.status == 200, f"HTTP {response.status}: {data[:200]!r}")
    check_send(data, rid)


async def _stream_once(session: aiohttp.ClientSession, url: str, rid: int, out: LoadResult) -> None:
    start = time.perf_counter()
    first: float | None = None
    chunks: list[bytes] = []
    head = b""
    async with session.post(url, data=_body(STREAM, rid), headers=HEADERS) as response:
        _expect(response.status == 200, f"HTTP {response.status}")
        _expect(response.content_type == "text/event-stream", "not text/event-stream")
        async for chunk in response.content.iter_any():
            chunks.append(chunk)
            if first is None:
                head += chunk
                if b"\n\n" in head or b"\r\n\r\n" in head:
                    first = time.perf_counter()
    end = time.perf_counter()
    out.latencies.append(end - start)
    out.first_event.append((first or end) - start)
    check_stream(sse_events(b"".join(chunks)), rid)


async def _worker(
    session: aiohttp.ClientSession, url: str, kind: str, more: Callable[[], bool], out: LoadResult
) -> None:
    once = _send_once if kind == SEND else _stream_once
    while more():
        try:
            await once(session, url, next(_IDS), out)
        except (
            CheckError,
            aiohttp.ClientError,
            ValueError,
            LookupError,
            TypeError,
            AttributeError,
        ) as exc:
            out.error(f"{type(exc).__name__}: {exc}")
        except TimeoutError:
            out.error("timeout")
        out.requests += 1


async def run_load(
    session: aiohttp.ClientSession,
    url: str,
    kind: str,
    concurrency: int,
    duration: float,
    count: int | None = None,
) -> LoadResult:
    """Keep ``concurrency`` requests of ``kind`` in flight for ``duration`` seconds.

    Args:
        session: A session whose connector allows at least ``concurrency`` connections.
        url: The server's JSON-RPC endpoint.
        kind: :data:`SEND` or :data:`STREAM`.
        concurrency: Workers, each with one request in flight.
        duration: Seconds; requests in flight at the deadline are finished and counted.
        count: If given, stop after exactly this many requests instead (``duration`` is then
            only a safety limit).

    Returns:
        Counts, latencies and errors.
    """
    out = LoadResult()
    start = time.perf_counter()
    deadline = start + duration
    left = [count]

    def more() -> bool:
        if left[0] is None:
            return time.perf_counter() < deadline
        left[0] -= 1
        return left[0] >= 0 and time.perf_counter() < deadline

    workers = [_worker(session, url, kind, more, out) for _ in range(concurrency)]
    await asyncio.gather(*workers)
    out.elapsed = time.perf_counter() - start
    return out


async def run_checked(url: str, kind: str, count: int, concurrency: int = 16) -> None:
    """Send exactly ``count`` requests of ``kind``; exit the benchmark on any bad answer."""
    async with new_session(concurrency) as session:
        result = await run_load(session, url, kind, concurrency, 600.0, count=count)
    if result.errors:
        raise SystemExit(f"{result.errors} bad answers, e.g. {result.samples[:2]}")


def new_session(concurrency: int) -> aiohttp.ClientSession:
    """A session with a keep-alive pool of ``concurrency`` connections and a 30 s timeout."""
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=30),
        skip_auto_headers={"User-Agent"},
    )
