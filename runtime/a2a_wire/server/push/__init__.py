"""Push notifications, the sender's side (spec 3.1.7-3.1.10, 4.3.3, 13.2): the public face.

The methods are in ``_configs``, the delivery worker in ``_delivery``, the outbox in the task
store. The wire format of a delivery, with the choices the spec leaves open, is in
docs/server.md ("Push delivery"); header names shared with receivers are in
:mod:`a2a_wire._protocol.wire`.
"""

from a2a_wire.server.push._delivery import PUSH_DELIVERER_KEY, PushDeliverer
from a2a_wire.server.push._sender import retry_after_seconds
from a2a_wire.server.push._settings import PushSettings

__all__ = ["PUSH_DELIVERER_KEY", "PushDeliverer", "PushSettings", "retry_after_seconds"]
