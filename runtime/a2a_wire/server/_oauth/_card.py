"""What the card says of the configured issuers: ``securitySchemes`` entries (spec 4.5).

An issuer with a ``token_url`` is an OAuth 2.0 scheme with a client-credentials flow (and its
metadata URL); one without is an OpenID Connect scheme naming its discovery document.
"""

from __future__ import annotations

from collections.abc import Sequence

from a2a_wire.server._oauth._config import TokenIssuer
from a2a_wire.types import (
    ClientCredentialsOAuthFlow,
    OAuth2SecurityScheme,
    OAuthFlows,
    OpenIdConnectSecurityScheme,
    SecurityScheme,
)

__all__ = ["named_issuers", "security_scheme"]


def named_issuers(issuers: Sequence[TokenIssuer]) -> dict[str, TokenIssuer]:
    """The card's scheme name of each issuer: its ``scheme_name``, else ``oauth2``, ``oauth2-2``...

    Raises:
        ValueError: two issuers with one scheme name.
    """
    named: dict[str, TokenIssuer] = {}
    for number, issuer in enumerate(issuers, 1):
        name = issuer.scheme_name or ("oauth2" if number == 1 else f"oauth2-{number}")
        if name in named:
            raise ValueError(f"two issuers have the scheme name {name!r}")
        named[name] = issuer
    return named


def security_scheme(issuer: TokenIssuer) -> SecurityScheme:
    """The ``securitySchemes`` entry of one issuer."""
    if issuer.token_url:
        flow = ClientCredentialsOAuthFlow(
            token_url=issuer.token_url, scopes={scope: scope for scope in issuer.scopes}
        )
        metadata = "" if issuer.jwks_url else issuer.metadata_url
        oauth2 = OAuth2SecurityScheme(
            description=issuer.description,
            flows=OAuthFlows(client_credentials=flow),
            oauth2_metadata_url=metadata,
        )
        return SecurityScheme(oauth2_security_scheme=oauth2)
    oidc = OpenIdConnectSecurityScheme(
        description=issuer.description, open_id_connect_url=issuer.metadata_url
    )
    return SecurityScheme(open_id_connect_security_scheme=oidc)
