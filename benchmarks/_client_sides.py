"""One client of benchmarks/client.py in a process of its own, measured on command.

Run as ``python benchmarks/_client_sides.py SIDE --url BASE --events N [--core C]``. SIDE is:

``a2a-wire``
    :class:`a2a_wire.client.A2AClient` from :meth:`~a2a_wire.client.A2AClient.connect` (the card
    fetched once), ``send_message`` and ``send_streaming_message``; 127.0.0.1 allowlisted.
``raw-aiohttp``
    one ``aiohttp.ClientSession`` posting the same bytes with the same headers (the envelope
    encoded with a2a_wire.codec) and decoding each answer to the same typed result
    (``SendMessageResponse`` / ``StreamResponse`` ``from_dict``, after checking the envelope
    and its id); the stream is cut into SSE events at blank lines, its ``data:`` lines decoded.
``a2a-sdk``
    a2a-sdk's client (``ClientFactory`` on the card from ``A2ACardResolver``, one
    ``httpx.AsyncClient``), blocking and streaming, as tests/interop/run_sdk_client.py builds it.

The process checks its first answers (the task, the number of stream events), prints ``ready``
and the folder its client's package was imported from, then reads commands from stdin, one a
line: ``send C SECONDS CALLS`` (blocking SendMessage, ``C`` at a time, for that long, or that
many calls if ``CALLS`` is not 0) or ``stream SECONDS CALLS`` (streams one after the other)
prints one JSON line: the process CPU seconds used (``time.process_time``: all threads), the
calls and events done, the errors, the wall time, and the CPU the given core spent on other
processes meanwhile (from /proc/stat). ``quit`` (or the end of stdin) closes the clients. Only the public
API of a2a_wire is used, so an earlier checkout's interpreter can run this file (``--before``).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

SIDES = ("a2a-wire", "raw-aiohttp", "a2a-sdk")

Call = Callable[[], Awaitable[int]]
"""One blocking call (returns 1) or one whole stream (returns its events)."""


def core_busy(core: int | None) -> float | None:
    """Seconds CPU ``core`` has been busy since boot (benchmarks/server.py reads /proc/stat)."""
    from server import _core_busy

    return None if core is None else _core_busy(core)


# --- the three sides -----------------------------------------------------------------------------


class Side:
    """A side's two calls, and what closes it."""

    events: int  # artifact chunks per stream

    def counted(self, n: int) -> int:
        """``n``, the events of one stream, once checked: the chunks, the task, the status."""
        if n != self.events + 2:
            _fail(f"stream of {n} events, expected {self.events + 2}")
        return n

    async def send(self) -> int:
        """One blocking SendMessage, its answer decoded and checked; returns 1."""
        raise NotImplementedError

    async def stream(self) -> int:
        """One whole SendStreamingMessage, every event decoded; returns the number of events."""
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


def _fail(what: str) -> None:
    raise AssertionError(what)


class Wire(Side):
    """a2a-wire's A2AClient (public API only)."""

    def __init__(self, client: Any, events: int) -> None:
        from a2a_wire.types import Message, Part, Role, SendMessageRequest

        self.client = client
        self.events = events
        message = Message(message_id="m1", role=Role.USER, parts=[Part(text="hello")])
        self.request = SendMessageRequest(message=message)

    @classmethod
    async def open(cls, base: str, events: int) -> Wire:
        from a2a_wire.client import A2AClient, ClientSettings

        settings = ClientSettings(allow=["127.0.0.1"])
        return cls(await A2AClient.connect(base, settings=settings), events)

    async def send(self) -> int:
        answer = await self.client.send_message(self.request)
        if answer.task is None:
            _fail("SendMessage answered no task")
        return 1

    async def stream(self) -> int:
        n = 0
        async with self.client.send_streaming_message(self.request) as events:
            async for _ in events:
                n += 1
        return self.counted(n)

    async def close(self) -> None:
        await self.client.close()


class Raw(Side):
    """aiohttp with nothing around it but the codec: the floor the client is measured against."""

    def __init__(self, base: str, events: int) -> None:
        import aiohttp

        from a2a_wire import codec
        from a2a_wire.types import Message, Part, Role, SendMessageRequest

        self.session = aiohttp.ClientSession()
        self.url = base
        self.events = events
        self.codec = codec
        message = Message(message_id="m1", role=Role.USER, parts=[Part(text="hello")])
        self.request = SendMessageRequest(message=message)
        self.ids = itertools.count(1)
        common = {"A2A-Version": "1.0", "Content-Type": "application/json"}
        self.json_headers = {**common, "Accept": "application/json", "User-Agent": "raw"}
        self.sse_headers = {**common, "Accept": "text/event-stream", "User-Agent": "raw"}

    def _body(self, rid: int, method: str) -> bytes:
        params = self.request.to_dict()
        return self.codec.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})

    def _result(self, obj: Any, rid: int) -> Any:
        if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0" or obj.get("id") != rid:
            _fail(f"not the answer to request {rid}: {str(obj)[:200]}")
        return obj["result"]

    async def send(self) -> int:
        from a2a_wire.types import SendMessageResponse

        rid = next(self.ids)
        body = self._body(rid, "SendMessage")
        async with self.session.post(self.url, data=body, headers=self.json_headers) as response:
            data = await response.read()
        if response.status != 200:
            _fail(f"HTTP {response.status}")
        answer = SendMessageResponse.from_dict(self._result(self.codec.loads(data), rid))
        if answer.task is None:
            _fail("SendMessage answered no task")
        return 1

    async def stream(self) -> int:
        from a2a_wire.types import StreamResponse

        rid = next(self.ids)
        body = self._body(rid, "SendStreamingMessage")
        n, buf = 0, b""
        async with self.session.post(self.url, data=body, headers=self.sse_headers) as response:
            async for chunk in response.content.iter_any():
                *blocks, buf = (buf + chunk).split(b"\n\n")
                for block in blocks:
                    for line in block.split(b"\n"):
                        if line.startswith(b"data:"):
                            obj = self.codec.loads(line[5:])
                            StreamResponse.from_dict(self._result(obj, rid))
                            n += 1
        return self.counted(n)

    async def close(self) -> None:
        await self.session.close()


