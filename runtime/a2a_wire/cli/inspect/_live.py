"""The page's live channel: one ``text/event-stream`` that carries everything as it happens.

The page opens it once (``EventSource``); :meth:`LiveHub.publish` sends each item to every open
channel as an SSE event whose ``event`` field is the kind (``traffic``, ``stream``,
``stream-end``, ``push``) and whose ``data`` is the item as JSON. A page that connects gets the
traffic records kept so far first, so a reload shows the past as well.

A page that reads too slowly is not allowed to make the inspector buffer without bound: when its
queue is full, its channel is closed (the browser reconnects by itself and gets the kept traffic
again, marked as a resend).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from aiohttp import web

from a2a_wire import codec
from a2a_wire._protocol.sse import encode_comment, encode_event

__all__ = ["LiveHub"]

_CLOSED: tuple[str, Any] = ("", None)


class LiveHub:
    """Fans items out to the open live channels.

    Attributes:
        backlog: Returns the traffic records to send a channel when it opens.

    Args:
        queue_size: Items buffered per channel before a slow page is cut off.
        keepalive: Seconds of silence after which a comment keeps the connection open.
    """

    def __init__(self, *, queue_size: int = 100_000, keepalive: float = 15.0) -> None:
        self.backlog: Callable[[], list[dict[str, Any]]] = list
        self._size = queue_size
        self._keepalive = keepalive
        self._queues: set[asyncio.Queue[tuple[str, Any]]] = set()

    @property
    def channels(self) -> int:
        """How many channels are open."""
        return len(self._queues)

    def publish(self, kind: str, item: Any) -> None:
        """Send ``item`` to every channel (without waiting)."""
        for queue in list(self._queues):
            try:
                queue.put_nowait((kind, item))
            except asyncio.QueueFull:
                self._queues.discard(queue)
                with contextlib.suppress(asyncio.QueueFull):
                    queue.get_nowait()
                    queue.put_nowait(_CLOSED)

    def close(self) -> None:
        """End every channel (at shutdown)."""
        for queue in list(self._queues):
            self._queues.discard(queue)
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(_CLOSED)

    async def handler(self, request: web.Request) -> web.StreamResponse:
        """``GET .../api/live``: the channel of one page."""
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(self._size)
        self._queues.add(queue)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
        )
        try:
            await response.prepare(request)
            for record in self.backlog():
                await response.write(_event("traffic", record))
            await response.write(_event("ready", {}))
            while True:
                try:
                    async with asyncio.timeout(self._keepalive):
                        kind, item = await queue.get()
                except TimeoutError:
                    await response.write(encode_comment("keepalive"))
                    continue
                if not kind:
                    break
                await response.write(_event(kind, item))
        except ConnectionResetError:
            pass  # the page went away
        finally:
            self._queues.discard(queue)
        return response


def _event(kind: str, item: Any) -> bytes:
    return encode_event(codec.dumps(item), event=kind)
