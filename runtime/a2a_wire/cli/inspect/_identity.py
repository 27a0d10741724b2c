"""Who the inspector is to the open agent: the command line's credential, or a scheme of its card.

The page lists the card's ``securitySchemes`` (:func:`schemes`) and may pick one (spec 4.5,
7.3): an OAuth 2.0 client-credentials flow or an OpenID Connect scheme with a client id and
secret (:class:`~a2a_wire.client.ClientCredentials` gets the token), or an API-key scheme with a
key (:class:`~a2a_wire.client.CardApiKey`). :func:`pick` builds that provider for the picked
scheme alone and asks it for a credential once, so the page learns whether a token was obtained.
The secret, the key and the token stay in this process: what the page gets back
(:meth:`Identity.summary`) names the scheme, the client id and the outcome, never a value.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from a2a_wire.client import (
    CardApiKey,
    ClientCredentials,
    ClientSettings,
    CredentialProvider,
    CredentialRequest,
    CredentialsError,
    Secret,
)
from a2a_wire.errors import A2AError
from a2a_wire.types import AgentCard

__all__ = ["COMMAND_LINE", "Identity", "IdentityError", "pick", "schemes"]

COMMAND_LINE = ""
"""The scheme name of the command line's credential (``--token``, ``--client-id``, ...)."""
_SECRET_LIMIT = 4096
_SECRET_METHODS = ("client_secret_basic", "client_secret_post")  # RFC 6749 section 2.3.1


class IdentityError(A2AError):
    """The page's choice of scheme or its values cannot be used (the message holds no secret)."""


def _kind(scheme: Mapping[str, Any]) -> tuple[str, dict[str, Any], bool]:
    """The scheme's kind, what the page shows of it, and whether the inspector can satisfy it."""
    if "oauth2SecurityScheme" in scheme:
        flows = scheme["oauth2SecurityScheme"].get("flows") or {}
        flow = flows.get("clientCredentials") or {}
        shown = {"tokenUrl": flow.get("tokenUrl", ""), "scopes": sorted(flow.get("scopes") or {})}
        return "oauth2", shown, bool(flow.get("tokenUrl"))
    if "openIdConnectSecurityScheme" in scheme:
        url = scheme["openIdConnectSecurityScheme"].get("openIdConnectUrl", "")
        return "openIdConnect", {"discoveryUrl": url}, bool(url)
    if "apiKeySecurityScheme" in scheme:
        key = scheme["apiKeySecurityScheme"]
        location = key.get("location", "")
        shown = {"location": location, "keyName": key.get("name", "")}
        return "apiKey", shown, location in ("header", "cookie")
    if "httpAuthSecurityScheme" in scheme:
        return "http", {"scheme": scheme["httpAuthSecurityScheme"].get("scheme", "")}, False
    if "mtlsSecurityScheme" in scheme:
        return "mtls", {}, False
    return "unknown", {}, False


def schemes(card: AgentCard) -> list[dict[str, Any]]:
    """The card's security schemes as the page lists them, in the card's order.

    Returns:
        ``{"name", "kind", "usable", ...}`` per scheme: ``kind`` is ``oauth2`` (with
        ``tokenUrl`` and ``scopes`` of its client-credentials flow), ``openIdConnect`` (with
        ``discoveryUrl``), ``apiKey`` (``location``, ``keyName``), ``http`` or ``mtls``; ``usable``
        says whether the inspector can get its credential (``http`` bearer tokens are given on
        the command line instead).
    """
    document = card.to_dict()
    listed = []
    for name, scheme in (document.get("securitySchemes") or {}).items():
        kind, shown, usable = _kind(scheme)
        listed.append({"name": name, "kind": kind, "usable": usable, **shown})
    return listed


def _narrowed(card: AgentCard, name: str) -> AgentCard:
    """``card`` offering the scheme ``name`` alone, with the scopes its requirements name."""
    document = card.to_dict()
    wanted: list[str] = []
    for requirement in document.get("securityRequirements") or []:
        named = requirement.get("schemes") or {}
        if list(named) == [name]:
            wanted = list((named[name] or {}).get("list") or [])
            break
    document["securitySchemes"] = {name: document["securitySchemes"][name]}
    document["securityRequirements"] = [{"schemes": {name: {"list": wanted}}}]
    return AgentCard.from_dict(document)


