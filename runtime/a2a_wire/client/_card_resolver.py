"""Agent card discovery, caching and interface selection (spec 8.2, 8.3.2, 8.6).

:class:`CardResolver` fetches the public card without credentials, caches it as a private HTTP
cache does, and picks the first JSONRPC 1.0 interface. A verifier, when given, checks the card
as received each time it is handed out, cached or not. The rules: docs/client.md ("Connect").
"""

from __future__ import annotations

import email.utils
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

import aiohttp
import yarl
from multidict import CIMultiDictProxy

from a2a_wire import codec
from a2a_wire._protocol.wire import (
    JSON_MEDIA_TYPE,
    JSON_MEDIA_TYPES,
    PROTOCOL_BINDING,
    PROTOCOL_VERSION,
    VERSION_HEADER,
    WELL_KNOWN_PATH,
    version_matches,
)
from a2a_wire.client._errors import (
    AuthenticationError,
    HTTPStatusError,
    InterfaceOffer,
    InvalidAgentCardError,
    NoCompatibleInterfaceError,
    UnexpectedContentTypeError,
    safe_url,
)
from a2a_wire.client._http import RawResponse, Transport
from a2a_wire.client._observe import ExchangeObserver
from a2a_wire.client._settings import ClientSettings
from a2a_wire.types import AgentCard, AgentInterface

__all__ = [
    "CachedCard",
    "CardCache",
    "CardResolver",
    "SignatureCheck",
    "card_lifetime",
    "card_url",
    "interface_url",
    "select_interface",
]


def card_url(base_url: str) -> str:
    """The well-known card URL under ``base_url`` (returned as is if it already is one).

    Args:
        base_url: The agent's base URL, e.g. ``https://agent.example`` or ``.../agents/x``.

    Returns:
        ``base_url`` without trailing slashes, plus ``/.well-known/agent-card.json``.
    """
    trimmed = base_url.rstrip("/")
    return trimmed if trimmed.endswith(WELL_KNOWN_PATH) else trimmed + WELL_KNOWN_PATH


def select_interface(
    card: AgentCard, *, binding: str = PROTOCOL_BINDING, version: str = PROTOCOL_VERSION
) -> AgentInterface:
    """Pick the first interface of ``card`` with ``binding`` and a matching ``version``.

    Args:
        card: The agent card.
        binding: The protocol binding wanted (compared case-insensitively).
        version: The protocol version wanted (major.minor).

    Returns:
        The chosen ``supportedInterfaces`` entry.

    Raises:
        NoCompatibleInterfaceError: No entry fits; ``offers`` lists every entry.
    """
    for iface in card.supported_interfaces:
        if iface.protocol_binding.upper() == binding.upper() and version_matches(
            iface.protocol_version, version
        ):
            return iface
    offers = [
        InterfaceOffer(i.protocol_binding, i.protocol_version, i.url)
        for i in card.supported_interfaces
    ]
    raise NoCompatibleInterfaceError(f"{binding} {version}", offers)


def interface_url(card_location: str, iface: AgentInterface) -> str:
    """The interface's URL, resolved against the card's URL if it is relative."""
    url = yarl.URL(iface.url)
    return iface.url if url.is_absolute() else str(yarl.URL(card_location).join(url))


def _cache_control(headers: CIMultiDictProxy[str]) -> dict[str, str | None]:
    directives: dict[str, str | None] = {}
    for value in headers.getall("Cache-Control", []):
        for item in value.split(","):
            name, eq, arg = item.partition("=")
            name = name.strip().lower()
            if name:
                directives[name] = arg.strip().strip('"') if eq else None
    return directives


