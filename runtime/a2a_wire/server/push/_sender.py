"""One delivery attempt and what its outcome does to the outbox row (spec 4.3.3, 13.2).

Both outbox readers send through :class:`Sender`, so the retry and give-up rules hold whichever
process delivers; they are listed in docs/server.md ("Push delivery"). The guard checks the
address actually connected to, so a name that resolves to a private address now is refused.
"""

from __future__ import annotations

import email.utils
import logging
import random
import time
from dataclasses import dataclass
from typing import Final

import aiohttp
import yarl

from a2a_wire import netguard
from a2a_wire._protocol.wire import DELIVERY_ID_HEADER, PUSH_CONTENT_TYPE, TOKEN_HEADER
from a2a_wire.server.push._observed import PushTelemetry
from a2a_wire.server.push._settings import PushSettings
from a2a_wire.server.store import Delivery, PushClaims, PushStore

__all__ = ["Outcome", "Sender", "retry_after_seconds"]

log = logging.getLogger("a2a_wire.server.push")

_RETRY_STATUSES: Final = frozenset({408, 429})


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one attempt came to: delivered, to be retried (maybe after ``retry_after``), or not.

    ``reason`` is the short form of ``error`` that telemetry records (``error.type``): the HTTP
    status, the exception's class, or what refused the URL.
    """

    delivered: bool = False
    retry: bool = False
    error: str = ""
    retry_after: float | None = None
    reason: str = ""

    @property
    def kind(self) -> str:
        """``delivered``, ``retry`` or ``failed`` (not worth retrying)."""
        return "delivered" if self.delivered else "retry" if self.retry else "failed"


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


class Sender:
    """POSTs deliveries and records their outcomes in the store (docs/server.md).

    Args:
        store: The store holding the outbox.
        settings: Timeouts, retry policy and address allowlist.
    """

    def __init__(
        self, store: PushStore, settings: PushSettings, observed: PushTelemetry | None = None
    ) -> None:
        self._store = store
        self._observed = observed
        self._claims = store if isinstance(store, PushClaims) else None
        self._settings = settings
        self.session: aiohttp.ClientSession | None = None
        """The session attempts go through; set by the deliverer before the first attempt."""

    async def attempt(self, delivery: Delivery) -> Outcome:
        """POST the delivery once; never raises for what the webhook or the network does."""
        headers = self._headers(delivery)
        record = self._observed.attempt(delivery, headers) if self._observed else None
        outcome = await self._post(delivery, headers)
        if record is not None and self._observed is not None:
            self._observed.ended(record, delivery, outcome.kind, outcome.reason)
        return outcome

    async def _post(self, delivery: Delivery, headers: dict[str, str]) -> Outcome:
        session = self.session
        assert session is not None, "start() the deliverer first"
        url = delivery.config.url
        timeout = aiohttp.ClientTimeout(total=self._settings.timeout_seconds)
        try:
            parsed = yarl.URL(url)
            if parsed.scheme not in self._settings.schemes:
                return Outcome(error=f"scheme {parsed.scheme!r} is not allowed", reason="scheme")
            netguard.check_url(parsed, self._settings.allowlist)
            async with session.post(
                parsed,
                data=delivery.body,
                headers=headers,
                allow_redirects=False,
                timeout=timeout,
            ) as response:
                status = response.status
                retry_after = retry_after_seconds(response.headers.get("Retry-After"), time.time())
        except netguard.AddressGuardError as exc:
            return Outcome(error=f"refused by the address guard: {exc}", reason="address_guard")
        except ValueError as exc:  # yarl or aiohttp refusing the URL
            return Outcome(error=f"invalid URL: {exc}", reason="invalid_url")
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            name = type(exc).__name__
            return Outcome(retry=True, error=f"{name}: {exc}"[:500], reason=name)
        if 200 <= status < 300:
            return Outcome(delivered=True)
        retry = status >= 500 or status in _RETRY_STATUSES
        return Outcome(
            retry=retry, error=f"HTTP {status}", retry_after=retry_after, reason=str(status)
        )

    async def record(self, delivery: Delivery, outcome: Outcome) -> float | None:
        """Store the outcome of an attempt on ``delivery``: done, retry later, or given up.

        A store offering claims gets the retry as a delay, so that the due time is by the clock
        its claims are judged by (shared by every process); any other store gets it as a time
        by this host's clock.

        Returns:
            Seconds from now until the row is to be tried again, or ``None`` when it left its
            lane (delivered or given up).

        Raises:
            Exception: whatever the store raises; nothing was recorded then.
        """
        attempts = delivery.attempts + 1
        if outcome.delivered:
            await self._store.delivery_done(delivery.seq)
            return None
        if outcome.retry and attempts < self._settings.max_attempts:
            delay = self._backoff(attempts, outcome.retry_after)
            now = time.time()
            if now + delay - delivery.created_at <= self._settings.max_age_seconds:
                await self._retry(delivery.seq, attempts, now, delay, outcome.error)
                return delay
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
        return None

    async def _retry(self, seq: int, attempts: int, now: float, delay: float, error: str) -> None:
        if self._claims is not None:
            await self._claims.delivery_retry_in(seq, attempts=attempts, delay=delay, error=error)
        else:
            await self._store.delivery_retry(
                seq, attempts=attempts, next_attempt_at=now + delay, error=error
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
