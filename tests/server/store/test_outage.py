"""OutageLog: one warning when the database goes away, one when it is back, none in between."""

from __future__ import annotations

import logging

import pytest

from a2a_wire.server.store import StoreUnavailableError
from a2a_wire.server.store._fold.outage import OutageLog


def test_an_outage_is_one_warning_down_and_one_up(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    outage = OutageLog("PostgreSQL", retry_after=2.0, clock=lambda: now[0])
    caplog.set_level(logging.WARNING, logger="a2a_wire.server.store")
    outage.ok()
    errors = [outage.failed(ConnectionResetError("reset")) for _ in range(50)]
    assert outage.down
    now[0] = 112.5
    outage.ok()
    outage.ok()
    assert not outage.down
    assert [r.getMessage() for r in caplog.records] == [
        "PostgreSQL is unavailable (ConnectionResetError); calls answer 503 until it is back",
        "PostgreSQL is available again after 12.5 s; 50 calls failed",
    ]
    assert all(r.exc_info is None for r in caplog.records)  # no traceback
    assert all(isinstance(e, StoreUnavailableError) and e.retry_after == 2 for e in errors)
    assert "reset" not in errors[0].message  # the driver's text stays in the log's type name


def test_successes_between_failures_end_nothing_until_the_quiet_period_passed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A locked table: its calls fail while others succeed; one warning each way, not a pair
    per success."""
    now = [0.0]
    outage = OutageLog("PostgreSQL", clock=lambda: now[0], quiet_seconds=10.0)
    caplog.set_level(logging.WARNING, logger="a2a_wire.server.store")
    for second in range(0, 60, 3):  # a failure every 3 s, a success in between each time
        now[0] = float(second)
        outage.failed(TimeoutError())
        now[0] = second + 1.5
        outage.ok()
        assert outage.down
    now[0] = 57 + 9.9  # the last failure was at 57: not quiet long enough yet
    outage.ok()
    assert outage.down
    now[0] = 57 + 10.0
    outage.ok()
    assert not outage.down
    assert [r.getMessage() for r in caplog.records] == [
        "PostgreSQL is unavailable (TimeoutError); calls answer 503 until it is back",
        "PostgreSQL is available again after 58.5 s; 20 calls failed",
    ]  # from the first failure (0) to the first success after the last one (58.5)
    now[0] = 100.0
    outage.failed(ConnectionResetError())  # a new outage later: its own pair
    now[0] = 111.0
    outage.ok()
    assert [r.getMessage() for r in caplog.records][2:] == [
        "PostgreSQL is unavailable (ConnectionResetError); calls answer 503 until it is back",
        "PostgreSQL is available again after 11.0 s; 1 call failed",
    ]


def test_a_negative_quiet_period_is_refused() -> None:
    with pytest.raises(ValueError, match="quiet_seconds"):
        OutageLog("SQLite", quiet_seconds=-1)
