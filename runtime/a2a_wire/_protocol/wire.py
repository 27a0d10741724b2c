"""Wire constants of the JSON-RPC binding that both roles share (spec 9, 4.3.3).

Sans-IO: names and strings only. Push notification headers are listed here because the sender
(:mod:`a2a_wire.server.push`) and the receiver (:mod:`a2a_wire.client`) must agree on them.
"""

from __future__ import annotations

__all__ = ["DELIVERY_ID_HEADER", "PUSH_CONTENT_TYPE", "TOKEN_HEADER"]

PUSH_CONTENT_TYPE = "application/a2a+json"
"""Media type of a webhook body (spec 4.3.3)."""

TOKEN_HEADER = "X-A2A-Notification-Token"
"""Header carrying ``TaskPushNotificationConfig.token``."""

DELIVERY_ID_HEADER = "X-A2A-Delivery-Id"
"""Header carrying the id of one delivery, the same on every retry (an a2a-wire extension)."""
