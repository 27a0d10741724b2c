"""The sender's push settings: timeouts, retries, the address guard's exceptions, caps.

The wire format of a delivery is described in :mod:`a2a_wire.server.push`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp.abc import AbstractResolver

from a2a_wire.netguard import AddressPolicy

__all__ = ["PushSettings"]


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
        poll_seconds: With a store whose outbox several processes share (PostgreSQL), longest
            time between two looks for rows no local event announced: retries recorded by
            another process, claims left by a process that died, rows beyond this process's
            ``max_concurrent``. Unused by the memory and SQLite stores.
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
    poll_seconds: float = 1.0
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
            "poll_seconds": self.poll_seconds,
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
