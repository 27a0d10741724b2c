"""Push notifications: wire constants shared by sender and receiver, and the sender's settings.

An agent POSTs every event of a task to each webhook registered for it (spec 3.1.7-3.1.10,
4.3.3, 13.2). Where the parts live:

* :mod:`a2a_wire.push_configs`: the four push-config methods and the inline config of
  SendMessage, with their validation (including the address guard at creation);
* :mod:`a2a_wire.push_store` and :mod:`a2a_wire.push_store_sqlite`: configs and the durable
  outbox inside the task stores;
* :mod:`a2a_wire.push_delivery`: the worker that sends the outbox;
* :mod:`a2a_wire.push_receiver`: the client side, an aiohttp webhook handler.

Wire format of one delivery (decisions where spec 1.0.1 is silent are marked *ours*):

* ``POST <config.url>`` with a StreamResponse JSON body (exactly one of ``task``, ``statusUpdate``,
  ``artifactUpdate``; spec 3.2.3, 3.5.1) and ``Content-Type: application/a2a+json`` (4.3.3);
* ``Authorization: <scheme> <credentials>`` from ``config.authentication`` (4.3.3, 13.2);
* :data:`TOKEN_HEADER` carrying ``config.token``: the header name the reference SDK sends and
  checks, so that its receivers and ours interoperate (*ours*: the spec names no header);
* :data:`DELIVERY_ID_HEADER`, an opaque id that stays the same across retries of one delivery,
  so a receiver can drop duplicates (*ours*: an extension; receivers may ignore it).

Events pushed (*ours*; the spec does not list them): the same StreamResponse events a stream of
the task carries, byte for byte, in the same order: the task itself when it is created (only to
configs sent inline with the SendMessage that created it), then every status and artifact update.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp.abc import AbstractResolver

from a2a_wire.netguard import AddressPolicy

__all__ = ["CONTENT_TYPE", "DELIVERY_ID_HEADER", "PushSettings", "TOKEN_HEADER"]

CONTENT_TYPE = "application/a2a+json"
"""Media type of a webhook body (spec 4.3.3)."""

TOKEN_HEADER = "X-A2A-Notification-Token"
"""Header carrying ``TaskPushNotificationConfig.token``."""

DELIVERY_ID_HEADER = "X-A2A-Delivery-Id"
"""Header carrying the id of one delivery, the same on every retry (an a2a-wire extension)."""


@dataclass(frozen=True, slots=True)
class PushSettings:
    """How the server delivers push notifications (used when the card declares them).

    Attributes:
        timeout_seconds: Longest time one POST may take, connecting included (spec 4.3.3
            suggests 10 to 30 s).
        max_attempts: Attempts per delivery before it is given up and recorded as failed.
        max_age_seconds: A delivery still not sent this long after its event is given up.
        backoff_base_seconds: Wait after the first failed attempt; it doubles per attempt.
        backoff_cap_seconds: Longest wait between two attempts (a ``Retry-After`` answer may
            ask for longer and is honoured, within ``max_age_seconds``).
        allow_http: Accept ``http`` webhook URLs as well as ``https`` (tests, closed networks).
        allowlist: Exceptions to the address guard of :mod:`a2a_wire.netguard`, which otherwise
            refuses loopback, private, link-local, metadata and other non-public addresses,
            both when a config is created and when a delivery connects.
        max_concurrent: Most POSTs in flight at once, over all webhooks.
        max_configs_per_task: Most push configs one task may hold.
        resolver: DNS resolver for webhook host names; aiohttp's threaded resolver when
            ``None``. Tests inject one; its answers are checked like any other.
    """

    timeout_seconds: float = 10.0
    max_attempts: int = 10
    max_age_seconds: float = 3600.0
    backoff_base_seconds: float = 1.0
    backoff_cap_seconds: float = 300.0
    allow_http: bool = False
    allowlist: AddressPolicy = field(default_factory=AddressPolicy)
    max_concurrent: int = 100
    max_configs_per_task: int = 20
    resolver: AbstractResolver | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        """Check the values.

        Raises:
            ValueError: a limit or interval is not positive, or the cap is below the base.
        """
        positive = {
            "timeout_seconds": self.timeout_seconds,
            "max_attempts": self.max_attempts,
            "max_age_seconds": self.max_age_seconds,
            "backoff_base_seconds": self.backoff_base_seconds,
            "backoff_cap_seconds": self.backoff_cap_seconds,
            "max_concurrent": self.max_concurrent,
            "max_configs_per_task": self.max_configs_per_task,
        }
        for name, value in positive.items():
            if not value > 0:
                raise ValueError(f"{name} must be positive, not {value!r}")
        if self.backoff_cap_seconds < self.backoff_base_seconds:
            raise ValueError("backoff_cap_seconds must not be below backoff_base_seconds")

    @property
    def schemes(self) -> frozenset[str]:
        """The webhook URL schemes accepted."""
        return frozenset({"https", "http"} if self.allow_http else {"https"})
