"""OutageLog: one warning when the database goes away, one when it is back, none in between."""

from __future__ import annotations

import logging

import pytest

from a2a_wire.server.store import StoreUnavailableError
from a2a_wire.server.store._outage import OutageLog


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
        "PostgreSQL is available again after 12.5 s",
    ]
    assert all(r.exc_info is None for r in caplog.records)  # no traceback
    assert all(isinstance(e, StoreUnavailableError) and e.retry_after == 2 for e in errors)
    assert "reset" not in errors[0].message  # the driver's text stays in the log's type name
