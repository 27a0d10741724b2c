"""a2a-wire: the Agent2Agent (A2A) protocol 1.0, JSON-RPC binding, for both roles.

The package is split so that each role can be used without the other; importing this package
imports neither.

* Protocol core, shared: :mod:`a2a_wire.types` (value classes generated from the pinned proto),
  :mod:`a2a_wire.codec` (JSON text), :mod:`a2a_wire.errors`, :mod:`a2a_wire.methods`,
  :mod:`a2a_wire.states`.
* Server: :mod:`a2a_wire.server` (``create_app``), :mod:`a2a_wire.executor` (``AgentExecutor``,
  ``TaskUpdater``), :mod:`a2a_wire.settings`, :mod:`a2a_wire.store` and
  :mod:`a2a_wire.store_sqlite`; registered clients and scoping in :mod:`a2a_wire.auth`, skills in
  :mod:`a2a_wire.skills`, limits in :mod:`a2a_wire.limits`.
* Signed agent cards, both roles (``signing`` extra): :mod:`a2a_wire.card_signing`.
* Client: :mod:`a2a_wire.client` (``A2AClient``), :mod:`a2a_wire.card_resolver`,
  :mod:`a2a_wire.credentials`, :mod:`a2a_wire.client_errors`.

Specification: https://a2a-protocol.org/v1.0.1/specification/
"""

__all__ = ["PROTOCOL_VERSION", "__version__"]

__version__ = "0.1.0"
PROTOCOL_VERSION = "1.0"
"""The A2A protocol version this library speaks (``A2A-Version`` header)."""