class Sdk(Side):
    """a2a-sdk 1.3.0's client over httpx."""

    def __init__(self, http: Any, blocking: Any, streaming: Any, events: int) -> None:
        from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest

        self.http, self.blocking, self.streaming = http, blocking, streaming
        self.events = events
        message = Message(message_id="m1", role=Role.ROLE_USER, parts=[Part(text="hello")])
        self.request = SendMessageRequest(message=message)

    @classmethod
    async def open(cls, base: str, events: int) -> Sdk:
        import httpx
        from a2a.client import A2ACardResolver, ClientConfig, ClientFactory

        http = httpx.AsyncClient(timeout=120.0)  # not 5 s: under callgrind a call is slow
        card = await A2ACardResolver(http, base).get_agent_card()
        blocking = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        streaming = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        return cls(http, blocking, streaming, events)

    async def send(self) -> int:
        answers = [event async for event in self.blocking.send_message(self.request)]
        if len(answers) != 1 or not answers[0].HasField("task"):
            _fail("SendMessage answered no task")
        return 1

    async def stream(self) -> int:
        n = 0
        async for _ in self.streaming.send_message(self.request):
            n += 1
        return self.counted(n)

    async def close(self) -> None:
        await self.blocking.close()
        await self.streaming.close()
        await self.http.aclose()


async def open_side(side: str, base: str, events: int) -> Side:
    if side == "a2a-wire":
        return await Wire.open(base, events)
    if side == "raw-aiohttp":
        return Raw(base, events)
    return await Sdk.open(base, events)


# --- measurement ---------------------------------------------------------------------------------


async def batch(
    call: Call, concurrency: int, seconds: float, calls: int, core: int | None
) -> dict[str, Any]:
    """Run ``call`` ``concurrency`` at a time for ``seconds``, or ``calls`` times if it is not 0;
    what it cost this process."""
    loop = asyncio.get_running_loop()
    done = [0, 0, 0]  # calls, events, started
    errors: list[str] = []

    def more() -> bool:
        if errors:
            return False
        done[2] += 1
        return done[2] <= calls if calls else loop.time() < end

    async def worker() -> None:
        while more():
            try:
                events = await call()
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}"[:300])
                return
            done[0] += 1
            done[1] += events

    busy0, wall0, cpu0 = core_busy(core), time.perf_counter(), time.process_time()
    end = loop.time() + seconds
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu1, wall1, busy1 = time.process_time(), time.perf_counter(), core_busy(core)
    cpu = cpu1 - cpu0
    other = None if busy0 is None or busy1 is None else max(0.0, busy1 - busy0 - cpu)
    return {
        "cpu": cpu,
        "wall": wall1 - wall0,
        "calls": done[0],
        "events": done[1],
        "errors": len(errors),
        "error": errors[0] if errors else "",
        "other_cpu": other,
    }


async def serve_commands(side: Side, core: int | None) -> None:
    """Answer the commands of stdin (see the module docstring) until ``quit`` or its end."""
    loop = asyncio.get_running_loop()
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).split()
        if not line or line[0] == "quit":
            return
        if line[0] == "send":
            result = await batch(side.send, int(line[1]), float(line[2]), int(line[3]), core)
        else:
            result = await batch(side.stream, 1, float(line[1]), int(line[2]), core)
        print(json.dumps(result), flush=True)


def origin(name: str) -> str:
    """Where this side's client comes from: the a2a_wire package's folder, or the SDK's."""
    module = sys.modules["a2a" if name == "a2a-sdk" else "a2a_wire"]
    return str(Path(module.__file__ or "?").parent)


async def run(name: str, base: str, events: int, core: int | None) -> None:
    side = await open_side(name, base, events)
    try:
        await side.send()  # checks the answers before anything is timed
        await side.stream()
        print("ready", origin(name), flush=True)
        await serve_commands(side, core)
    finally:
        await side.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("side", choices=SIDES)
    parser.add_argument("--url", required=True, help="the fixed-answer server's base URL")
    parser.add_argument("--events", type=int, required=True, help="artifact chunks per stream")
    parser.add_argument("--core", type=int, default=None, help="CPU to pin this process to")
    args = parser.parse_args()
    if args.core is not None:
        os.sched_setaffinity(0, {args.core})
    asyncio.run(run(args.side, args.url, args.events, args.core))


if __name__ == "__main__":
    main()
