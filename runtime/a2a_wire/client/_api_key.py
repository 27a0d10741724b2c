"""An API key sent where the agent card's ``APIKeySecurityScheme`` says (spec 4.5.2).

The card names the location (``header``, ``query`` or ``cookie``) and the name; this provider
reads them from the card the client resolved, so one key follows the agent's own declaration.
A query-parameter key is refused: it would end up in URLs, which servers and proxies log.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from a2a_wire.client._credentials import CredentialRequest, Secret
from a2a_wire.client._errors import CredentialsError
from a2a_wire.types import AgentCard, APIKeySecurityScheme

__all__ = ["CardApiKey"]

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")  # RFC 9110 section 5.6.2
_COOKIE_OCTETS = re.compile(r"[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]+\Z")  # RFC 6265 4.1.1


class CardApiKey:
    """An API key in the header or cookie the card's API-key scheme names.

    Args:
        key: The API key.
        scheme_name: The ``securitySchemes`` entry to use; default: the first API-key scheme
            the card's requirements (else its schemes) offer alone.
    """

    def __init__(self, key: str | Secret, *, scheme_name: str = "") -> None:
        self._key = key if isinstance(key, Secret) else Secret(key)
        self.scheme_name = scheme_name

    def __repr__(self) -> str:
        return f"CardApiKey(scheme_name={self.scheme_name!r}, key=***)"

    async def headers(self, request: CredentialRequest) -> Mapping[str, str]:
        """The header carrying the key: the scheme's header, or ``Cookie``.

        Raises:
            CredentialsError: no card or no API-key scheme on it, a query-parameter scheme, a
                name that is not a header or cookie name, or a key not allowed there.
        """
        scheme = self._scheme(request.card)
        value = self._key.reveal()
        if scheme.location == "header":
            if not _TOKEN.match(scheme.name):
                raise CredentialsError(f"the card's API key header {scheme.name!r} is not a name")
            if not value or any(ch < " " or ch == "\x7f" or ch > "\xff" for ch in value):
                raise CredentialsError("the API key is empty or not allowed in an HTTP header")
            return {scheme.name: value}
        if scheme.location == "cookie":
            if not _TOKEN.match(scheme.name) or not _COOKIE_OCTETS.match(value):
                raise CredentialsError("the API key or the card's cookie name is not cookie-safe")
            return {"Cookie": f"{scheme.name}={value}"}
        raise CredentialsError(
            f"the card wants the API key in the {scheme.location!r} location; only header and "
            "cookie keys are sent (a query parameter would put the key in logged URLs)"
        )

    def _scheme(self, card: AgentCard | None) -> APIKeySecurityScheme:
        if card is None:
            raise CredentialsError("an API key from the card needs the agent card")
        names = [self.scheme_name] if self.scheme_name else _offered(card)
        for name in names:
            scheme = card.security_schemes.get(name)
            if scheme is not None and scheme.api_key_security_scheme is not None:
                return scheme.api_key_security_scheme
        raise CredentialsError("the agent card offers no API-key scheme")


def _offered(card: AgentCard) -> list[str]:
    """Scheme names in the order the card offers them alone (spec 4.5.7)."""
    alone = [
        name
        for requirement in card.security_requirements
        if len(requirement.schemes) == 1
        for name in requirement.schemes
    ]
    return alone if card.security_requirements else list(card.security_schemes)
