"""a2a-wire: the Agent2Agent (A2A) protocol 1.0, JSON-RPC binding, for both roles.

Each role has its own package, and importing this package imports neither:

* Protocol core, shared: :mod:`a2a_wire.types` (value classes generated from the pinned proto),
  :mod:`a2a_wire.codec` (JSON text), :mod:`a2a_wire.errors` (the whole exception tree),
  :mod:`a2a_wire.methods` (the method table), :mod:`a2a_wire.netguard` (the address guard) and
  :mod:`a2a_wire.card_signing` (signed agent cards, ``signing`` extra).
* Server: :mod:`a2a_wire.server` (``create_app``, ``AgentExecutor``, ``TaskUpdater``, settings,
  security, skills), with :mod:`a2a_wire.server.store` and :mod:`a2a_wire.server.push`.
* Client: :mod:`a2a_wire.client` (``A2AClient``, streams, card resolver, credentials, errors,
  the webhook receiver).
* The ``a2a-wire`` command line: :mod:`a2a_wire.cli` (``cli`` extra); the library never imports it.

Specification: https://a2a-protocol.org/v1.0.1/specification/
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from a2a_wire._protocol.wire import PROTOCOL_VERSION as PROTOCOL_VERSION

__all__ = ["PROTOCOL_VERSION", "__version__"]

__version__ = "0.1.0"


def __getattr__(name: str) -> str:
    """``PROTOCOL_VERSION``, the version this library speaks, read from its one definition.

    It is looked up on first use so that ``import a2a_wire`` loads nothing else (PEP 562).
    """
    if name == "PROTOCOL_VERSION":
        from a2a_wire._protocol.wire import PROTOCOL_VERSION

        return PROTOCOL_VERSION
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
