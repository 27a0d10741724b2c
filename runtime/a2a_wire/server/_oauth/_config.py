"""What a server trusts of JWT access tokens: issuers (:class:`TokenIssuer`) and limits.

Plain data, importable without the ``oauth`` extra; the checks that need jwcrypto are in
:mod:`._verify`. How each field is used: docs/security.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

import yarl

from a2a_wire.netguard import AddressPolicy

__all__ = ["ASYMMETRIC_ALGORITHMS", "DISCOVERY_PATH", "TokenIssuer", "TokenSettings"]

ASYMMETRIC_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
"""The JWS algorithms an issuer may be trusted with: public-key ones only (never ``none`` or HMAC)."""

DISCOVERY_PATH = "/.well-known/openid-configuration"
_IDENTITY_SEPARATOR = "#"


def _strings(value: Collection[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


@dataclass(frozen=True)
class TokenIssuer:
    """An OAuth 2.0 / OpenID Connect issuer whose JWT access tokens the server accepts.

    The caller of an accepted token is ``"<issuer>#<caller claim>"``: the owner of its tasks,
    the key of its rate limits (docs/security.md, "Scoping").

    Attributes:
        issuer: The issuer identifier, compared exactly with the token's ``iss``.
        audience: A value the token's ``aud`` must hold (this server's identifier at the issuer).
        algorithms: The accepted JWS algorithms, a subset of :data:`ASYMMETRIC_ALGORITHMS`.
        required_scopes: Scopes every token must carry; else HTTP 403 ``insufficient_scope``.
        caller_claim: The claim naming the caller (``sub``; ``azp``, ``client_id`` or ``oid``
            at some providers for the client-credentials grant).
        scope_claim: The claim holding the scopes: a space-separated string or a list
            (``scope``; ``scp`` or ``roles`` at some providers).
        skills_by_scope: Scope -> ids of the skills it opens (``"*"``: all). Empty: a token
            may use every skill; else only the skills its scopes open.
        discovery_url: The OpenID discovery document (RFC 8414 metadata works too); default
            ``issuer`` + ``/.well-known/openid-configuration``. Ignored with ``jwks_url``.
        jwks_url: The JWKS, for an issuer without discovery document (then ``token_url`` is
            needed for the card).
        token_url: Advertised on the card as the client-credentials token endpoint; empty:
            the card names the discovery URL (OpenID Connect scheme) instead.
        scheme_name: The key of the card's ``securitySchemes`` entry; default ``oauth2``,
            then ``oauth2-2``, ... in order.
        description: The card scheme's description.
    """

    issuer: str
    audience: str
    algorithms: Collection[str] = ("RS256",)
    required_scopes: Collection[str] = ()
    caller_claim: str = "sub"
    scope_claim: str = "scope"
    skills_by_scope: Mapping[str, Collection[str]] = field(default_factory=dict)
    discovery_url: str = ""
    jwks_url: str = ""
    token_url: str = ""
    scheme_name: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        """Normalise the collections and check the values.

        Raises:
            ValueError: an issuer that is not an absolute http(s) URL without fragment, no
                audience, an algorithm outside :data:`ASYMMETRIC_ALGORITHMS`, an empty claim
                name, or a URL that is not absolute http(s).
        """
        parsed = yarl.URL(self.issuer)
        if not parsed.absolute or parsed.scheme not in ("http", "https") or parsed.fragment:
            raise ValueError(f"issuer {self.issuer!r} must be an absolute http(s) URL")
        if not self.audience:
            raise ValueError(f"issuer {self.issuer!r} needs an audience")
        algorithms = _strings(self.algorithms)
        bad = [alg for alg in algorithms if alg not in ASYMMETRIC_ALGORITHMS]
        if bad or not algorithms:
            allowed = ", ".join(ASYMMETRIC_ALGORITHMS)
            raise ValueError(f"issuer {self.issuer!r}: algorithms must be some of {allowed}")
        object.__setattr__(self, "algorithms", algorithms)
        object.__setattr__(self, "required_scopes", _strings(self.required_scopes))
        mapping = {scope: frozenset(_strings(ids)) for scope, ids in self.skills_by_scope.items()}
        object.__setattr__(self, "skills_by_scope", mapping)
        if not self.caller_claim or not self.scope_claim:
            raise ValueError(f"issuer {self.issuer!r}: claim names must not be empty")
        for name in ("discovery_url", "jwks_url", "token_url"):
            url = getattr(self, name)
            if url:
                part = yarl.URL(url)
                if not part.absolute or part.scheme not in ("http", "https"):
                    raise ValueError(f"issuer {self.issuer!r}: {name} must be absolute http(s)")

    @property
    def metadata_url(self) -> str:
        """The discovery document's URL."""
        return self.discovery_url or self.issuer.rstrip("/") + DISCOVERY_PATH

    def identity(self, caller: str) -> str:
        """The client id of a caller this issuer vouches for."""
        return f"{self.issuer}{_IDENTITY_SEPARATOR}{caller}"

    def owns(self, client_id: str) -> bool:
        """Whether ``client_id`` is in this issuer's name space (no registered client may be)."""
        return client_id.startswith(self.issuer + _IDENTITY_SEPARATOR)

    def permitted(self, scopes: Collection[str]) -> frozenset[str] | None:
        """The skill ids the scopes open; ``None`` for all of them."""
        if not self.skills_by_scope:
            return None
        opened: set[str] = set()
        for scope in scopes:
            ids = self.skills_by_scope.get(scope, frozenset())
            if "*" in ids:
                return None
            opened.update(ids)
        return frozenset(opened)

    @property
    def scopes(self) -> tuple[str, ...]:
        """Every scope the configuration names: required ones first."""
        return tuple(dict.fromkeys((*self.required_scopes, *self.skills_by_scope)))


