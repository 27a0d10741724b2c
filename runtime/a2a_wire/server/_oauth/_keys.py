"""An issuer's signing keys: its discovery document and JWKS, fetched through the address guard.

Keys are kept for as long as the JWKS response's ``Cache-Control: max-age`` (or ``Expires``)
says, within the configured bounds. A fetch happens when they are stale or when a token names
an unknown ``kid``, but never twice within ``jwks_refetch_interval_seconds``; concurrent needs
share one fetch, and while it runs a stale key held is used without waiting. A failed fetch
keeps the keys held so far. When the provider could not be reached (refused, reset, timed out,
HTTP 5xx or 429), :meth:`IssuerKeys.outage` says how long until the next fetch may be tried,
so a key not found is "unavailable, retry" rather than "unknown". Design: docs/security.md.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import re
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import yarl
from jwcrypto import jwk
from jwcrypto.common import JWException

from a2a_wire.netguard import AddressGuardError
from a2a_wire.server._oauth._config import TokenIssuer, TokenSettings

__all__ = ["IssuerKeys", "cache_seconds"]

log = logging.getLogger("a2a_wire.server")

_MAX_AGE = re.compile(r"(?:^|,)\s*max-age\s*=\s*\"?(\d+)\"?\s*(?:,|$)", re.IGNORECASE)
_NO_CACHE = re.compile(r"(?:^|,)\s*(?:no-store|no-cache)\s*(?:,|=|$)", re.IGNORECASE)


def cache_seconds(headers: Any, settings: TokenSettings) -> float:
    """How long a JWKS response may be kept, by its cache headers, within the settings' bounds.

    Args:
        headers: The response headers (``Cache-Control``, ``Expires``, ``Date``).
        settings: The bounds and the default.

    Returns:
        Seconds (RFC 9111 section 4.2.1: ``max-age`` wins over ``Expires``).
    """
    low, high = settings.jwks_min_cache_seconds, settings.jwks_max_cache_seconds
    control = headers.get("Cache-Control", "")
    seconds = settings.jwks_default_cache_seconds
    found = _MAX_AGE.search(control)
    if _NO_CACHE.search(control):
        seconds = 0.0
    elif found:
        seconds = float(found.group(1))
    elif headers.get("Expires"):
        seconds = 0.0
        try:
            expires = email.utils.parsedate_to_datetime(headers["Expires"])
            date = email.utils.parsedate_to_datetime(headers.get("Date", ""))
            seconds = (expires - date).total_seconds()
        except (TypeError, ValueError):
            pass  # an unreadable Expires means already expired (RFC 9111 section 5.3)
    return min(max(seconds, low), high)


@dataclass(frozen=True, slots=True)
class _Failed:
    """Why a fetch failed, and whether trying again later may help (the provider was down)."""

    text: str
    transient: bool = False


def _public_key(data: Any) -> tuple[str, jwk.JWK] | None:
    """``(kid, key)`` of a JWKS member usable for signatures, ``None`` to skip it."""
    if not isinstance(data, dict) or data.get("use", "sig") != "sig":
        return None
    try:
        key = jwk.JWK(**data)
        public = jwk.JWK(**key.export_public(as_dict=True))
    except (JWException, ValueError, TypeError):
        return None
    return str(data.get("kid", "")), public


class IssuerKeys:
    """The keys of one issuer, fetched when needed.

    Args:
        issuer: The issuer.
        settings: The limits.
        session: Gives the guarded HTTP session (made on first use, owned by the caller).

    Attributes:
        fetches: JWKS fetches attempted so far.
    """

    def __init__(self, issuer: TokenIssuer, settings: TokenSettings, session: Any) -> None:
        self.issuer = issuer
        self.settings = settings
        self._session = session
        self._jwks_url = issuer.jwks_url
        self._keys: dict[str, jwk.JWK] = {}
        self._loaded = False
        self._expires = -math.inf
        self._last_attempt = -math.inf
        self._down = False
        self._lock = asyncio.Lock()
        self.fetches = 0

    def _fresh(self, now: float) -> bool:
        return self._loaded and now < self._expires

    async def find(self, kid: str) -> jwk.JWK | None:
        """The key named ``kid`` (``""``: the only key of a JWKS with one), or ``None``."""
        key = self._lookup(kid)
        if key is not None and (self._fresh(self.settings.clock()) or self._lock.locked()):
            return key  # fresh; or stale while another request refetches: nobody else waits
        async with self._lock:
            now = self.settings.clock()
            key = self._lookup(kid)
            if key is not None and self._fresh(now):
                return key
            if now - self._last_attempt >= self.settings.jwks_refetch_interval_seconds:
                self._last_attempt = now
                await self._refresh()
            return self._lookup(kid)

    def outage(self) -> float:
        """Seconds (at least 1) until the next fetch when the last found the provider down, else 0."""
        if not self._down:
            return 0.0
        wait = self._last_attempt + self.settings.jwks_refetch_interval_seconds
        return max(wait - self.settings.clock(), 1.0)

    def still(self, kid: str, key: jwk.JWK) -> bool:
        """Whether ``key`` is still the key :meth:`find` would give for ``kid`` (no fetch).

        A stale key counts while no fetch is due (one failed or is running within the
        refetch interval): :meth:`find` would answer with it too.
        """
        if self._lookup(kid) is not key:
            return False
        now = self.settings.clock()
        due = now - self._last_attempt >= self.settings.jwks_refetch_interval_seconds
        return self._fresh(now) or not due

    def _lookup(self, kid: str) -> jwk.JWK | None:
        if not kid and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return self._keys.get(kid) if kid else None

    async def _refresh(self) -> None:
        self.fetches += 1
        fetched = await self._fetch()
        if isinstance(fetched, _Failed):
            self._down = fetched.transient
            held = "keeping the keys held" if self._loaded else "no keys held"
            name = self.issuer.issuer
            log.warning("keys of issuer %s not fetched (%s): %s", name, held, fetched.text)
            return
        self._down = False
        self._keys, seconds = fetched
        self._loaded = True
        self._expires = self.settings.clock() + seconds

    async def _fetch(self) -> tuple[dict[str, jwk.JWK], float] | _Failed:
        """The keys and how long to keep them, or what went wrong."""
        if not self._jwks_url:
            found = await self._discover()
            if isinstance(found, _Failed):
                return found
            self._jwks_url = found
        got = await self._get(self._jwks_url)
        if isinstance(got, _Failed):
            return got
        document, headers = got
        members = document.get("keys")
        if not isinstance(members, list):
            return _Failed("the JWKS has no keys array")
        keys = dict(filter(None, (_public_key(member) for member in members)))
        return keys, cache_seconds(headers, self.settings)

    async def _discover(self) -> str | _Failed:
        """The JWKS URL the discovery document names, or what went wrong."""
        url = self.issuer.metadata_url
        got = await self._get(url)
        if isinstance(got, _Failed):
            return got
        document, _ = got
        if document.get("issuer") != self.issuer.issuer:  # OpenID Connect Discovery 4.3
            return _Failed(f"the discovery document at {url} names another issuer")
        jwks = document.get("jwks_uri")
        if not isinstance(jwks, str) or not jwks:
            return _Failed(f"the discovery document at {url} has no jwks_uri")
        return jwks

    async def _get(self, url: str) -> tuple[dict[str, Any], Any] | _Failed:
        """A JSON object and the response headers, or what went wrong.

        A refused, reset or timed-out connection and HTTP 5xx or 429 are transient (the
        provider is down); the address guard, a wrong scheme and a bad document are not.
        """
        parsed = yarl.URL(url)
        if parsed.scheme != "https" and not (self.settings.allow_http and parsed.scheme == "http"):
            return _Failed(f"{url} is not https (allow_http is off)")
        limit = self.settings.max_document_bytes
        try:
            session: aiohttp.ClientSession = self._session()
            async with session.get(parsed, headers={"Accept": "application/json"}) as response:
                if response.status != 200:
                    down = response.status >= 500 or response.status == 429
                    return _Failed(f"{url} answered HTTP {response.status}", down)
                body = await _read(response, limit)
                headers = response.headers
        except AddressGuardError as exc:
            return _Failed(str(exc))
        except (aiohttp.ClientError, TimeoutError) as exc:
            return _Failed(f"{url}: {type(exc).__name__}", transient=True)
        if body is None:
            return _Failed(f"{url} is larger than {limit} bytes")
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError:
            return _Failed(f"{url} is not JSON")
        if not isinstance(document, dict):
            return _Failed(f"{url} is not a JSON object")
        return document, headers


async def _read(response: aiohttp.ClientResponse, limit: int) -> bytes | None:
    """The body, or ``None`` when it is longer than ``limit`` bytes (the rest is not read)."""
    body = b""
    while len(body) <= limit:
        more = await response.content.read(limit + 1 - len(body))
        if not more:
            return body
        body += more
    return None
