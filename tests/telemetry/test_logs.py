"""Trace ids on log records: TraceContextFilter inside and outside a span, and serve's formatters."""

from __future__ import annotations

import json
import logging

from opentelemetry.sdk.trace import TracerProvider

from a2a_wire.cli._exporting import QuietExports
from a2a_wire.cli._logging import JSONFormatter, TextFormatter
from a2a_wire.telemetry import TraceContextFilter


def _record(message: str = "hello") -> logging.LogRecord:
    return logging.LogRecord("a2a_wire.test", logging.INFO, __file__, 1, message, (), None)


def test_a_record_logged_inside_a_span_gets_its_ids() -> None:
    tracer = TracerProvider().get_tracer("test")
    record = _record()
    with tracer.start_as_current_span("work") as span:
        assert TraceContextFilter().filter(record) is True
    ids = span.get_span_context()
    assert record.trace_id == f"{ids.trace_id:032x}"  # type: ignore[attr-defined]
    assert record.span_id == f"{ids.span_id:016x}"  # type: ignore[attr-defined]
    assert json.loads(JSONFormatter().format(record))["trace_id"] == f"{ids.trace_id:032x}"
    assert f"span_id={ids.span_id:016x}" in TextFormatter().format(record)


def test_a_record_outside_any_span_is_left_alone() -> None:
    record = _record()
    assert TraceContextFilter().filter(record) is True
    assert not hasattr(record, "trace_id")
    assert "trace_id" not in json.loads(JSONFormatter().format(record))


def test_fields_given_by_the_request_line_win() -> None:
    record = _record("request")
    record.fields = {"trace_id": "a" * 32, "span_id": "b" * 16}
    record.trace_id, record.span_id = "c" * 32, "d" * 16
    line = json.loads(JSONFormatter().format(record))
    assert (line["trace_id"], line["span_id"]) == ("a" * 32, "b" * 16)


def test_failed_exports_are_one_line_a_minute_with_a_count() -> None:
    quiet = QuietExports(seconds=3600)
    name = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
    failures = [
        logging.LogRecord(name, logging.ERROR, __file__, 1, "Failed to export", (), None)
        for _ in range(5)
    ]
    assert [quiet.filter(r) for r in failures] == [True, False, False, False, False]
    quiet.last -= 3600  # the hour went by
    again = logging.LogRecord(name, logging.ERROR, __file__, 1, "Failed to export", (), None)
    assert quiet.filter(again) and again.fields == {"suppressed": 4}  # type: ignore[attr-defined]
    assert quiet.filter(_record())  # other loggers pass
