"""The probes of a load balancer or an orchestrator: ``GET /healthz`` and ``GET /readyz``.

``/healthz`` is liveness: HTTP 200 while the event loop answers, with no store call, so a
process whose database is down is not restarted for it. ``/readyz`` is readiness: one
:meth:`~a2a_wire.server.store.EventLogStore.ping` (a read of the tables requests need, so a
table locked by another session is not ready either) bounded by
``ServerSettings.readiness_timeout_seconds``; HTTP 200 when it succeeds, else 503 with
``Retry-After`` (``store_retry_after_seconds``), and 503 from the start of shutdown on. Both
answer small JSON objects (``{"status": "ok"}``, ``{"status": "unavailable", "reason": ...}``),
need no credentials and no ``A2A-Version`` (they are not JSON-RPC), and are never cached.
"""

from __future__ import annotations

import asyncio
import logging
import math

from aiohttp import web

from a2a_wire import codec
from a2a_wire._protocol.wire import JSON_MEDIA_TYPE
from a2a_wire.server._settings import PROBE_PATHS, ServerSettings
from a2a_wire.server.store import EventLogStore, StoreUnavailableError

__all__ = ["HEALTH_KEY", "Health"]

log = logging.getLogger("a2a_wire.server")

LIVE_PATH, READY_PATH = PROBE_PATHS
STORE_UNAVAILABLE = StoreUnavailableError.reason
SHUTTING_DOWN = "SHUTTING_DOWN"


def _answer(status: int, body: dict[str, str], retry_after: int | None = None) -> web.Response:
    headers = {"Cache-Control": "no-store"}
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return web.Response(
        body=codec.dumps(body), status=status, content_type=JSON_MEDIA_TYPE, headers=headers
    )


class Health:
    """The two probes of one application (module docstring).

    Args:
        store: The task store ``/readyz`` pings.
        settings: Its ``readiness_timeout_seconds`` and ``store_retry_after_seconds``.

    Attributes:
        stopping: Set when shutdown begins (:meth:`stop`); ``/readyz`` then answers 503.
    """

    def __init__(self, store: EventLogStore, settings: ServerSettings) -> None:
        self._store = store
        self._timeout = settings.readiness_timeout_seconds
        self._retry_after = max(1, math.ceil(settings.store_retry_after_seconds))
        self.stopping = False

    def install(self, app: web.Application) -> None:
        """Add the two routes, and :meth:`stop` to ``app.on_shutdown``."""
        app.router.add_get(LIVE_PATH, self.live)
        app.router.add_get(READY_PATH, self.ready)
        app.on_shutdown.append(self._on_shutdown)

    def stop(self) -> None:
        """Report not ready from now on (shutdown has begun)."""
        self.stopping = True

    async def _on_shutdown(self, app: web.Application) -> None:
        self.stop()

    async def live(self, request: web.Request) -> web.Response:
        """``GET /healthz``: 200 ``{"status": "ok"}``."""
        return _answer(200, {"status": "ok"})

    async def ready(self, request: web.Request) -> web.Response:
        """``GET /readyz``: 200 when the store answers its ping in time, else 503."""
        if self.stopping:
            return self._not_ready(SHUTTING_DOWN)
        try:
            async with asyncio.timeout(self._timeout):
                await self._store.ping()
        except (StoreUnavailableError, TimeoutError):  # the store logs its outages itself
            return self._not_ready(STORE_UNAVAILABLE)
        except Exception:  # a failure that is not an outage: logged, and not ready
            log.exception("readiness ping failed")
            return self._not_ready(STORE_UNAVAILABLE)
        return _answer(200, {"status": "ok"})

    def _not_ready(self, reason: str) -> web.Response:
        body = {"status": "unavailable", "reason": reason}
        return _answer(503, body, self._retry_after)


HEALTH_KEY = web.AppKey("a2a_wire.health", Health)
"""The application's probes; ``serve`` calls ``stop()`` on it when it starts draining."""
