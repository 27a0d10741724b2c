"""The headers the inspector's client adds to each request: credential and trace context.

:class:`Outgoing` is the client's credential provider. It asks the current
:class:`~a2a_wire.cli.inspect._identity.Identity` for its headers, tells the traffic log to
hide them before they are sent, and adds a ``traceparent`` of the running operation
(:mod:`a2a_wire.cli.inspect._trace`); a span of the client, when an OpenTelemetry SDK is active,
writes its own ``traceparent`` over it, in the same trace.
"""

from __future__ import annotations

from collections.abc import Mapping

from a2a_wire.cli.inspect._identity import Identity
from a2a_wire.cli.inspect._trace import TRACEPARENT, traceparent
from a2a_wire.cli.inspect._traffic import TrafficLog
from a2a_wire.client import CredentialRequest

__all__ = ["Outgoing"]


class Outgoing:
    """The credential provider of the inspector's client.

    Args:
        identity: Who the client is to the agent; replaced when the page picks a scheme.
        log: The traffic log to hide the credential's headers from.
    """

    def __init__(self, identity: Identity, log: TrafficLog) -> None:
        self.identity = identity
        self._log = log

    async def headers(self, request: CredentialRequest) -> Mapping[str, str]:
        """The identity's headers (each marked secret in the log first) and a ``traceparent``."""
        provider = self.identity.provider
        headers = dict(await provider.headers(request)) if provider is not None else {}
        for name in headers:
            self._log.hide(name)
        parent = traceparent()
        if parent is not None:
            headers[TRACEPARENT] = parent
        return headers

    async def rejected(self, request: CredentialRequest, challenge: str) -> bool:
        """Pass a 401 to the identity's provider; whether a retry may help."""
        rejected = getattr(self.identity.provider, "rejected", None)
        return bool(await rejected(request, challenge)) if rejected is not None else False
