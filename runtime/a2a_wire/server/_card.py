"""Publishing the agent card at ``/.well-known/agent-card.json`` (spec 8.2, 8.3, 8.6).

:class:`CardPublisher` serves the configured card with this server's JSON-RPC interface first,
signed as served when it has a signer (which is why signing needs ``public_url``: the URL is
part of what is signed), with ``ETag`` and ``Last-Modified`` for conditional requests. The rules
are in docs/server.md, "The served card".
"""

from __future__ import annotations

import datetime
import email.utils
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from a2a_wire import codec
from a2a_wire._protocol.wire import JSON_MEDIA_TYPE, PROTOCOL_BINDING, PROTOCOL_VERSION
from a2a_wire.server._settings import ServerSettings
from a2a_wire.types import AgentCard, AgentInterface

__all__ = ["CardPublisher", "Signer", "served_tenants"]

_CACHED_ORIGINS = 16  # distinct Host values whose rendering is kept


@dataclass(frozen=True, slots=True)
class _Rendered:
    body: bytes
    etag: str


class Signer(Protocol):
    """Signs a card's JSON object (see :class:`a2a_wire.card_signing.CardSigner`)."""

    def sign(self, document: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The ``signatures`` array for ``document``."""
        ...


def served_tenants(card: AgentCard) -> list[str]:
    """The tenants of the served JSON-RPC entries, in card order (``[""]`` when none)."""
    named = [i.tenant for i in card.supported_interfaces if i.protocol_binding == PROTOCOL_BINDING]
    tenants = list(dict.fromkeys(t for t in named if t))
    return tenants or [""]


# A DNS name or IPv4 address, or a bracketed IPv6 literal, with an optional port.
_HOST = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?\Z"
)


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
        signer: Signs each rendering (spec 8.4); needs ``settings.public_url``.

    Raises:
        ValueError: a signer without ``public_url``.
    """

    def __init__(
        self, card: AgentCard, settings: ServerSettings, signer: Signer | None = None
    ) -> None:
        if signer is not None and not settings.public_url:
            raise ValueError("signing the agent card needs ServerSettings.public_url")
        self._card = card.to_dict()
        self._tenants = served_tenants(card)
        self._signer = signer
        self._others = [
            i.to_dict() for i in card.supported_interfaces if i.protocol_binding != PROTOCOL_BINDING
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
            body = codec.dumps(self.document(origin))
            etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
            rendered = _Rendered(body, etag)
            if len(self._cache) < _CACHED_ORIGINS:
                self._cache[origin] = rendered
        return rendered

    def document(
        self, origin: str, *, skills: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """The card's JSON object as served at ``origin``, signed when there is a signer.

        Args:
            origin: Scheme and authority of the server as clients reach it.
            skills: ``skills`` to show instead of the card's (the extended card's).

        Returns:
            A new JSON object.
        """
        ours = [
            AgentInterface(
                url=origin + self._settings.rpc_path,
                protocol_binding=PROTOCOL_BINDING,
                protocol_version=PROTOCOL_VERSION,
                tenant=tenant,
            ).to_dict()
            for tenant in self._tenants
        ]
        card = dict(self._card)
        card["supportedInterfaces"] = [*ours, *self._others]
        if skills is not None:
            card["skills"] = skills
        if self._signer is not None:
            card.pop("signatures", None)
            card["signatures"] = self._signer.sign(card)
        return card

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
        """GET handler: the card, or 304 when the client's copy is current.

        Without ``public_url`` the interface URL comes from the ``Host`` header: it must look like
        a host (and port), else HTTP 400; and the answer carries ``Vary: Host`` so that no shared
        cache hands one client's rendering to another.
        """
        if not self._settings.public_url and not _HOST.match(request.host):
            raise web.HTTPBadRequest(reason="Invalid Host header")
        rendered = self.render(self._origin(request))
        headers = {
            "Cache-Control": self._cache_control,
            "ETag": rendered.etag,
            "Last-Modified": email.utils.format_datetime(self.last_modified, usegmt=True),
        }
        if not self._settings.public_url:
            headers["Vary"] = "Host"
        if self._fresh(request, rendered.etag):
            return web.Response(status=304, headers=headers)
        return web.Response(body=rendered.body, headers=headers, content_type=JSON_MEDIA_TYPE)
