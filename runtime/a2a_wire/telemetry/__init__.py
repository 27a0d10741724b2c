"""OpenTelemetry traces and metrics of both roles (docs/observability.md).

Needs only ``opentelemetry-api`` (the ``telemetry`` extra); the application configures the SDK
and its exporters. Pass a :class:`Telemetry` to ``create_app`` or ``A2AClient`` to use providers
other than the global ones, or to turn recording off; :class:`TraceContextFilter` puts trace
ids on log records.
"""

from a2a_wire.telemetry._logs import TraceContextFilter
from a2a_wire.telemetry._names import INSTRUMENTATION_NAME
from a2a_wire.telemetry._switch import AVAILABLE, DEFAULT, Telemetry

__all__ = ["AVAILABLE", "DEFAULT", "INSTRUMENTATION_NAME", "Telemetry", "TraceContextFilter"]