def _http_date(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


def card_lifetime(headers: CIMultiDictProxy[str], default_ttl: float) -> float | None:
    """How long a card response stays fresh (docs/client.md, "Connect").

    Args:
        headers: The response headers (of a 200 or a 304).
        default_ttl: Seconds to use without ``max-age`` or ``Expires``.

    Returns:
        Seconds of freshness left (0 = revalidate before each use), or ``None`` for ``no-store``.
    """
    directives = _cache_control(headers)
    if "no-store" in directives:
        return None
    if "no-cache" in directives:
        return 0.0
    max_age = directives.get("max-age")
    if max_age is not None and max_age.isascii() and max_age.isdigit():
        ttl = float(max_age)
    elif "Expires" in headers:
        expires = _http_date(headers.get("Expires"))
        date = _http_date(headers.get("Date")) or time.time()
        ttl = 0.0 if expires is None else expires - date
    else:
        return max(default_ttl, 0.0)
    age = headers.get("Age", "")
    if age.isascii() and age.isdigit():
        ttl -= float(age)
    return max(ttl, 0.0)


class SignatureCheck(Protocol):
    """Verifies a received card (see :class:`a2a_wire.card_signing.CardVerifier`)."""

    def verify(self, document: Mapping[str, Any]) -> object:
        """Check the card's JSON object as received; raise to refuse it."""
        ...


@dataclass
class CachedCard:
    """A cache entry: the card, its validators and when it stops being fresh.

    ``document`` is the card's JSON object as received, for signature checks.
    """

    card: AgentCard
    etag: str | None
    last_modified: str | None
    fresh_until: float
    document: Any = None


class CardCache:
    """A small in-memory LRU cache of agent cards keyed by card URL."""

    def __init__(
        self, *, max_entries: int = 64, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """Keep at most ``max_entries`` cards; ``clock`` gives seconds (monotonic by default)."""
        self.max_entries = max_entries
        self.clock = clock
        self._entries: OrderedDict[str, CachedCard] = OrderedDict()

    def get(self, url: str) -> CachedCard | None:
        """Return the entry for ``url`` (fresh or stale), or ``None``."""
        entry = self._entries.get(url)
        if entry is not None:
            self._entries.move_to_end(url)
        return entry

    def put(self, url: str, entry: CachedCard) -> None:
        """Store ``entry``, evicting the least recently used beyond ``max_entries``."""
        self._entries[url] = entry
        self._entries.move_to_end(url)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def discard(self, url: str) -> None:
        """Forget ``url``."""
        self._entries.pop(url, None)

    def clear(self) -> None:
        """Forget everything."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def _document(raw: RawResponse, url: str) -> Any:
    if raw.status in (401, 403):
        challenge = raw.headers.get("WWW-Authenticate", "")
        raise AuthenticationError(raw.status, raw.reason, url, challenge)
    if raw.status != 200:
        raise HTTPStatusError(raw.status, raw.reason, url)
    if raw.content_type not in JSON_MEDIA_TYPES:
        raise UnexpectedContentTypeError(raw.content_type, JSON_MEDIA_TYPES, status=raw.status)
    try:
        return codec.loads(raw.body)
    except codec.JSONSyntaxError as exc:
        raise InvalidAgentCardError(f"agent card at {safe_url(url)}: {exc}") from None


def _decode_card(raw: RawResponse, url: str) -> tuple[AgentCard, Any]:
    document = _document(raw, url)
    try:
        return AgentCard.from_dict(document), document
    except codec.DecodeError as exc:
        raise InvalidAgentCardError(f"agent card at {safe_url(url)}: {exc}") from None


class CardResolver:
    """Fetches agent cards through the client's HTTP rules and caches them."""

    def __init__(
        self,
        *,
        settings: ClientSettings | None = None,
        session: aiohttp.ClientSession | None = None,
        cache: CardCache | None = None,
        verifier: SignatureCheck | None = None,
        observer: ExchangeObserver | None = None,
    ) -> None:
        """Create a resolver with its own transport (closed by :meth:`close`).

        Args:
            settings: Limits and address policy; defaults apply when omitted.
            session: An aiohttp session to use (not closed here, not guarded by the connector).
            cache: A cache to share between resolvers; a private one when omitted.
            verifier: Checks each card's signatures before it is returned (spec 8.4.3).
            observer: Shown every card request and its answer, as a client's observer is.
        """
        self._transport = Transport(settings or ClientSettings(), session, observer)
        self.cache = cache if cache is not None else CardCache()
        self.verifier = verifier

    @classmethod
    def _over(
        cls, transport: Transport, cache: CardCache, verifier: SignatureCheck | None = None
    ) -> CardResolver:
        """A resolver using an existing transport (the client's)."""
        resolver = cls.__new__(cls)
        resolver._transport = transport
        resolver.cache = cache
        resolver.verifier = verifier
        return resolver

    async def close(self) -> None:
        """Close the transport's session if it owns one."""
        await self._transport.close()

    async def __aenter__(self) -> CardResolver:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def resolve(self, base_url: str, *, refresh: bool = False) -> AgentCard:
        """Return the agent's public card, from the cache while it is fresh.

        Args:
            base_url: The agent's base URL (or the card URL itself).
            refresh: Revalidate even if the cached card is fresh.

        Returns:
            The decoded card.

        Raises:
            InvalidAgentCardError: The document is not a card, or its signature does not verify
                (with a verifier).
            ClientError: Transport failures, limits, redirects, HTTP errors.
        """
        url = card_url(base_url)
        entry = self.cache.get(url)
        now = self.cache.clock()
        if entry is not None and not refresh and entry.fresh_until > now:
            self._verify(entry.document)
            return entry.card
        settings = self._transport.settings
        headers = self._request_headers(entry)
        raw = await self._transport.request(
            "GET", url, None, headers, total=("card_timeout", settings.card_timeout)
        )
        if raw.status == 304 and entry is not None:
            card, document = entry.card, entry.document
        else:
            card, document = _decode_card(raw, url)
        self._store(url, card, document, raw, entry if raw.status == 304 else None, now)
        self._verify(document)
        return card

    async def fetch_document(self, base_url: str) -> Any:
        """Fetch the agent's public card as the JSON value it is, neither decoded nor cached.

        For tools that show or check a card as served, including one that is not a valid card.

        Args:
            base_url: The agent's base URL (or the card URL itself).

        Returns:
            The parsed JSON value (any JSON type).

        Raises:
            InvalidAgentCardError: The body is not JSON.
            ClientError: Transport failures, limits, redirects, HTTP errors.
        """
        url = card_url(base_url)
        settings = self._transport.settings
        raw = await self._transport.request(
            "GET",
            url,
            None,
            self._request_headers(None),
            total=("card_timeout", settings.card_timeout),
        )
        return _document(raw, url)

    def _verify(self, document: Any) -> None:
        if self.verifier is not None:
            self.verifier.verify(document if isinstance(document, Mapping) else {})

    def _request_headers(self, entry: CachedCard | None) -> Mapping[str, str]:
        headers = {
            "Accept": JSON_MEDIA_TYPE,
            VERSION_HEADER: PROTOCOL_VERSION,
            "User-Agent": self._transport.settings.user_agent,
        }
        if entry is not None and entry.etag:
            headers["If-None-Match"] = entry.etag
        if entry is not None and entry.last_modified:
            headers["If-Modified-Since"] = entry.last_modified
        return headers

    def _store(
        self,
        url: str,
        card: AgentCard,
        document: Any,
        raw: RawResponse,
        old: CachedCard | None,
        now: float,
    ) -> None:
        ttl = card_lifetime(raw.headers, self._transport.settings.card_default_ttl)
        if ttl is None:
            self.cache.discard(url)
            return
        etag = raw.headers.get("ETag") or (old.etag if old else None)
        modified = raw.headers.get("Last-Modified") or (old.last_modified if old else None)
        self.cache.put(url, CachedCard(card, etag, modified, now + ttl, document))
