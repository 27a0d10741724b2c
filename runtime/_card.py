"""Publishing the agent card at ``/.well-known/agent-card.json`` (spec 8.2, 8.3, 8.6).

The served card is the configured one with ``supportedInterfaces`` led by this server's JSON-RPC
endpoint (``protocolBinding`` ``JSONRPC``, ``protocolVersion`` ``1.0``, spec 8.3.1); other
bindings the configured card lists follow it, and any JSON-RPC entries it listed are replaced.
The endpoint URL is ``public_url`` + ``rpc_path`` when ``public_url`` is set, otherwise the
scheme and ``Host`` of the card request.

Caching (spec 8.6.1): ``Cache-Control: public, max-age=<card_max_age_seconds>``, a strong
``ETag`` (a hash of the body) and ``Last-Modified`` (when the application was built). A request
whose ``If-None-Match`` matches the ETag, or that has no ``If-None-Match`` and an
``If-Modified-Since`` not before ``Last-Modified``, gets 304 with no body.
"""

from __future__ import annotations

import datetime
import email.utils
import hashlib
from dataclasses import dataclass

from aiohttp import web

from a2a_wire import codec
from a2a_wire.settings import ServerSettings
from a2a_wire.types import AgentCard, AgentInterface

__all__ = ["CARD_PATH", "CardPublisher", "JSONRPC_BINDING", "PROTOCOL_VERSION"]

CARD_PATH = "/.well-known/agent-card.json"
JSONRPC_BINDING = "JSONRPC"
PROTOCOL_VERSION = "1.0"
_CACHED_ORIGINS = 16  # distinct Host values whose rendering is kept


@dataclass(frozen=True, slots=True)
class _Rendered:
    body: bytes
    etag: str


def _matches(header: str, etag: str) -> bool:
    """Weak comparison of an ``If-None-Match`` list against our ETag (RFC 9110 13.1.2)."""
    for candidate in header.split(","):
        tag = candidate.strip()
        if tag == "*" or tag.removeprefix("W/") == etag:
            return True
    return False


class CardPublisher:
    """Renders and serves the public agent card.

    Args:
        card: The configured card.
        settings: For ``public_url``, ``rpc_path`` and ``card_max_age_seconds``.
    """

    def __init__(self, card: AgentCard, settings: ServerSettings) -> None:
        self._card = card.to_dict()
        self._others = [
            i.to_dict() for i in card.supported_interfaces if i.protocol_binding != JSONRPC_BINDING
        ]
        self._settings = settings
        self._cache: dict[str, _Rendered] = {}
        now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        self.last_modified = now
        self._cache_control = f"public, max-age={settings.card_max_age_seconds}"

    def render(self, origin: str) -> _Rendered:
        """The card as served to clients reaching the server at ``origin``."""
        rendered = self._cache.get(origin)
        if rendered is None:
            ours = AgentInterface(
                url=origin + self._settings.rpc_path,
                protocol_binding=JSONRPC_BINDING,
                protocol_version=PROTOCOL_VERSION,
            )
            card = dict(self._card)
            card["supportedInterfaces"] = [ours.to_dict(), *self._others]
            body = codec.dumps(card)
            etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
            rendered = _Rendered(body, etag)
            if len(self._cache) < _CACHED_ORIGINS:
                self._cache[origin] = rendered
        return rendered

    def _origin(self, request: web.Request) -> str:
        if self._settings.public_url:
            return self._settings.public_url.rstrip("/")
        return f"{request.scheme}://{request.host}"

    def _fresh(self, request: web.Request, etag: str) -> bool:
        header = request.headers.get("If-None-Match")
        if header is not None:
            return _matches(header, etag)
        since = request.if_modified_since
        return since is not None and self.last_modified <= since

    async def handle(self, request: web.Request) -> web.Response:
        """GET handler: the card, or 304 when the client's copy is current."""
        rendered = self.render(self._origin(request))
        headers = {
            "Cache-Control": self._cache_control,
            "ETag": rendered.etag,
            "Last-Modified": email.utils.format_datetime(self.last_modified, usegmt=True),
        }
        if self._fresh(request, rendered.etag):
            return web.Response(status=304, headers=headers)
        return web.Response(body=rendered.body, headers=headers, content_type="application/json")
