"""The push delivery worker: sends the outbox to the webhooks, at least once, in order per lane.

Theory of operation
-------------------
The outbox lives in the task store (:mod:`a2a_wire.server.store._push`); rows are added in the same
write as the task change they report, before anybody is told about that change. This worker
only reads and retires rows, so a crash at any point loses nothing: after a restart
:meth:`PushDeliverer.start` finds every undelivered row again (a row sent but not yet retired
is sent twice; receivers drop the duplicate by its ``X-A2A-Delivery-Id``).

* A reader task waits for :meth:`PushDeliverer.wake` (called by the task hub after a write that
  added rows), asks the store which lanes gained rows since the last sequence number it saw,
  and starts a lane task for each lane that has none running. Wakes coalesce.
* A lane, the rows of one ``(task_id, config_id)``, is served by one task that sends its head
  row, and only after that row was delivered or given up reads the next one. So one webhook
  gets the events of one task one at a time, in the order they happened. Lanes are independent:
  a webhook that is down or slow holds up only its own lanes, and the agent never waits for any
  of them (it only writes rows).
* The head row is re-read from the store before each attempt, so a config deleted meanwhile
  (which deletes its rows) gets nothing more, and attempt counts and retry times survive a
  restart. A task deleted by retention takes its configs with it at once: its lanes find no
  more rows and end, while the store purges the rows themselves.

One attempt is a POST with ``timeout_seconds`` in total, redirects not followed, through an
aiohttp session whose connector is :class:`a2a_wire.netguard.GuardedConnector`: the address
actually connected to is checked against the SSRF guard and ``PushSettings.allowlist`` (so a
host name that resolved to a public address when the config was made and resolves to a private
one now is refused). No cookies are kept and no proxy is used.

Outcome of an attempt:

* 2xx: delivered, the row is deleted;
* a connection error, a timeout, 5xx, 408 or 429: retried after ``backoff_base_seconds *
  2**(attempts-1)`` capped at ``backoff_cap_seconds``, times a random factor in [0.5, 1]
  (jitter), or after ``Retry-After`` if that is longer;
* anything else (3xx, other 4xx, an address the guard refuses, a scheme no longer allowed):
  given up at once.

A row is also given up after ``max_attempts`` attempts, or when its next attempt would fall
more than ``max_age_seconds`` after its event; every row gets at least one attempt (spec 4.3.3),
even one found old after a long stop. Given-up rows stay in the store, marked failed
with the last error (``failed_deliveries``), and a warning is logged without secrets.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Final

import aiohttp
import yarl
from aiohttp import web

from a2a_wire import __version__, netguard
from a2a_wire._protocol.wire import DELIVERY_ID_HEADER, PUSH_CONTENT_TYPE, TOKEN_HEADER
from a2a_wire.server.push._settings import PushSettings
from a2a_wire.server.store._push import Delivery, LaneKey, PushStore

__all__ = ["PUSH_DELIVERER_KEY", "PushDeliverer", "retry_after_seconds"]

log = logging.getLogger("a2a_wire.server.push")

_RETRY_STATUSES: Final = frozenset({408, 429})
_STORE_RETRY_SECONDS: Final = 1.0


@dataclass(frozen=True, slots=True)
class _Outcome:
    delivered: bool = False
    retry: bool = False
    error: str = ""
    retry_after: float | None = None


@dataclass(slots=True)
class _Lane:
    task: asyncio.Task[None]
    dirty: bool = False


def _where(url: str) -> str:
    """Scheme, host and path of a URL: what logs may show (no query, no user info)."""
    try:
        parsed = yarl.URL(url)
    except ValueError:
        return "<invalid URL>"
    return str(parsed.with_user(None).with_query(None).with_fragment(None))


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """Seconds to wait according to a ``Retry-After`` value (delta seconds or an HTTP date)."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


