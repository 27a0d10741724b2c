"""What one call carries: its caller (:class:`CallInfo`) and its handler's :class:`MethodCall`.

Every method handler (:mod:`a2a_wire.server._methods`, :mod:`a2a_wire.server._cancel`,
:mod:`a2a_wire.server.push._configs`) has one signature: it takes a :class:`MethodCall`, which
holds the decoded request, the caller, and the application's :class:`Services` (the runtime, the
store, the settings), and returns the method's generated result type (``Method.result``); the
HTTP glue encodes that once (:mod:`a2a_wire.server._app`). What the agent is given is built
from the :class:`CallInfo` by :func:`a2a_wire.server._executor.request_context`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Generic, TypeVar

from a2a_wire.server._auth import owner_key
from a2a_wire.server._settings import ServerSettings
from a2a_wire.server.store._log import EventLogStore
from a2a_wire.types import AgentCard

if TYPE_CHECKING:  # the runtime takes CallInfo from here; the services only name its type
    from a2a_wire.server._engine import Runtime

__all__ = ["CallInfo", "MethodCall", "Services"]

P = TypeVar("P")


@dataclass(frozen=True, slots=True)
class CallInfo:
    """Who calls and with which service parameters (spec 3.2.6); one per call.

    The server makes it per HTTP request (:mod:`a2a_wire.server._admission`) and scopes it to
    the call's ``tenant`` once the params are decoded (:meth:`with_tenant`), before any handler
    runs.

    Attributes:
        caller: The owner key everything the call creates or reads is scoped by (spec 13.1):
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

    caller: str = ""
    extensions: tuple[str, ...] = ()
    client_id: str = ""
    tenant: str = ""
    skills: frozenset[str] | None = None
    origin: str = ""
    last_event_id: str | None = None

    @property
    def owner(self) -> str:
        """The owner key (same as :attr:`caller`)."""
        return self.caller

    def with_tenant(self, tenant: str) -> CallInfo:
        """This call info scoped to ``tenant``: owner key recomputed."""
        return replace(self, tenant=tenant, caller=owner_key(tenant, self.client_id))


@dataclass(frozen=True, slots=True)
class Services:
    """What method handlers share; one per application.

    Attributes:
        runtime: Agent runs and the hubs of the tasks in use.
        store: Task and push-config storage.
        settings: Server settings.
        push_notifications: Whether the card declares push notifications (spec 3.3.4).
        extended_card: Builds a caller's GetExtendedAgentCard answer; ``None`` when no
            extended card is served.
    """

    runtime: Runtime
    store: EventLogStore
    settings: ServerSettings
    push_notifications: bool = False
    extended_card: Callable[[CallInfo], AgentCard] | None = None


@dataclass(frozen=True, slots=True)
class MethodCall(Generic[P]):
    """One call of a method, as its handler gets it.

    Attributes:
        request: The decoded params (``Method.params``), REQUIRED fields checked.
        caller: Who calls, scoped to the request's tenant.
        services: The application's services; the properties below read them.
    """

    request: P
    caller: CallInfo
    services: Services

    @property
    def runtime(self) -> Runtime:
        """Agent runs and hubs."""
        return self.services.runtime

    @property
    def store(self) -> EventLogStore:
        """Task and push-config storage."""
        return self.services.store

    @property
    def settings(self) -> ServerSettings:
        """Server settings."""
        return self.services.settings

    @property
    def push_notifications(self) -> bool:
        """Whether the card declares push notifications."""
        return self.services.push_notifications

    @property
    def extended_card(self) -> Callable[[CallInfo], AgentCard] | None:
        """The extended card builder, if one is served."""
        return self.services.extended_card
