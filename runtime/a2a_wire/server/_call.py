"""What a method handler is given: the call (:class:`MethodCall`) and the shared :class:`Services`.

Every method handler (:mod:`a2a_wire.server._methods`, :mod:`a2a_wire.server._cancel`,
:mod:`a2a_wire.server.push._configs`) has one signature: it takes a :class:`MethodCall`, which
holds the decoded request, who calls (its :class:`CallInfo`) and the application's
:class:`Services` (the runtime, the store, the settings), and returns the method's generated
result type (``Method.result``); the HTTP glue encodes that once (:mod:`a2a_wire.server._app`).
What the agent is given is built from the :class:`CallInfo` by
:func:`a2a_wire.server._executor.request_context`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from a2a_wire.server._call_info import CallInfo
from a2a_wire.server._settings import ServerSettings
from a2a_wire.server.store import EventLogStore
from a2a_wire.types import AgentCard

if TYPE_CHECKING:  # the services only name the runtime's type
    from a2a_wire.server._runtime import Runtime

__all__ = ["MethodCall", "Services"]

P = TypeVar("P")


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
        info: Who calls (owner key, client id, tenant, headers), scoped to the request's tenant.
        services: The application's services; the properties below read them.
    """

    request: P
    info: CallInfo
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
