"""Who a request comes from, or why it was not authenticated: what every authenticator returns.

The registered clients (:mod:`a2a_wire.server._auth`) and the token issuers
(:mod:`a2a_wire.server._oauth`) both answer with these, so neither imports the other for them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ANONYMOUS", "AuthFailure", "Principal"]


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request comes from.

    Attributes:
        client_id: The registered client's id; ``""`` when anonymous.
        skills: The skill ids it may use (``None``: all).
    """

    client_id: str = ""
    skills: frozenset[str] | None = None

    @property
    def authenticated(self) -> bool:
        """Whether the caller is a registered client."""
        return bool(self.client_id)


ANONYMOUS = Principal()
"""The caller of a server without registered clients."""


@dataclass(frozen=True, slots=True)
class AuthFailure:
    """Why a request was not authenticated; never holds the presented value.

    Attributes:
        reason: Fixed text for logs and the error body.
        bearer_error: ``"invalid_token"`` when a bearer token was presented and refused,
            ``"insufficient_scope"`` when it lacks a required scope (RFC 6750 section 3.1),
            else ``""``.
        scope: The scopes a token needs, with ``insufficient_scope``.
        retry_after: Above 0 when the credential could not be checked because a service it
            needs (a token issuer's keys) is down: seconds until it may be tried again. Not
            the caller's fault: answered 503, not 401.
    """

    reason: str
    bearer_error: str = ""
    scope: str = ""
    retry_after: float = 0.0
