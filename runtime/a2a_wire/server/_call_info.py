"""Who calls (:class:`CallInfo`): the owner key, tenant and headers of one request (spec 3.2.6)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from a2a_wire.server._auth import owner_key

__all__ = ["CallInfo"]


@dataclass(frozen=True, slots=True)
class CallInfo:
    """Who calls and with which service parameters (spec 3.2.6); one per call.

    The server makes it per HTTP request (:mod:`a2a_wire.server._admission`) and scopes it to
    the call's ``tenant`` once the params are decoded (:meth:`with_tenant`), before any handler
    runs.

    Attributes:
        owner: The owner key everything the call creates or reads is scoped by (spec 13.1):
            :func:`a2a_wire.server._auth.owner_key` of the tenant and the client id. Pass it as
            ``owner=`` to every store call.
        extensions: URIs from the ``A2A-Extensions`` header.
        client_id: The registered client's id; ``""`` when anonymous.
        tenant: The request's ``tenant``.
        skills: Ids of the skills the caller may use; ``None`` for no restriction.
        origin: Scheme and authority clients use to reach the server (for the extended card).
        last_event_id: The request's ``Last-Event-ID`` header as sent (SSE resume, read by
            SubscribeToTask); ``None`` when absent.
    """

    owner: str = ""
    extensions: tuple[str, ...] = ()
    client_id: str = ""
    tenant: str = ""
    skills: frozenset[str] | None = None
    origin: str = ""
    last_event_id: str | None = None

    def with_tenant(self, tenant: str) -> CallInfo:
        """This call info scoped to ``tenant``: owner key recomputed."""
        return replace(self, tenant=tenant, owner=owner_key(tenant, self.client_id))