class PushDeliverer:
    """Sends the push outbox of one store; start it after the store opened.

    Args:
        store: The task store holding configs and outbox.
        settings: Timeouts, retry policy and address allowlist.
        session: An aiohttp session to use instead of an owned, address-guarded one (tests);
            the caller closes it, and only its own connector guards addresses then.
    """

    def __init__(
        self,
        store: PushStore,
        settings: PushSettings,
        *,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self._store = store
        self._settings = settings
        self._session = session
        self._owns_session = session is None
        self._wakeup = asyncio.Event()
        self._lanes: dict[LaneKey, _Lane] = {}
        self._seen = 0
        self._reading = False
        self._reader: asyncio.Task[None] | None = None
        self._slots = asyncio.Semaphore(settings.max_concurrent)

    def wake(self) -> None:
        """Tell the worker that rows were added (cheap; wakes coalesce)."""
        self._wakeup.set()

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
        self._reader = asyncio.create_task(self._read_loop(), name="a2a-push-reader")
        self.wake()

    async def close(self) -> None:
        """Stop the reader and every lane, and close the owned session; rows stay stored."""
        tasks = [lane.task for lane in self._lanes.values()]
        if self._reader is not None:
            tasks.append(self._reader)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._lanes.clear()
        self._reader = None
        if self._owns_session and self._session is not None:
            await self._session.close()
        self._session = None

    async def lifecycle(self, app: web.Application) -> AsyncIterator[None]:
        """An ``app.cleanup_ctx`` entry: start with the app, close at cleanup."""
        await self.start()
        try:
            yield
        finally:
            await self.close()

    @property
    def busy(self) -> bool:
        """Whether any lane is at work (sending, waiting to retry, or reading its next row)."""
        return bool(self._lanes) or self._wakeup.is_set() or self._reading

    # -- reading --------------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            self._reading = True
            try:
                lanes, self._seen = await self._store.pending_lanes(self._seen)
            except Exception:  # outermost boundary of a background task: keep serving
                log.exception("push outbox could not be read; retrying")
                await asyncio.sleep(_STORE_RETRY_SECONDS)
                self.wake()
                continue
            finally:
                self._reading = False
            for key in lanes:
                lane = self._lanes.get(key)
                if lane is not None:
                    lane.dirty = True
                else:
                    task = asyncio.create_task(self._run_lane(key), name=f"a2a-push-{key[0]}")
                    self._lanes[key] = _Lane(task)

    async def _run_lane(self, key: LaneKey) -> None:
        while True:
            try:
                delivery = await self._store.next_delivery(*key)
                if delivery is not None:
                    await self._serve(delivery)
                    continue
            except asyncio.CancelledError:
                raise
            except Exception:  # outermost boundary of a background task: keep the lane alive
                log.exception("push lane of task %s failed; retrying", key[0])
                await asyncio.sleep(_STORE_RETRY_SECONDS)
                continue
            lane = self._lanes[key]
            if not lane.dirty:
                del self._lanes[key]
                return
            lane.dirty = False

    # -- sending --------------------------------------------------------------------------------

    async def _serve(self, delivery: Delivery) -> None:
        """Wait for the row's time, or attempt it and record the outcome."""
        wait = delivery.next_attempt_at - time.time()
        if wait > 0:
            await asyncio.sleep(wait)
            return  # re-read the row: it may have been deleted meanwhile
        async with self._slots:
            outcome = await self._attempt(delivery)
        attempts = delivery.attempts + 1
        if outcome.delivered:
            await self._store.delivery_done(delivery.seq)
            return
        if outcome.retry and attempts < self._settings.max_attempts:
            delay = self._backoff(attempts, outcome.retry_after)
            next_at = time.time() + delay
            if next_at - delivery.created_at <= self._settings.max_age_seconds:
                await self._store.delivery_retry(
                    delivery.seq, attempts=attempts, next_attempt_at=next_at, error=outcome.error
                )
                return
        await self._store.delivery_failed(delivery.seq, attempts=attempts, error=outcome.error)
        task_id, config_id = delivery.lane
        log.warning(
            "push delivery %s of task %s to config %s (%s) given up after %d attempts: %s",
            delivery.delivery_id,
            task_id,
            config_id,
            _where(delivery.config.url),
            attempts,
            outcome.error,
        )

    def _backoff(self, attempts: int, retry_after: float | None) -> float:
        settings = self._settings
        delay = min(
            settings.backoff_cap_seconds, settings.backoff_base_seconds * 2.0 ** (attempts - 1)
        )
        delay *= random.uniform(0.5, 1.0)
        return max(delay, retry_after) if retry_after is not None else delay

    def _headers(self, delivery: Delivery) -> dict[str, str]:
        config = delivery.config
        headers = {"Content-Type": PUSH_CONTENT_TYPE, DELIVERY_ID_HEADER: delivery.delivery_id}
        if config.token:
            headers[TOKEN_HEADER] = config.token
        auth = config.authentication
        if auth is not None and auth.scheme:
            headers["Authorization"] = f"{auth.scheme} {auth.credentials}".rstrip()
        return headers

    async def _attempt(self, delivery: Delivery) -> _Outcome:
        session = self._session
        assert session is not None, "start() the deliverer first"
        url = delivery.config.url
        timeout = aiohttp.ClientTimeout(total=self._settings.timeout_seconds)
        try:
            parsed = yarl.URL(url)
            if parsed.scheme not in self._settings.schemes:
                return _Outcome(error=f"scheme {parsed.scheme!r} is not allowed")
            netguard.check_url(parsed, self._settings.allowlist)
            async with session.post(
                parsed,
                data=delivery.body,
                headers=self._headers(delivery),
                allow_redirects=False,
                timeout=timeout,
            ) as response:
                status = response.status
                retry_after = retry_after_seconds(response.headers.get("Retry-After"), time.time())
        except netguard.AddressGuardError as exc:
            return _Outcome(error=f"refused by the address guard: {exc}")
        except ValueError as exc:  # yarl or aiohttp refusing the URL
            return _Outcome(error=f"invalid URL: {exc}")
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            return _Outcome(retry=True, error=f"{type(exc).__name__}: {exc}"[:500])
        if 200 <= status < 300:
            return _Outcome(delivered=True)
        retry = status >= 500 or status in _RETRY_STATUSES
        return _Outcome(retry=retry, error=f"HTTP {status}", retry_after=retry_after)


PUSH_DELIVERER_KEY = web.AppKey("a2a_wire.push_deliverer", PushDeliverer)
"""The application's push delivery worker (present when the card declares push)."""
