"""``[telemetry]``: OTLP export of ``serve``'s traces and metrics, and its scrape endpoint.

The exporters also read the standard ``OTEL_*`` environment variables for what the table leaves
unset (headers, an endpoint per signal). An endpoint, in the table or in
``OTEL_EXPORTER_OTLP_ENDPOINT``, turns export on unless the table says ``enabled = false``. A
``prometheus_port`` turns the scrape endpoint on, with or without OTLP export.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import yarl

from a2a_wire.cli._install import missing_extra
from a2a_wire.cli.config._schema import Table

__all__ = ["ENDPOINT_VARIABLE", "TelemetrySection", "read_telemetry"]

ENDPOINT_VARIABLE = "OTEL_EXPORTER_OTLP_ENDPOINT"
"""The standard variable naming the collector; when set, export is on by default."""

EXTRA = "otlp"
"""The extra that brings the OpenTelemetry SDK and its OTLP/HTTP exporters."""

PROMETHEUS_EXTRA = "prometheus"
"""The extra that brings the SDK and its Prometheus reader (with ``prometheus_client``)."""


@dataclass(frozen=True)
class TelemetrySection:
    """``[telemetry]`` (docs/observability.md, "From a2a-wire serve").

    Attributes:
        enabled: Export traces and metrics; by default on when ``endpoint`` or
            ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set.
        endpoint: The collector's OTLP/HTTP base URL (``/v1/traces`` and ``/v1/metrics`` are
            added); empty: the exporters' own (``OTEL_EXPORTER_OTLP_*``, else
            ``http://localhost:4318``).
        service_name: ``service.name`` of the resource; empty: ``OTEL_SERVICE_NAME``, else the
            card's name.
        sample_ratio: Share of new traces recorded, 0..1; a request that carries a sampled
            parent is recorded whatever the ratio.
        export_timeout_seconds: Longest time one export may take (also bounds the last one at
            stop).
        metrics_interval_seconds: Seconds between two metric exports.
        record_sizes: Record each message's part count and size (never its content).
        prometheus_port: Port of the Prometheus scrape endpoint (``/metrics``); 0: none.
        prometheus_host: Address the scrape endpoint listens on (loopback by default).
    """

    enabled: bool = False
    endpoint: str = ""
    service_name: str = ""
    sample_ratio: float = 1.0
    export_timeout_seconds: float = 5.0
    metrics_interval_seconds: float = 60.0
    record_sizes: bool = False
    prometheus_port: int = 0
    prometheus_host: str = "127.0.0.1"

    @property
    def active(self) -> bool:
        """Whether ``serve`` sets up the SDK at all (OTLP export, a scrape endpoint, or both)."""
        return self.enabled or self.prometheus_port > 0


def read_telemetry(table: Table) -> TelemetrySection:
    """Read ``[telemetry]``; when export is on, the ``otlp`` extra is required.

    Args:
        table: The ``[telemetry]`` table (empty when absent).

    Returns:
        The section (defaults in place of refused values).
    """
    default = TelemetrySection()
    endpoint = table.text("endpoint")
    section = TelemetrySection(
        enabled=table.flag("enabled", bool(endpoint or os.environ.get(ENDPOINT_VARIABLE))),
        endpoint=endpoint,
        service_name=table.text("service_name"),
        sample_ratio=table.number("sample_ratio", default.sample_ratio, positive=False),
        export_timeout_seconds=table.number(
            "export_timeout_seconds", default.export_timeout_seconds
        ),
        metrics_interval_seconds=table.number(
            "metrics_interval_seconds", default.metrics_interval_seconds
        ),
        record_sizes=table.flag("record_sizes", default.record_sizes),
        prometheus_port=table.integer("prometheus_port", default.prometheus_port, 0, 65535),
        prometheus_host=table.text("prometheus_host", default.prometheus_host),
    )
    table.done()
    if section.sample_ratio > 1:
        table.problem(("sample_ratio",), f"must be 0..1, not {section.sample_ratio}")
    if section.endpoint:
        try:
            url: yarl.URL | None = yarl.URL(section.endpoint)
        except ValueError:
            url = None
        if url is None or url.scheme not in ("http", "https") or not url.host:
            table.problem(("endpoint",), "must be an http:// or https:// URL")
    if section.enabled:
        _require(table, "enabled", EXTRA, "opentelemetry.exporter.otlp.proto.http")
    if section.prometheus_port:
        _require(table, "prometheus_port", PROMETHEUS_EXTRA, "opentelemetry.exporter.prometheus")
    return section


def _require(table: Table, key: str, extra: str, exporter: str) -> None:
    """Note a problem on ``key`` unless the SDK and ``exporter`` (``extra`` brings them) import."""
    for module in ("opentelemetry.sdk", exporter):
        missing = missing_extra(module, extra, f"[telemetry] {key}")
        if missing is not None:
            table.problem((key,), missing)
            return
