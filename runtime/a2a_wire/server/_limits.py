"""Sans-IO limits of the server: request rates, open streams and parts (spec 13.4).

No I/O, no asyncio or aiohttp, and every clock injected, so tests drive them with a fake time.
:class:`RateLimiter` remembers at most ``max_keys`` keys: a forgotten key starts with a full
bucket, which only ever errs towards letting a request through.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable

from a2a_wire.errors import InvalidParamsError
from a2a_wire.types import Message

__all__ = [
    "DEFAULT_MAX_KEYS",
    "RateLimiter",
    "StreamCounter",
    "check_parts",
    "retry_after_header",
]

DEFAULT_MAX_KEYS = 10_000
"""How many keys a limiter remembers before it forgets the least recently used one."""

Clock = Callable[[], float]


class RateLimiter:
    """A token bucket per key.

    Args:
        rate: Tokens gained per second; must be positive.
        burst: Most tokens a key can hold (the largest burst allowed); at least 1.
        max_keys: Keys remembered at once (LRU).
        clock: Monotonic seconds; :func:`time.monotonic` by default.

    Raises:
        ValueError: ``rate`` is not positive, ``burst`` below 1 or ``max_keys`` below 1.
    """

    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        max_keys: int = DEFAULT_MAX_KEYS,
        clock: Clock = time.monotonic,
    ) -> None:
        if not rate > 0 or burst < 1 or max_keys < 1:
            raise ValueError("rate must be positive, burst and max_keys at least 1")
        self.rate = float(rate)
        self.burst = burst
        self.max_keys = max_keys
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def _tokens(self, key: str, now: float) -> float:
        held = self._buckets.get(key)
        if held is None:
            return float(self.burst)
        tokens, since = held
        return min(float(self.burst), tokens + (now - since) * self.rate)

    def _wait(self, tokens: float) -> float:
        return (1.0 - tokens) / self.rate

    def wait(self, key: str) -> float:
        """Seconds until ``key`` could take a token; ``0.0`` when it can now. Takes nothing.

        Args:
            key: Who asks.

        Returns:
            The wait in seconds.
        """
        tokens = self._tokens(key, self._clock())
        return 0.0 if tokens >= 1.0 else self._wait(tokens)

    def take(self, key: str) -> float:
        """Take one token for ``key`` if it has one.

        Args:
            key: Who asks.

        Returns:
            ``0.0`` when the token was taken, else the seconds until one is available (nothing
            is taken then).
        """
        now = self._clock()
        tokens = self._tokens(key, now)
        if tokens < 1.0:
            self._remember(key, tokens, now)
            return self._wait(tokens)
        self._remember(key, tokens - 1.0, now)
        return 0.0

    def _remember(self, key: str, tokens: float, now: float) -> None:
        self._buckets[key] = (tokens, now)
        self._buckets.move_to_end(key)
        while len(self._buckets) > self.max_keys:
            self._buckets.popitem(last=False)

    def __len__(self) -> int:
        return len(self._buckets)


def retry_after_header(seconds: float) -> str:
    """The ``Retry-After`` value (whole seconds, at least 1) for a wait of ``seconds``."""
    return str(max(1, math.ceil(seconds)))


class StreamCounter:
    """Open streams per key, with a ceiling.

    Args:
        limit: Most streams one key may hold open; at least 1.

    Raises:
        ValueError: ``limit`` is below 1.
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self._open: dict[str, int] = {}

    def acquire(self, key: str) -> bool:
        """Count one more stream for ``key``.

        Returns:
            ``False`` (and nothing counted) when ``key`` already holds :attr:`limit` streams.
        """
        held = self._open.get(key, 0)
        if held >= self.limit:
            return False
        self._open[key] = held + 1
        return True

    def release(self, key: str) -> None:
        """Forget one stream of ``key`` (call once per successful :meth:`acquire`)."""
        held = self._open.get(key, 0) - 1
        if held > 0:
            self._open[key] = held
        else:
            self._open.pop(key, None)

    def open_streams(self, key: str) -> int:
        """How many streams ``key`` holds open."""
        return self._open.get(key, 0)


def check_parts(message: Message, limit: int, field: str = "message.parts") -> None:
    """Refuse a message with more than ``limit`` parts.

    Args:
        message: The client's message.
        limit: Most parts allowed.
        field: The field path named in the error.

    Raises:
        InvalidParamsError: the message has too many parts.
    """
    if len(message.parts) > limit:
        raise InvalidParamsError(
            f"A message may have at most {limit} parts; this one has {len(message.parts)}",
            violations=[(field, f"at most {limit} parts")],
        )
