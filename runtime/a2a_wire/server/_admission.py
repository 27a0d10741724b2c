"""Admission of JSON-RPC requests: authentication, rate limits, stream slots (spec 7.4, 13.4).

:class:`Admission` runs before a request body is read: the source's failed-authentication limit
before the credentials are looked at, then the credentials, then the caller's rate; it builds
the request's :class:`~a2a_wire.server._call_info.CallInfo`. Refusals are raised (401, 429; see
docs/server.md, "Authentication"). The public and extended cards are assembled here too
(spec 3.1.11, 13.3).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from aiohttp import hdrs, web

from a2a_wire._protocol.wire import EXTENSIONS_HEADER, join_extensions, parse_extensions
from a2a_wire.server._auth import ClientRegistry, owner_key
from a2a_wire.server._call_info import CallInfo
from a2a_wire.server._card import CardPublisher
from a2a_wire.server._errors import (
    IdentityUnavailableError,
    InsufficientScopeError,
    RateLimitedError,
    UnauthenticatedError,
)
from a2a_wire.server._limits import RateLimiter, StreamCounter
from a2a_wire.server._principal import ANONYMOUS, AuthFailure, Principal
from a2a_wire.server._settings import ServerSettings
from a2a_wire.server._skills import SkillSet
from a2a_wire.types import AgentCard, AgentSkill

__all__ = [
    "APPLIED_EXTENSIONS",
    "Admission",
    "extended_card",
    "public_card",
    "with_requirements",
]

log = logging.getLogger("a2a_wire.server")

APPLIED_EXTENSIONS = web.RequestKey("a2a_wire.applied_extensions", tuple[str, ...])
"""Extensions requested and supported by the card; echoed in ``A2A-Extensions`` (spec 3.2.6)."""


class Admission:
    """The per-application admission rules (docs/internals/server.md).

    Args:
        registry: The registered clients.
        settings: Limits.
        skills: The skill set, if the server has skills.
        supported_extensions: Extension URIs the card declares.
    """

    def __init__(
        self,
        registry: ClientRegistry,
        settings: ServerSettings,
        skills: SkillSet | None,
        supported_extensions: tuple[str, ...],
    ) -> None:
        self.registry = registry
        self.settings = settings
        self.skills = skills
        self.supported_extensions = frozenset(supported_extensions)
        per_second = settings.auth_failures_per_minute / 60.0
        self.failures = RateLimiter(per_second, settings.auth_failures_per_minute)
        self.requests = RateLimiter(settings.requests_per_second, settings.request_burst)
        self.streams = StreamCounter(settings.max_streams_per_client)

    async def close(self, app: web.Application) -> None:
        """``on_cleanup``: release what the registry holds (the token issuers' key fetches)."""
        await self.registry.close()

    def _origin(self, request: web.Request) -> str:
        if self.settings.public_url:
            return self.settings.public_url.rstrip("/")
        return f"{request.scheme}://{request.host}"

    def limit_key(self, request: web.Request, info: CallInfo) -> str:
        """The key of the caller's request and stream limits; ``""`` for no limit."""
        if info.client_id:
            return "client:" + info.client_id
        if self.settings.limit_anonymous:
            return "source:" + (request.remote or "")
        return ""

    async def _principal(self, request: web.Request) -> Principal:
        if not self.registry.enabled:
            return ANONYMOUS
        source = request.remote or ""
        wait = self.failures.wait(source)
        if wait > 0:
            raise RateLimitedError("failed authentications from this address", wait)
        result = await self.registry.authenticate(request.headers)
        if isinstance(result, AuthFailure) and result.retry_after:
            log.warning("authentication deferred for %s: %s", source or "?", result.reason)
            raise IdentityUnavailableError(retry_after=result.retry_after)
        if isinstance(result, AuthFailure):
            log.warning("authentication refused from %s: %s", source or "?", result.reason)
            if result.bearer_error == "insufficient_scope":  # a valid token: not a failure
                raise InsufficientScopeError(self.registry.challenges(result))
            self.failures.take(source)
            raise UnauthenticatedError(self.registry.challenges(result))
        return result

    async def admit(self, request: web.Request) -> CallInfo:
        """The request's :class:`CallInfo`, once the request is admitted.

        Args:
            request: The HTTP request (its body is not read).

        Returns:
            The call info.

        Raises:
            UnauthenticatedError: Clients are registered and the credentials do not match one.
            InsufficientScopeError: A valid access token lacks a required scope.
            IdentityUnavailableError: A token's issuer keys cannot be fetched now (HTTP 503).
            RateLimitedError: Over the failed-authentication or the request rate.
        """
        principal = await self._principal(request)
        skills = None
        if self.skills is not None:
            skills = self.skills.allowed_ids(principal.skills, principal.authenticated)
        requested = parse_extensions(request.headers.get(EXTENSIONS_HEADER))
        request[APPLIED_EXTENSIONS] = tuple(
            uri for uri in dict.fromkeys(requested) if uri in self.supported_extensions
        )
        info = CallInfo(
            owner_key("", principal.client_id),
            requested,
            client_id=principal.client_id,
            skills=skills,
            origin=self._origin(request),
            last_event_id=request.headers.get(hdrs.LAST_EVENT_ID),
        )
        key = self.limit_key(request, info)
        if key:
            wait = self.requests.take(key)
            if wait > 0:
                raise RateLimitedError("requests", wait)
        return info

    def stream_slot(self, request: web.Request, info: CallInfo) -> str:
        """Take a stream slot: the key to release afterwards (``""``: none).

        Raises:
            RateLimitedError: The caller already holds ``max_streams_per_client`` streams.
        """
        key = self.limit_key(request, info)
        if key and not self.streams.acquire(key):
            raise RateLimitedError("open streams", 1.0)
        return key


async def echo_extensions(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: name the applied extensions in ``A2A-Extensions``."""
    applied = request.get(APPLIED_EXTENSIONS)
    if applied:
        response.headers[EXTENSIONS_HEADER] = join_extensions(applied)


def public_card(card: AgentCard, registry: ClientRegistry, skills: SkillSet | None) -> AgentCard:
    """The card to publish: security declarations of the registry, the public skills.

    Args:
        card: The configured card.
        registry: The registered clients (declarations only when authentication is on).
        skills: The skill set, whose public skills replace the card's ``skills``.

    Returns:
        A new card; ``card`` is not modified.
    """
    out = AgentCard.from_dict(card.to_dict())
    if skills is not None:
        out.skills = with_requirements(skills.card_skills(), registry)
    if registry.enabled:
        out.security_schemes = {**out.security_schemes, **registry.security_schemes()}
        if not out.security_requirements:
            out.security_requirements = registry.security_requirements()
    return out


def with_requirements(listed: list[AgentSkill], registry: ClientRegistry) -> list[AgentSkill]:
    """Copies of the card's skills, each with its issuers' scope requirements (if any)."""
    out = []
    for skill in listed:
        own = registry.skill_requirements(skill.id)
        if own and not skill.security_requirements:
            skill = AgentSkill.from_dict(skill.to_dict())
            skill.security_requirements = own
        out.append(skill)
    return out


def extended_card(
    publisher: CardPublisher, skills: SkillSet | None, registry: ClientRegistry | None = None
) -> Callable[[CallInfo], AgentCard]:
    """The GetExtendedAgentCard answer for a caller: the served card with its skills.

    Args:
        publisher: Renders the served card.
        skills: The skill set; without one the extended card lists the card's own skills.
        registry: Gives each skill its scope requirements (:func:`with_requirements`).

    Returns:
        A function of the call info giving the card.
    """

    def build(info: CallInfo) -> AgentCard:
        listed = None
        if skills is not None:
            allowed = info.skills if info.skills is not None else frozenset(skills.by_id)
            chosen = skills.card_skills(allowed)
            if registry is not None:
                chosen = with_requirements(chosen, registry)
            listed = [s.to_dict() for s in chosen]
        return AgentCard.from_dict(publisher.document(info.origin, skills=listed))

    return build
