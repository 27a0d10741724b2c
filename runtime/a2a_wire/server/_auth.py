"""Registered clients, credentials and who owns what (spec 7.3, 7.4, 7.5, 13.1, 13.4).

Without a registered client or token issuer authentication is off and every caller is
anonymous. A bearer JWT goes to the issuers (:mod:`a2a_wire.server._oauth`); credentials are
held as salted scrypt hashes (:func:`hash_secret`); finding the client of a presented value is
:mod:`._keyring`'s. No message, log line, ``repr`` or exception here holds a presented value.
The cost rules are in docs/server.md ("Authentication"), the design in docs/internals/server.md.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from a2a_wire.server._card import Signer
from a2a_wire.server._keyring import Keyring, Kind, tag
from a2a_wire.server._oauth import TokenIssuer, TokenSettings, named_issuers, security_scheme
from a2a_wire.server._principal import ANONYMOUS, AuthFailure, Principal
from a2a_wire.server._scrypt import ScryptHash, generate_token, hash_secret, verify_secret
from a2a_wire.server._skills import Skill
from a2a_wire.types import (
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

if TYPE_CHECKING:
    from a2a_wire.server._oauth._verify import TokenVerifier

__all__ = [
    "ANONYMOUS",
    "BEARER_SCHEME",
    "API_KEY_SCHEME",
    "DEFAULT_API_KEY_HEADER",
    "AuthFailure",
    "ClientRegistry",
    "Principal",
    "RegisteredClient",
    "SecurityConfig",
    "generate_token",
    "hash_secret",
    "owner_key",
    "verify_secret",
]

DEFAULT_API_KEY_HEADER = "X-API-Key"
BEARER_SCHEME = "bearer"
"""Name of the bearer scheme in the card's ``securitySchemes``."""
API_KEY_SCHEME = "apiKey"
"""Name of the API-key scheme in the card's ``securitySchemes``."""

SEPARATOR = "\x1f"
MAX_CREDENTIAL_LENGTH = 4096


def owner_key(tenant: str, client_id: str) -> str:
    """The owner string tasks, contexts and push configs are stored under (docs/internals/server.md)."""
    if not tenant and not client_id:
        return ""
    return f"{tenant}{SEPARATOR}{client_id}"


def _by_kind(api_key: str, token: str) -> tuple[tuple[Kind, str], tuple[Kind, str]]:
    return ("api_key", api_key), ("bearer", token)