@dataclass(frozen=True)
class TokenSettings:
    """Limits of JWT checking and of fetching the issuers' keys (docs/server.md).

    Attributes:
        leeway_seconds: Clock skew allowed on ``exp`` and ``nbf``.
        max_token_bytes: Longest accepted token; a longer one is refused unread.
        jwks_refetch_interval_seconds: Least time between two fetches of an issuer's keys
            that an unknown ``kid`` or a failed fetch causes: a flood of made-up key ids
            costs one fetch per interval.
        jwks_min_cache_seconds: Keys are kept at least this long, whatever the cache headers.
        jwks_max_cache_seconds: ... and at most this long before they are fetched again.
        jwks_default_cache_seconds: How long keys are kept without cache headers.
        fetch_timeout_seconds: Longest time one fetch of a discovery document or JWKS takes.
        max_document_bytes: Largest discovery document or JWKS read.
        verified_cache_size: Accepted tokens remembered (by keyed hash, until they expire or
            their key changes), so that a caller's next requests skip the signature check;
            ``0`` checks every request.
        allow_http: Accept http:// issuer, discovery and JWKS URLs (https only by default).
        allowlist: Hosts and networks exempt from the outgoing address guard for these fetches.
        clock: Seconds since the epoch (Python only; tests pass their own).
    """

    leeway_seconds: float = 30.0
    max_token_bytes: int = 8192
    jwks_refetch_interval_seconds: float = 60.0
    jwks_min_cache_seconds: float = 60.0
    jwks_max_cache_seconds: float = 86400.0
    jwks_default_cache_seconds: float = 3600.0
    fetch_timeout_seconds: float = 10.0
    max_document_bytes: int = 262144
    verified_cache_size: int = 4096
    allow_http: bool = False
    allowlist: AddressPolicy = field(default_factory=AddressPolicy)
    clock: Callable[[], float] = field(default=time.time, compare=False, repr=False)

    def __post_init__(self) -> None:
        """Check the limits.

        Raises:
            ValueError: a negative duration, a non-positive size, or a minimum cache time
                above the maximum.
        """
        for name in (
            "leeway_seconds",
            "jwks_refetch_interval_seconds",
            "jwks_min_cache_seconds",
            "jwks_max_cache_seconds",
            "jwks_default_cache_seconds",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if self.fetch_timeout_seconds <= 0:
            raise ValueError("fetch_timeout_seconds must be > 0")
        if self.max_token_bytes < 1 or self.max_document_bytes < 1:
            raise ValueError("max_token_bytes and max_document_bytes must be >= 1")
        if self.verified_cache_size < 0:
            raise ValueError("verified_cache_size must be >= 0")
        if self.jwks_min_cache_seconds > self.jwks_max_cache_seconds:
            raise ValueError("jwks_min_cache_seconds must not exceed jwks_max_cache_seconds")
