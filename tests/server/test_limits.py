"""Sans-IO limits: token buckets, stream slots, parts per message."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_wire.errors import InvalidParamsError
from a2a_wire.server._limits import (
    RateLimiter,
    StreamCounter,
    check_parts,
    retry_after_header,
)
from a2a_wire.types import Message, Part, Role


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_bucket_allows_the_burst_then_refuses_with_the_wait() -> None:
    clock = FakeClock()
    limiter = RateLimiter(2.0, 3, clock=clock)
    assert [limiter.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.take("a") == pytest.approx(0.5)
    assert limiter.take("b") == 0.0  # keys are independent
    clock.now += 0.5
    assert limiter.take("a") == 0.0
    assert limiter.take("a") > 0


def test_wait_takes_nothing() -> None:
    clock = FakeClock()
    limiter = RateLimiter(1.0, 1, clock=clock)
    assert limiter.wait("a") == 0.0
    assert limiter.wait("a") == 0.0
    assert limiter.take("a") == 0.0
    assert limiter.wait("a") == pytest.approx(1.0)


def test_bucket_never_exceeds_its_burst() -> None:
    clock = FakeClock()
    limiter = RateLimiter(10.0, 2, clock=clock)
    limiter.take("a")
    clock.now += 3600
    assert [limiter.take("a") == 0.0 for _ in range(3)] == [True, True, False]


def test_keys_are_bounded_lru() -> None:
    limiter = RateLimiter(1.0, 1, max_keys=2, clock=FakeClock())
    for key in "abc":
        limiter.take(key)
    assert len(limiter) == 2
    assert limiter.take("a") == 0.0  # forgotten: a full bucket again
    assert limiter.take("c") > 0  # remembered


@given(st.lists(st.floats(min_value=0, max_value=5), max_size=60))
def test_granted_requests_never_exceed_rate_times_time_plus_burst(gaps: list[float]) -> None:
    clock = FakeClock()
    limiter = RateLimiter(2.0, 4, clock=clock)
    granted = 0
    start = clock.now
    for gap in gaps:
        clock.now += gap
        granted += limiter.take("k") == 0.0
    assert granted <= 4 + 2.0 * (clock.now - start) + 1e-9


def test_bad_limiter_settings() -> None:
    with pytest.raises(ValueError, match="^rate must be positive, burst and max_keys at least 1$"):
        RateLimiter(0, 1)
    with pytest.raises(ValueError, match="^rate must be positive, burst and max_keys at least 1$"):
        RateLimiter(1, 0)
    with pytest.raises(ValueError, match="^limit must be at least 1$"):
        StreamCounter(0)


def test_retry_after_is_whole_seconds_at_least_one() -> None:
    assert retry_after_header(0.01) == "1"
    assert retry_after_header(1.0) == "1"
    assert retry_after_header(1.2) == "2"


def test_stream_counter() -> None:
    counter = StreamCounter(2)
    assert counter.acquire("a") and counter.acquire("a")
    assert not counter.acquire("a")
    assert counter.acquire("b")
    counter.release("a")
    assert counter.open_streams("a") == 1
    assert counter.acquire("a")
    for _ in range(3):
        counter.release("a")
    assert counter.open_streams("a") == 0


def test_check_parts() -> None:
    message = Message(message_id="m", role=Role.USER, parts=[Part(text="x")] * 3)
    check_parts(message, 3)
    with pytest.raises(
        InvalidParamsError, match="^A message may have at most 2 parts; this one has 3$"
    ) as caught:
        check_parts(message, 2)
    assert "message.parts" in str(caught.value.details())
