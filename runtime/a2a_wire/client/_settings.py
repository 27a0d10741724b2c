"""The client's settings: every limit and the address policy, with the defaults explained.

The size defaults are derived from the a2a-wire server's, so that the two agree: an answer the
default server gives to a request within its ``max_body_bytes`` is one the default client reads
(:data:`DEFAULT_MAX_RESPONSE_BYTES`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from a2a_wire import netguard

__all__ = ["ANSWER_COPIES", "DEFAULT_MAX_RESPONSE_BYTES", "SERVER_MAX_BODY_BYTES", "ClientSettings"]

MiB = 1024 * 1024

SERVER_MAX_BODY_BYTES = 10 * MiB
"""The a2a-wire server's default ``max_body_bytes``, the largest request it reads (a test keeps
the two equal; the client cannot import the server)."""

ANSWER_COPIES = 6
"""How many times one answer may carry a request's content: the message in the task's history,
an artifact echoing it (the ``echo`` skill does), a status message quoting it, plus room for the
agent re-encoding it larger (numbers written out in full, escaped characters) and for the
JSON around it. The server's other limits (``max_parts_per_message``) live inside the body."""

DEFAULT_MAX_RESPONSE_BYTES = ANSWER_COPIES * SERVER_MAX_BODY_BYTES
"""``max_response_bytes`` and ``max_event_bytes`` by default (60 MiB). A task that grew over many
large messages (``max_history_per_task`` keeps up to 1,000) can still exceed it: ask for less
history (``historyLength``) or raise the setting."""


@dataclass(frozen=True)
class ClientSettings:
    """Limits and policy of an :class:`~a2a_wire.client._client.A2AClient`; every field has a default.

    Every time limit is in seconds; ``None`` means no limit. For one bound over several calls
    (connect, then a call), wrap them in :func:`asyncio.timeout`.

    Attributes:
        connect_timeout: Seconds to obtain a connection (DNS, TCP, TLS).
        read_timeout: Longest silence, in seconds, once a non-streaming response has started;
            also bounds the wait for a stream's response headers.
        total_timeout: Seconds for a whole non-streaming call. Generous, because SendMessage
            blocks until the task is terminal or interrupted unless ``returnImmediately``.
        stream_idle_timeout: Longest time on an event stream without a complete line, an
            event's or a keep-alive comment's (:class:`StreamIdleTimeoutError`). The a2a-wire
            server sends a comment every 15 s (``keepalive_seconds``), so the default of 60 s
            only ends streams that are dead or trickling. ``None``: no limit.
        stream_timeout: Seconds for a whole stream, from its request to its end
            (:class:`TotalTimeoutError`); ``None`` (the default): a stream lasts as long as
            its task. Each re-subscription of a resumable stream is a new stream.
        card_timeout: Seconds for the whole agent card fetch.
        max_response_bytes: Largest non-streaming body (and card) accepted; the default,
            :data:`DEFAULT_MAX_RESPONSE_BYTES`, reads any answer the default a2a-wire server
            gives to a request within its ``max_body_bytes``.
        max_event_bytes: Largest single stream event (and line) accepted (same default).
        allow: Hosts, addresses or networks exempt from the address guard, e.g.
            ``("127.0.0.1",)``, ``("10.0.0.0/8", "agents.internal")``.
        allow_private: Turn the address guard off entirely (local development).
        card_default_ttl: Seconds a card without caching headers stays fresh (spec 8.6.2).
        resume_attempts: Most re-subscriptions in a row of a resumable stream, counted since
            the last event it received (:meth:`A2AClient.resumable`).
        resume_delay: Seconds before the first re-subscription after a drop; each next pause
            doubles, with jitter (between half of it and all of it).
        resume_max_delay: Longest pause between two re-subscriptions after drops.
        resume_budget: Seconds of pauses in a row after which a resumable stream gives up
            (the server's ``retry_after`` counts too). The defaults (12 re-subscriptions,
            0.5 s doubling to 8 s, 30 s) outlast a restart or a rolling deploy of some seconds.
        extensions: Extension URIs to announce in ``A2A-Extensions`` (spec 3.2.6).
        user_agent: The ``User-Agent`` header.
    """

    connect_timeout: float = 10.0
    read_timeout: float | None = 60.0
    total_timeout: float | None = 300.0
    stream_idle_timeout: float | None = 60.0
    stream_timeout: float | None = None
    card_timeout: float = 30.0
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_event_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    allow: Sequence[str] = ()
    allow_private: bool = False
    card_default_ttl: float = 300.0
    resume_attempts: int = 12
    resume_delay: float = 0.5
    resume_max_delay: float = 8.0
    resume_budget: float = 30.0
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
        for name in ("resume_attempts", "resume_delay", "resume_max_delay", "resume_budget"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        for name in ("read_timeout", "total_timeout", "stream_idle_timeout", "stream_timeout"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be positive or None")
        if self.allow_private:
            policy = netguard.AddressPolicy.allow_all()
        else:
            policy = netguard.AddressPolicy.from_strings(self.allow)
        object.__setattr__(self, "policy", policy)
