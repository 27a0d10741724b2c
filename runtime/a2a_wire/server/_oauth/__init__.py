"""JWT access tokens from OAuth 2.0 / OpenID Connect issuers (RFC 6750, RFC 9068; spec 13.1).

The configuration (:mod:`._config`) and the card's schemes (:mod:`._card`) import without the
``oauth`` extra; the checks (:mod:`._verify`, :mod:`._keys`) need jwcrypto and are loaded by
:class:`~a2a_wire.server._auth.ClientRegistry` only when an issuer is configured.
"""

from a2a_wire.server._oauth._card import named_issuers, security_scheme
from a2a_wire.server._oauth._config import ASYMMETRIC_ALGORITHMS, TokenIssuer, TokenSettings

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "TokenIssuer",
    "TokenSettings",
    "named_issuers",
    "security_scheme",
]
