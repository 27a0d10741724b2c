"""The push delivery worker: sends the outbox to the webhooks, at least once, in order per lane.

:class:`PushDeliverer` only reads and retires outbox rows, which the store wrote with the task
change they report, so a crash loses nothing. It reads by lanes (:mod:`._lanes`) or, when the
store shares its outbox between processes, by claims (:mod:`._claimed`). See
docs/internals/push.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from a2a_wire import __version__, netguard
from a2a_wire.server.push._backlog import Backlog
from a2a_wire.server.push._claimed import ClaimReader
from a2a_wire.server.push._lanes import LaneReader
from a2a_wire.server.push._observed import PushTelemetry
from a2a_wire.server.push._sender import Sender
from a2a_wire.server.push._settings import PushSettings
from a2a_wire.server.store import PushClaims, PushStore

__all__ = ["PUSH_DELIVERER_KEY", "PushDeliverer"]


class PushDeliverer:
    """Sends the push outbox of one store; start it after the store opened.

    Args:
        store: The task store holding configs and outbox; read by claims when it offers them.
        settings: Timeouts, retry policy, address allowlist, concurrency and the claim poll.
        session: An aiohttp session to use instead of an owned, address-guarded one (tests);
            the caller closes it, and only its own connector guards addresses then.
        observed: Spans and metrics of the attempts; none when omitted.
    """

    def __init__(
        self,
        store: PushStore,
        settings: PushSettings,
        *,
        session: aiohttp.ClientSession | None = None,
        observed: PushTelemetry | None = None,
    ) -> None:
        self._settings = settings
        self._session = session
        self._owns_session = session is None
        self._sender = Sender(store, settings, observed)
        self._observed = observed
        self._backlog = Backlog(store)
        limit = settings.max_concurrent
        self._worker: LaneReader | ClaimReader
        if isinstance(store, PushClaims):
            self._worker = ClaimReader(store, self._sender, limit, settings.poll_seconds)
        else:
            self._worker = LaneReader(store, self._sender, limit)
        self._reader: asyncio.Task[None] | None = None

    @property
    def claims(self) -> bool:
        """Whether the outbox is read by claims (shared with other processes)."""
        return isinstance(self._worker, ClaimReader)

    def wake(self) -> None:
        """Tell the worker that rows were added (cheap; wakes coalesce)."""
        self._worker.wake()

    async def start(self) -> None:
        """Start the reader; rows left by a previous process are picked up at once."""
        if self._reader is not None:
            raise RuntimeError("the push deliverer is already started")
        if self._session is None:
            connector = netguard.GuardedConnector(
                self._settings.allowlist,
                resolver=self._settings.resolver,
                limit=self._settings.max_concurrent,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                trust_env=False,
                cookie_jar=aiohttp.DummyCookieJar(),
                headers={"User-Agent": f"a2a-wire/{__version__} push"},
            )
        self._sender.session = self._session
        if self._observed is not None:
            self._backlog.start()
            self._observed.watch(self._backlog)
        self._worker.wake()
        self._reader = asyncio.create_task(self._worker.run(), name="a2a-push-reader")

    async def close(self) -> None:
        """Stop the reader and every delivery, and close the owned session; rows stay stored."""
        reader, self._reader = self._reader, None
        if self._observed is not None:
            self._observed.watch(None)
            self._backlog.stop()
        if reader is not None:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        if self._owns_session and self._session is not None:
            await self._session.close()
        self._session = self._sender.session = None

    async def lifecycle(self, app: web.Application) -> AsyncIterator[None]:
        """An ``app.cleanup_ctx`` entry: start with the app, close at cleanup."""
        await self.start()
        try:
            yield
        finally:
            await self.close()

    @property
    def busy(self) -> bool:
        """Whether any delivery is at work (sending, waiting to retry, or reading the outbox)."""
        return self._worker.busy


PUSH_DELIVERER_KEY = web.AppKey("a2a_wire.push_deliverer", PushDeliverer)
"""The application's push delivery worker (present when the card declares push)."""
