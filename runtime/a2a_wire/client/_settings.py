"""The limits and policy of a client (:class:`ClientSettings`), a frozen value with defaults."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from a2a_wire import netguard

__all__ = ["ClientSettings"]

MiB = 1024 * 1024


@dataclass(frozen=True)
class ClientSettings:
    """Limits and policy of an :class:`~a2a_wire.client._client.A2AClient`; every field has a default.

    Attributes:
        connect_timeout: Seconds to obtain a connection (DNS, TCP, TLS).
        read_timeout: Longest silence, in seconds, once a non-streaming response has started;
            also bounds the wait for a stream's response headers.
        total_timeout: Seconds for a whole non-streaming call. Generous, because SendMessage
            blocks until the task is terminal or interrupted unless ``returnImmediately``.
        stream_idle_timeout: Longest silence on an event stream (``None``: no limit; agents
            may stay quiet while a task works).
        card_timeout: Seconds for the whole agent card fetch.
        max_response_bytes: Largest non-streaming body (and card) accepted.
        max_event_bytes: Largest single stream event (and line) accepted.
        allow: Hosts, addresses or networks exempt from the address guard, e.g.
            ``("127.0.0.1",)``, ``("10.0.0.0/8", "agents.internal")``.
        allow_private: Turn the address guard off entirely (local development).
        card_default_ttl: Seconds a card without caching headers stays fresh (spec 8.6.2).
        extensions: Extension URIs to announce in ``A2A-Extensions`` (spec 3.2.6).
        user_agent: The ``User-Agent`` header.
    """

    connect_timeout: float = 10.0
    read_timeout: float | None = 60.0
    total_timeout: float | None = 300.0
    stream_idle_timeout: float | None = None
    card_timeout: float = 30.0
    max_response_bytes: int = 16 * MiB
    max_event_bytes: int = 16 * MiB
    allow: Sequence[str] = ()
    allow_private: bool = False
    card_default_ttl: float = 300.0
    extensions: Sequence[str] = ()
    user_agent: str = "a2a-wire"
    policy: netguard.AddressPolicy = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.allow, str) or isinstance(self.extensions, str):
            raise TypeError("allow and extensions take a sequence of strings, not one string")
        object.__setattr__(self, "allow", tuple(self.allow))
        object.__setattr__(self, "extensions", tuple(self.extensions))
        for name in ("connect_timeout", "card_timeout", "max_response_bytes", "max_event_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if self.allow_private:
            policy = netguard.AddressPolicy.allow_all()
        else:
            policy = netguard.AddressPolicy.from_strings(self.allow)
        object.__setattr__(self, "policy", policy)