@dataclass(frozen=True)
class RegisteredClient:
    """A client the server knows.

    Attributes:
        id: Its identity: owner of its tasks, key of its rate limits, named in logs.
        api_key_hash: :func:`hash_secret` of its API key, or ``""``.
        token_hash: :func:`hash_secret` of its bearer token, or ``""``.
        skills: Ids of the skills it may use; ``None`` (or a collection holding ``"*"``) for
            all of them.
    """

    id: str
    api_key_hash: str = ""
    token_hash: str = ""
    skills: Collection[str] | None = None
    _hashes: dict[Kind, ScryptHash] = field(init=False, repr=False, compare=False)
    _pins: dict[Kind, bytes] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Normalise ``skills`` and parse the hashes.

        Raises:
            ValueError: empty id or one holding a control character, no credential, or a hash
                not made by :func:`hash_secret`.
        """
        if not self.id or any(ord(c) < 32 for c in self.id):
            raise ValueError("a client id must be non-empty text without control characters")
        if not self.api_key_hash and not self.token_hash:
            raise ValueError(f"client {self.id!r} has neither an API key nor a token hash")
        skills = self.skills
        if skills is not None:
            skills = None if "*" in skills else frozenset(skills)
        object.__setattr__(self, "skills", skills)
        hashes: dict[Kind, ScryptHash] = {}
        for kind, text in _by_kind(self.api_key_hash, self.token_hash):
            if text:
                try:
                    hashes[kind] = ScryptHash.parse(text)
                except ValueError as exc:
                    raise ValueError(f"client {self.id!r}: {kind} hash: {exc}") from None
        object.__setattr__(self, "_hashes", hashes)
        object.__setattr__(self, "_pins", {})

    @classmethod
    def from_secrets(
        cls,
        id: str,
        *,
        token: str = "",
        api_key: str = "",
        token_hash: str = "",
        api_key_hash: str = "",
        skills: Collection[str] | None = None,
        log2_n: int = 14,
    ) -> RegisteredClient:
        """A client some of whose plain credentials the server has (e.g. read at start).

        A plain credential is hashed now (:func:`hash_secret`) and also pinned: the registry
        recognises it without any scrypt run (docs/server.md, "Authentication"). The plain
        value is not kept, only its HMAC under the per-process key.

        Args:
            id: The client id.
            token: Its plain bearer token, or ``""``.
            api_key: Its plain API key, or ``""``.
            token_hash: The hash of its bearer token instead of ``token``.
            api_key_hash: The hash of its API key instead of ``api_key``.
            skills: As for the class.
            log2_n: The scrypt cost of the hashes made here (lower values are for tests).

        Raises:
            ValueError: a kind given both plain and hashed, or as for the class.
        """
        if (token and token_hash) or (api_key and api_key_hash):
            raise ValueError(f"client {id!r}: give a credential either plain or hashed")
        client = cls(
            id,
            api_key_hash=hash_secret(api_key, log2_n=log2_n) if api_key else api_key_hash,
            token_hash=hash_secret(token, log2_n=log2_n) if token else token_hash,
            skills=skills,
        )
        pins = {kind: tag(kind, value) for kind, value in _by_kind(api_key, token) if value}
        client._pins.update(pins)
        return client

    @property
    def permitted(self) -> frozenset[str] | None:
        """The skill ids it may use, ``None`` for all."""
        return None if self.skills is None else frozenset(self.skills)

    @property
    def key_ids(self) -> dict[Kind, str]:
        """The key id of each of its credentials that has one (:func:`generate_token`)."""
        return {kind: hashed.kid for kind, hashed in self._hashes.items() if hashed.kid}


class ClientRegistry:
    """The registered clients and how credentials are presented.

    Args:
        clients: The clients; ids must be unique. None: authentication is off.
        api_key_header: The header carrying API keys.
        realm: The ``realm`` of ``WWW-Authenticate`` challenges.
        issuers: Trusted JWT issuers (needs the ``oauth`` extra).
        tokens: Limits of JWT checking.

    Raises:
        ValueError: a repeated client id, two credentials of one kind with the same key id, an
            unusable header name, a client id in an issuer's name space, or issuers without
            the ``oauth`` extra.
    """

    def __init__(
        self,
        clients: Sequence[RegisteredClient] = (),
        *,
        api_key_header: str = DEFAULT_API_KEY_HEADER,
        realm: str = "a2a",
        issuers: Sequence[TokenIssuer] = (),
        tokens: TokenSettings | None = None,
    ) -> None:
        if not re.fullmatch(r"[A-Za-z0-9-]+", api_key_header) or api_key_header.lower() in (
            "authorization",
            "a2a-version",
            "a2a-extensions",
        ):
            raise ValueError(f"unusable API key header name {api_key_header!r}")
        self.clients: dict[str, RegisteredClient] = {}
        for client in clients:
            if client.id in self.clients:
                raise ValueError(f"client id {client.id!r} is registered twice")
            self.clients[client.id] = client
        self.api_key_header = api_key_header
        self.realm = realm.replace('"', "")
        self._keyring = Keyring()
        for client in self.clients.values():
            for kind, hashed in client._hashes.items():
                self._keyring.add(client.id, kind, hashed, client._pins.get(kind))
        self._keyring.warn_about_legacy()
        self.issuers = named_issuers(issuers)
        self.tokens = tokens or TokenSettings()
        self.verifier: TokenVerifier | None = None
        if issuers:
            self.verifier = _verifier(issuers, self.tokens)
            for client_id in self.clients:
                if any(issuer.owns(client_id) for issuer in issuers):
                    raise ValueError(f"client id {client_id!r} is in a token issuer's name space")
        self._max_bearer = MAX_CREDENTIAL_LENGTH
        if self.verifier is not None:
            self._max_bearer = max(MAX_CREDENTIAL_LENGTH, self.tokens.max_token_bytes)

    async def close(self) -> None:
        """Release what the token issuers hold (their key fetches' HTTP session)."""
        if self.verifier is not None:
            await self.verifier.close()

    @property
    def enabled(self) -> bool:
        """Whether authentication is on (some client or token issuer is registered)."""
        return bool(self.clients) or self.verifier is not None

    def _uses(self, kind: Kind) -> bool:
        if kind == "bearer" and self.verifier is not None:
            return True
        return any(kind in c._hashes for c in self.clients.values())

    def security_schemes(self) -> dict[str, SecurityScheme]:
        """The card's ``securitySchemes`` for the credentials in use (spec 4.5)."""
        schemes = {name: security_scheme(issuer) for name, issuer in self.issuers.items()}
        if any("bearer" in c._hashes for c in self.clients.values()):
            http = HTTPAuthSecurityScheme(scheme="Bearer", description="Bearer token")
            schemes[BEARER_SCHEME] = SecurityScheme(http_auth_security_scheme=http)
        if self._uses("api_key"):
            key = APIKeySecurityScheme(location="header", name=self.api_key_header)
            schemes[API_KEY_SCHEME] = SecurityScheme(api_key_security_scheme=key)
        return schemes

    def security_requirements(self) -> list[SecurityRequirement]:
        """The card's ``securityRequirements``: any one of the schemes in use (spec 4.5.7).

        An issuer's entry lists its required scopes.
        """

        def scopes(name: str) -> StringList:
            issuer = self.issuers.get(name)
            return StringList(list_=list(issuer.required_scopes) if issuer else None)

        return [
            SecurityRequirement(schemes={name: scopes(name)}) for name in self.security_schemes()
        ]

    def skill_requirements(self, skill_id: str) -> list[SecurityRequirement]:
        """A skill's own ``securityRequirements`` (spec 4.4.5) when issuers map scopes to skills.

        For an issuer with ``skills_by_scope``, one requirement per scope opening the skill
        (with the required scopes); the other schemes as on the card. Empty when no issuer maps
        scopes: the card's requirements hold for every skill.
        """
        if not any(issuer.skills_by_scope for issuer in self.issuers.values()):
            return []
        out: list[SecurityRequirement] = []
        for requirement in self.security_requirements():
            (name,) = requirement.schemes
            issuer = self.issuers.get(name)
            if issuer is None or not issuer.skills_by_scope:
                out.append(requirement)
                continue
            for scope, ids in issuer.skills_by_scope.items():
                if skill_id in ids or "*" in ids:
                    scopes = list(dict.fromkeys((*issuer.required_scopes, scope)))
                    out.append(SecurityRequirement(schemes={name: StringList(list_=scopes)}))
        return out

    def challenges(self, failure: AuthFailure | None = None) -> list[str]:
        """``WWW-Authenticate`` values for a 401 answer (one per scheme in use)."""
        out: list[str] = []
        if self._uses("bearer"):
            extra = f', error="{failure.bearer_error}"' if failure and failure.bearer_error else ""
            if failure and failure.scope:
                extra += f', scope="{failure.scope}"'
            out.append(f'Bearer realm="{self.realm}"{extra}')
        if self._uses("api_key"):
            out.append(f'ApiKey realm="{self.realm}", header="{self.api_key_header}"')
        return out

    def presented(self, headers: Mapping[str, str]) -> tuple[Kind, str] | AuthFailure:
        """The credential a request carries: the bearer token, else the API key header.

        Args:
            headers: The request headers (case-insensitive mapping).

        Returns:
            ``(kind, value)``, or the failure when there is none or it is malformed.
        """
        authorization = headers.get("Authorization")
        if authorization is not None:
            scheme, _, value = authorization.strip().partition(" ")
            if scheme.lower() == "bearer" and value.strip():
                return self._bounded("bearer", value.strip())
            if headers.get(self.api_key_header) is None:
                return AuthFailure("unsupported or malformed Authorization header")
        api_key = headers.get(self.api_key_header)
        if api_key is not None and api_key.strip():
            return self._bounded("api_key", api_key.strip())
        return AuthFailure("no credentials")

    def _bounded(self, kind: Kind, value: str) -> tuple[Kind, str] | AuthFailure:
        if len(value) > (self._max_bearer if kind == "bearer" else MAX_CREDENTIAL_LENGTH):
            return AuthFailure("credential too long", "invalid_token" if kind == "bearer" else "")
        return kind, value

    async def authenticate(self, headers: Mapping[str, str]) -> Principal | AuthFailure:
        """Identify the caller of a request.

        Args:
            headers: The request headers.

        Returns:
            :data:`ANONYMOUS` when authentication is off, the client's :class:`Principal`,
            or why the request is refused.
        """
        if not self.enabled:
            return ANONYMOUS
        credential = self.presented(headers)
        if isinstance(credential, AuthFailure):
            return credential
        kind, value = credential
        if kind == "bearer" and self.verifier is not None and _looks_like_jwt(value):
            return await self.verifier.verify(value)
        client_id = await self._keyring.find(kind, value)
        if not client_id:
            what = "bearer token" if kind == "bearer" else "API key"
            return AuthFailure(f"unknown {what}", "invalid_token" if kind == "bearer" else "")
        return Principal(client_id, self.clients[client_id].permitted)


@dataclass(frozen=True)
class SecurityConfig:
    """Everything about authentication, authorization and the card's trust a server uses.

    Attributes:
        clients: Registered clients; none turns authentication off.
        skills: Published skills with their executors (:mod:`a2a_wire.server._skills`); when given,
            they replace the card's ``skills`` and the ``executor`` of ``create_app``.
        extended_card: Serve GetExtendedAgentCard (the card with the skills the caller may
            use). Needs registered clients (spec 13.3) and ``capabilities.extendedAgentCard``.
        card_signer: Signs the served card (spec 8.4), e.g. a
            :class:`a2a_wire.card_signing.CardSigner`; needs ``ServerSettings.public_url``.
        api_key_header: The header carrying API keys.
        realm: The ``realm`` of ``WWW-Authenticate`` challenges.
        oauth2: Issuers whose JWT access tokens are accepted beside the clients' credentials
            (:class:`~a2a_wire.server._oauth.TokenIssuer`; needs the ``oauth`` extra).
        tokens: Limits of JWT checking and key fetching.
    """

    clients: Sequence[RegisteredClient] = ()
    skills: Sequence[Skill] = ()
    extended_card: bool = False
    card_signer: Signer | None = None
    api_key_header: str = DEFAULT_API_KEY_HEADER
    realm: str = "a2a"
    oauth2: Sequence[TokenIssuer] = ()
    tokens: TokenSettings = field(default_factory=TokenSettings)

    def __post_init__(self) -> None:
        """Check that the parts fit together.

        Raises:
            ValueError: an extended card without registered clients or token issuers (spec
                13.3 requires authentication for it).
        """
        if self.extended_card and not self.clients and not self.oauth2:
            raise ValueError("an extended agent card needs registered clients (spec 13.3)")

    def registry(self) -> ClientRegistry:
        """The :class:`ClientRegistry` of :attr:`clients` and :attr:`oauth2`."""
        return ClientRegistry(
            self.clients,
            api_key_header=self.api_key_header,
            realm=self.realm,
            issuers=self.oauth2,
            tokens=self.tokens,
        )


def _looks_like_jwt(value: str) -> bool:
    """Whether a bearer value has the JWS compact form (three parts, a JSON header)."""
    return value.count(".") == 2 and value.startswith("eyJ")


def _verifier(issuers: Sequence[TokenIssuer], tokens: TokenSettings) -> TokenVerifier:
    try:
        from a2a_wire.server._oauth._verify import TokenVerifier
    except ImportError:
        raise ValueError("JWT access tokens need the oauth extra (jwcrypto)") from None
    return TokenVerifier(issuers, tokens)