class _OneScheme:
    """A provider shown a card that offers the picked scheme only."""

    def __init__(self, provider: CredentialProvider, card: AgentCard) -> None:
        self._provider = provider
        self._card = card

    async def headers(self, request: CredentialRequest) -> Mapping[str, str]:
        """The provider's headers for the picked scheme."""
        return await self._provider.headers(replace(request, card=self._card))

    async def rejected(self, request: CredentialRequest, challenge: str) -> bool:
        """Pass a 401 on to the provider (a token it can replace)."""
        rejected = getattr(self._provider, "rejected", None)
        if rejected is None:
            return False
        return bool(await rejected(replace(request, card=self._card), challenge))


@dataclass
class Identity:
    """The credential the inspector's client presents, and what the page may know of it.

    Attributes:
        provider: The credential provider, or ``None`` for no credential.
        scheme: The picked scheme's name (:data:`COMMAND_LINE` for the command line's).
        kind: The scheme's kind (``oauth2``, ``openIdConnect``, ``apiKey``) or ``command line``.
        details: What the page shows besides: ``clientId``, ``authMethod``, ``token``
            (``"obtained"``, ``"set"`` for an API key, ``"failed"``), ``obtainedAt`` (ms since
            the epoch), ``error`` (why it failed).
    """

    provider: CredentialProvider | None
    scheme: str = COMMAND_LINE
    kind: str = "command line"
    details: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """What the page shows: never the secret, the key or a token."""
        return {
            "scheme": self.scheme,
            "kind": self.kind,
            "credential": self.provider is not None,
            **self.details,
        }


def _text(body: Mapping[str, Any], name: str, *, limit: int = 1000) -> str:
    value = body.get(name)
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > limit:
        raise IdentityError(f"{name} must be a string of at most {limit} characters")
    return value.strip()


def _provider(
    body: Mapping[str, Any], name: str, kind: str, settings: ClientSettings
) -> tuple[CredentialProvider, dict[str, Any]]:
    """The provider the page's values make for scheme ``name``, and the details shown."""
    if kind == "apiKey":
        key = _text(body, "apiKey", limit=_SECRET_LIMIT)
        if not key:
            raise IdentityError("give the API key")
        return CardApiKey(Secret(key), scheme_name=name), {}
    client_id = _text(body, "clientId")
    secret = _text(body, "clientSecret", limit=_SECRET_LIMIT)
    method = _text(body, "authMethod") or "client_secret_basic"
    if method not in _SECRET_METHODS:
        raise IdentityError(f"authMethod must be one of {', '.join(_SECRET_METHODS)}")
    if not client_id or not secret:
        raise IdentityError("give the client id and the client secret")
    provider = ClientCredentials(client_id, Secret(secret), auth_method=method, settings=settings)
    return provider, {"clientId": client_id, "authMethod": method}


async def pick(
    card: AgentCard, agent_url: str, body: Mapping[str, Any], settings: ClientSettings
) -> Identity:
    """The identity of the scheme ``body["scheme"]`` with the page's values, tried once.

    Args:
        card: The open agent's card.
        agent_url: Its interface URL (told to the provider).
        body: ``scheme``, and ``clientId``, ``clientSecret``, ``authMethod`` for an OAuth 2.0
            or OpenID Connect scheme, or ``apiKey`` for an API-key scheme.
        settings: The address guard of the token (and discovery) requests.

    Returns:
        The identity; a token endpoint that refused is reported in its details (the page
        shows why), and the provider is kept so that the next call tries again.

    Raises:
        IdentityError: an unknown or unusable scheme, or missing values.
    """
    name = _text(body, "scheme")
    listed = {s["name"]: s for s in schemes(card)}
    if name not in listed:
        raise IdentityError(f"the card declares no security scheme {name!r}")
    if not listed[name]["usable"]:
        raise IdentityError(f"the inspector cannot obtain a credential for scheme {name!r}")
    kind = listed[name]["kind"]
    made, details = _provider(body, name, kind, settings)
    provider = _OneScheme(made, _narrowed(card, name))
    identity = Identity(provider, name, kind, details)
    try:
        await provider.headers(CredentialRequest(agent_url, "SendMessage", card))
    except CredentialsError as exc:
        details.update(token="failed", error=str(exc))
    else:
        details.update(
            token="obtained" if kind != "apiKey" else "set", obtainedAt=time.time() * 1000
        )
    return identity
