"""Checking a JWT access token (RFC 9068, RFC 7519, RFC 8725) against the configured issuers.

The issuer is chosen by the token's ``iss`` before anything is trusted; from then on only that
issuer's algorithms and keys count. The signature is jwcrypto's; the claims are checked here.
Refusals say why in fixed words, never holding the token. An accepted token is remembered under
its keyed hash (up to ``verified_cache_size``) until it expires or its key is no longer the one
held, so a caller's later requests cost one HMAC, not a signature check.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from jwcrypto import jwk, jws
from jwcrypto.common import JWException

from a2a_wire import netguard
from a2a_wire.server._keyring import tag
from a2a_wire.server._oauth._config import TokenIssuer, TokenSettings
from a2a_wire.server._oauth._keys import IssuerKeys
from a2a_wire.server._principal import AuthFailure, Principal

__all__ = ["MAX_CALLER_LENGTH", "TokenVerifier"]

_KEY_TYPES = {"RS": ("RSA", ""), "PS": ("RSA", ""), "ES256": ("EC", "P-256")}
_KEY_TYPES |= {"ES384": ("EC", "P-384"), "ES512": ("EC", "P-521")}
_TYPES = frozenset({"jwt", "at+jwt", "application/jwt", "application/at+jwt"})
MAX_CALLER_LENGTH = 1024


def _fits(key: jwk.JWK, alg: str) -> bool:
    """Whether ``key`` may verify ``alg``: its type (and curve) and its own ``alg``, if any."""
    if key.get("alg") not in (None, alg):
        return False
    if alg == "EdDSA":
        return bool(key.get("kty") == "OKP" and key.get("crv") in ("Ed25519", "Ed448"))
    kty, crv = _KEY_TYPES.get(alg, _KEY_TYPES.get(alg[:2], ("", "")))
    return bool(key.get("kty") == kty and (not crv or key.get("crv") == crv))


def _invalid(reason: str) -> AuthFailure:
    return AuthFailure(reason, "invalid_token")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _scopes(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list):
        return tuple(item for item in value if isinstance(item, str))
    return ()


@dataclass(frozen=True, slots=True)
class _Accepted:
    """A verified token: whom it names, until when, and the key that verified it."""

    principal: Principal
    expires: float
    keys: IssuerKeys
    kid: str
    key: jwk.JWK


class TokenVerifier:
    """Verifies bearer JWTs of the configured issuers.

    Args:
        issuers: The trusted issuers; their ``issuer`` values must be unique.
        settings: Limits, address guard and clock.

    Raises:
        ValueError: an issuer configured twice.
    """

    def __init__(self, issuers: Sequence[TokenIssuer], settings: TokenSettings) -> None:
        self.settings = settings
        self.issuers: dict[str, TokenIssuer] = {}
        for issuer in issuers:
            if issuer.issuer in self.issuers:
                raise ValueError(f"issuer {issuer.issuer!r} is configured twice")
            self.issuers[issuer.issuer] = issuer
        self._session: aiohttp.ClientSession | None = None
        self.keys = {
            name: IssuerKeys(issuer, settings, self._http) for name, issuer in self.issuers.items()
        }
        self._accepted: OrderedDict[bytes, _Accepted] = OrderedDict()

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            timeout = aiohttp.ClientTimeout(total=self.settings.fetch_timeout_seconds)
            connector = netguard.GuardedConnector(self.settings.allowlist)
            self._session = aiohttp.ClientSession(connector=connector, timeout=timeout)
        return self._session

    async def close(self) -> None:
        """Close the HTTP session of the key fetches."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def verify(self, token: str) -> Principal | AuthFailure:
        """The caller a token names, or why it is refused.

        Args:
            token: The bearer value.

        Returns:
            The :class:`Principal` (client id ``"<issuer>#<caller>"``, skills by scope), or an
            :class:`AuthFailure` with ``invalid_token`` or ``insufficient_scope`` (RFC 6750
            section 3.1), or with ``retry_after`` when the issuer's keys could not be fetched.
        """
        if len(token) > self.settings.max_token_bytes:
            return _invalid("token too long")
        digest = tag("bearer", token)
        known = self._remembered(digest)
        if known is not None:
            return known
        parsed = jws.JWS()
        try:
            parsed.deserialize(token)
            header = parsed.jose_header
            claims = orjson.loads(parsed.objects["payload"])
        except (JWException, ValueError, KeyError, TypeError):
            return _invalid("malformed token")
        if not isinstance(header, dict) or not isinstance(claims, dict):
            return _invalid("malformed token")
        named = claims.get("iss")
        issuer = self.issuers.get(named) if isinstance(named, str) else None
        if issuer is None:
            return _invalid("unknown issuer")
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in issuer.algorithms:
            return _invalid("algorithm not accepted")
        typ = header.get("typ")
        if typ is not None and (not isinstance(typ, str) or typ.lower() not in _TYPES):
            return _invalid("not a JWT")
        kid = header.get("kid", "")
        if not isinstance(kid, str):
            return _invalid("malformed token")
        keys = self.keys[issuer.issuer]
        key = await keys.find(kid)
        if key is None:
            wait = keys.outage()  # the provider is down: the key may well exist
            if wait:
                return AuthFailure("issuer keys unavailable", retry_after=wait)
            return _invalid("unknown key id")
        if not _fits(key, alg):
            return _invalid("key does not fit the algorithm")
        try:
            parsed.allowed_algs = [alg]
            parsed.verify(key, alg=alg)
        except (JWException, ValueError, TypeError):
            return _invalid("bad signature")
        found = self._claims(issuer, claims)
        if isinstance(found, Principal):
            self._remember(digest, _Accepted(found, float(claims["exp"]), keys, kid, key))
        return found

    def _remembered(self, digest: bytes) -> Principal | None:
        """The caller of a token accepted before, if unexpired and its key still fresh and held."""
        known = self._accepted.get(digest)
        if known is None:
            return None
        if (
            self.settings.clock() >= known.expires + self.settings.leeway_seconds
            or not known.keys.still(known.kid, known.key)  # a refetch due: the whole check again
        ):
            del self._accepted[digest]
            return None
        self._accepted.move_to_end(digest)
        return known.principal

    def _remember(self, digest: bytes, accepted: _Accepted) -> None:
        self._accepted[digest] = accepted
        while len(self._accepted) > self.settings.verified_cache_size:
            self._accepted.popitem(last=False)

    def _claims(self, issuer: TokenIssuer, claims: dict[str, Any]) -> Principal | AuthFailure:
        now, leeway = self.settings.clock(), self.settings.leeway_seconds
        exp = _number(claims.get("exp"))
        if exp is None:
            return _invalid("token without exp")
        if now >= exp + leeway:
            return _invalid("token expired")
        if "nbf" in claims:
            nbf = _number(claims["nbf"])
            if nbf is None or now + leeway < nbf:
                return _invalid("token not yet valid")
        audience = claims.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience
        if not isinstance(audiences, list) or issuer.audience not in audiences:
            return _invalid("wrong audience")
        caller = claims.get(issuer.caller_claim)
        if (
            not isinstance(caller, str)
            or not caller
            or len(caller) > MAX_CALLER_LENGTH
            or any(ord(c) < 32 or ord(c) == 127 for c in caller)
        ):
            return _invalid(f"no usable {issuer.caller_claim} claim")
        scopes = _scopes(claims.get(issuer.scope_claim))
        missing = [scope for scope in issuer.required_scopes if scope not in scopes]
        if missing:
            required = " ".join(issuer.required_scopes)
            return AuthFailure("missing scope", "insufficient_scope", required)
        return Principal(issuer.identity(caller), issuer.permitted(scopes))
