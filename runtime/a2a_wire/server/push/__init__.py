"""Push notifications, the sender's side (spec 3.1.7-3.1.10, 4.3.3, 13.2).

The four push-config methods and the inline config of SendMessage live in ``_configs``; the
durable outbox is part of every task store (:mod:`a2a_wire.server.store`); ``_delivery`` is the
worker that sends it (by lanes, ``_lanes``, or by claims when several processes share the
outbox, ``_claimed``; one attempt and its outcome, ``_sender``). Header names shared with
receivers are in :mod:`a2a_wire._protocol.wire`. This ``__init__`` is the public face.

Wire format of one delivery (decisions where spec 1.0.1 is silent are marked *ours*):

* ``POST <config.url>`` with a StreamResponse JSON body (exactly one of ``task``, ``statusUpdate``,
  ``artifactUpdate``; spec 3.2.3, 3.5.1) and ``Content-Type: application/a2a+json`` (4.3.3);
* ``Authorization: <scheme> <credentials>`` from ``config.authentication`` (4.3.3, 13.2);
* ``X-A2A-Notification-Token`` carrying ``config.token``: the header name the reference SDK
  sends and checks, so that its receivers and ours interoperate (*ours*: the spec names none);
* ``X-A2A-Delivery-Id``, an opaque id that stays the same across retries of one delivery, so a
  receiver can drop duplicates (*ours*: an extension; receivers may ignore it).

Events pushed (*ours*; the spec does not list them): the same StreamResponse events a stream of
the task carries, in the same order: the task itself when it is created (only to configs sent
inline with the SendMessage that created it), then every status and artifact update.
"""

from a2a_wire.server.push._delivery import PUSH_DELIVERER_KEY, PushDeliverer
from a2a_wire.server.push._sender import retry_after_seconds
from a2a_wire.server.push._settings import PushSettings

__all__ = ["PUSH_DELIVERER_KEY", "PushDeliverer", "PushSettings", "retry_after_seconds"]
