"""OAuth 2.0 client credentials read from the card: a credential provider (RFC 6749 section 4.4).

:class:`ClientCredentials` finds the token endpoint in the card's ``securitySchemes`` (an
OAuth 2.0 ``clientCredentials`` flow, or an OpenID Connect discovery document), asks it for an
access token, keeps the token until shortly before it expires, and drops it when the agent
answers ``401 invalid_token`` so the client's one retry gets a fresh one. Requests go through
the client's address guard. Neither the secret nor a token appears in a message, log or ``repr``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import urllib.parse
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import yarl

from a2a_wire import __version__, netguard
from a2a_wire.client._credentials import CredentialRequest, Secret
from a2a_wire.client._errors import CredentialsError
from a2a_wire.client._settings import ClientSettings
from a2a_wire.types import AgentCard

if TYPE_CHECKING:
    from a2a_wire.card_signing import SigningKey

__all__ = ["AUTH_METHODS", "ClientCredentials"]

log = logging.getLogger("a2a_wire.client")

AUTH_METHODS = ("client_secret_basic", "client_secret_post", "private_key_jwt")
"""How the client authenticates at the token endpoint (RFC 6749 section 2.3.1; RFC 7523)."""
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ASSERTION_SECONDS = 60
_MAX_ANSWER_BYTES = 65536


class ClientCredentials:
    """Access tokens by the client-credentials grant, for the agents whose card asks for them.

    Args:
        client_id: The client's id at the provider.
        client_secret: Its secret (``client_secret_basic``, ``client_secret_post``).
        private_key: Its signing key for ``private_key_jwt`` (RFC 7523 section 2.2), a
            :class:`a2a_wire.card_signing.SigningKey` (needs the ``signing`` or ``oauth``
            extra): each token request carries a fresh assertion signed with it.
        auth_method: ``client_secret_basic`` (default with a secret), ``client_secret_post``
            or ``private_key_jwt`` (default with a key).
        token_url: The token endpoint; empty: taken from the card (OAuth 2.0 flow, or the
            ``token_endpoint`` of the OpenID Connect discovery document it names).
        scopes: The scopes to ask for; ``None``: those the card's requirements name for the
            scheme.
        settings: The address guard (``allow``, ``allow_private``); ``card_timeout`` bounds each
            token or discovery request.
        refresh_margin_seconds: A token is replaced this long before it expires.
        default_lifetime_seconds: How long a token without ``expires_in`` is kept.
        clock: Monotonic seconds (tests pass their own).

    Raises:
        ValueError: an empty client id, no secret (or key) for the method, or an unknown
            ``auth_method``.
    """

    def __init__(
        self,
        client_id: str,
        client_secret: str | Secret = "",
        *,
        private_key: SigningKey | None = None,
        auth_method: str = "",
        token_url: str = "",
        scopes: Sequence[str] | None = None,
        settings: ClientSettings | None = None,
        refresh_margin_seconds: float = 30.0,
        default_lifetime_seconds: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        secret = client_secret if isinstance(client_secret, Secret) else Secret(client_secret)
        auth_method = auth_method or ("private_key_jwt" if private_key else "client_secret_basic")
        if auth_method not in AUTH_METHODS:
            raise ValueError(f"auth_method must be one of {', '.join(AUTH_METHODS)}")
        needed = private_key if auth_method == "private_key_jwt" else secret.reveal()
        if not client_id or not needed:
            what = "a private key" if auth_method == "private_key_jwt" else "a secret"
            raise ValueError(f"client credentials need a client id and {what}")
        self.client_id = client_id
        self._secret = secret
        self._key = private_key
        self.auth_method = auth_method
        self.token_url = token_url
        self.scopes = None if scopes is None else tuple(scopes)
        self.settings = settings or ClientSettings()
        self.margin = refresh_margin_seconds
        self.default_lifetime = default_lifetime_seconds
        self.clock = clock
        self._tokens: dict[str, tuple[Secret, float]] = {}  # by token URL and scopes
        self._lock = asyncio.Lock()
        self.fetches = 0

    def __repr__(self) -> str:
        return f"ClientCredentials(client_id={self.client_id!r}, secret=***)"

    async def headers(self, request: CredentialRequest) -> Mapping[str, str]:
        """``Authorization: Bearer <token>``, a cached token or a new one.

        Raises:
            CredentialsError: no usable scheme on the card, or the token endpoint refused.
        """
        key, url, scopes = await self._target(request.card)
        async with self._lock:
            held = self._tokens.get(key)
            if held is None or self.clock() >= held[1]:
                held = await self._fetch(url, scopes)
                self._tokens[key] = held
        return {"Authorization": f"Bearer {held[0].reveal()}"}

    async def rejected(self, request: CredentialRequest, challenge: str) -> bool:
        """The agent answered 401: forget its token; whether a retry may help.

        Args:
            request: The request that was refused.
            challenge: Its ``WWW-Authenticate`` header.

        Returns:
            True when the refusal was ``invalid_token`` (the token expired or was revoked).
        """
        if 'error="invalid_token"' not in challenge.replace(" ", ""):
            return False
        key, _, _ = await self._target(request.card)
        self._tokens.pop(key, None)
        return True

    async def _target(self, card: AgentCard | None) -> tuple[str, str, tuple[str, ...]]:
        url, scopes = self.token_url, self.scopes
        if not url:
            url, wanted = await self._from_card(card)
            scopes = wanted if scopes is None else scopes
        scopes = scopes or ()
        return f"{url} {' '.join(scopes)}", url, scopes

    async def _from_card(self, card: AgentCard | None) -> tuple[str, tuple[str, ...]]:
        """The token URL and scopes of the first client-credentials scheme the card offers."""
        if card is None:
            raise CredentialsError("no token_url given and no agent card to find one in")
        for name, scopes in _alternatives(card):
            scheme = card.security_schemes.get(name)
            if scheme is None:
                continue
            oauth2 = scheme.oauth2_security_scheme
            flow = oauth2.flows.client_credentials if oauth2 and oauth2.flows else None
            if flow is not None and flow.token_url:
                return flow.token_url, scopes
            oidc = scheme.open_id_connect_security_scheme
            if oidc is not None and oidc.open_id_connect_url:
                return await self._discover(oidc.open_id_connect_url), scopes
        raise CredentialsError("the agent card offers no OAuth 2.0 client-credentials scheme")

    async def _discover(self, url: str) -> str:
        document = await self._json("GET", url, None, {})
        endpoint = document.get("token_endpoint")
        if not isinstance(endpoint, str) or not endpoint:
            raise CredentialsError(f"the discovery document at {url} names no token_endpoint")
        return endpoint

    async def _fetch(self, url: str, scopes: tuple[str, ...]) -> tuple[Secret, float]:
        form = {"grant_type": "client_credentials"}
        if scopes:
            form["scope"] = " ".join(scopes)
        headers = {}
        if self.auth_method == "client_secret_basic":  # RFC 6749 section 2.3.1: form-encoded
            user = urllib.parse.quote(self.client_id, safe="")
            password = urllib.parse.quote(self._secret.reveal(), safe="")
            headers["Authorization"] = aiohttp.encode_basic_auth(user, password)
        elif self.auth_method == "private_key_jwt":
            form |= {
                "client_id": self.client_id,
                "client_assertion_type": ASSERTION_TYPE,
                "client_assertion": self._assertion(url),
            }
        else:
            form |= {"client_id": self.client_id, "client_secret": self._secret.reveal()}
        self.fetches += 1
        answer = await self._json("POST", url, form, headers)
        token = answer.get("access_token")
        kind = answer.get("token_type", "")
        if not isinstance(token, str) or not token or not isinstance(kind, str):
            raise CredentialsError(f"the token endpoint {url} answered without an access token")
        if kind.lower() != "bearer":
            raise CredentialsError(f"the token endpoint {url} gave a {kind!r} token, not Bearer")
        lifetime = answer.get("expires_in")
        seconds = self.default_lifetime
        if isinstance(lifetime, int | float) and not isinstance(lifetime, bool):
            seconds = float(lifetime) if math.isfinite(lifetime) else seconds
        log.debug("access token for %s from %s, %g s", self.client_id, url, seconds)
        return Secret(token), self.clock() + max(seconds - self.margin, 0.0)

    def _assertion(self, token_url: str) -> str:
        """A client assertion for ``token_url`` (RFC 7523 section 3), valid for a minute."""
        from jwcrypto import jwt

        assert self._key is not None
        now = int(time.time())
        claims = {
            "iss": self.client_id,
            "sub": self.client_id,
            "aud": token_url,
            "jti": uuid.uuid4().hex,
            "iat": now,
            "exp": now + ASSERTION_SECONDS,
        }
        header = {"alg": self._key.alg, "kid": self._key.kid, "typ": "JWT"}
        token = jwt.JWT(header=header, claims=claims)
        token.make_signed_token(self._key.key)
        signed: str = token.serialize()
        return signed

    async def _json(
        self, verb: str, url: str, form: dict[str, str] | None, headers: dict[str, str]
    ) -> dict[str, Any]:
        parsed = yarl.URL(url)
        headers = {"Accept": "application/json", "User-Agent": f"a2a-wire/{__version__}", **headers}
        connector = netguard.GuardedConnector(self.settings.policy)
        timeout = aiohttp.ClientTimeout(total=self.settings.card_timeout)
        try:  # a session per request: tokens are fetched rarely, and nothing is left to close
            async with (
                aiohttp.ClientSession(
                    connector=connector, timeout=timeout, trust_env=False
                ) as http,
                http.request(verb, parsed, data=form, headers=headers) as response,
            ):
                body = await response.content.read(_MAX_ANSWER_BYTES + 1)
                status = response.status
        except netguard.AddressGuardError as exc:
            raise CredentialsError(f"{exc}; allowlist it in ClientSettings.allow") from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise CredentialsError(f"request to {url} failed: {type(exc).__name__}") from None
        try:
            document = orjson.loads(body) if len(body) <= _MAX_ANSWER_BYTES else None
        except orjson.JSONDecodeError:
            document = None
        if status != 200:
            code = document.get("error") if isinstance(document, dict) else None
            said = f" ({code})" if isinstance(code, str) and code.isascii() else ""
            raise CredentialsError(f"{url} answered HTTP {status}{said}")
        if not isinstance(document, dict):
            raise CredentialsError(f"{url} did not answer a JSON object")
        return document


def _alternatives(card: AgentCard) -> list[tuple[str, tuple[str, ...]]]:
    """``(scheme name, scopes)`` of each requirement one scheme satisfies (spec 4.5.7), in order.

    A requirement naming several schemes needs all of them, which one token cannot give; a card
    without requirements offers each of its schemes without scopes.
    """
    out = [
        (name, tuple(scopes.list_))
        for requirement in card.security_requirements
        if len(requirement.schemes) == 1
        for name, scopes in requirement.schemes.items()
    ]
    return out if card.security_requirements else [(name, ()) for name in card.security_schemes]
