"""Where a2a-wire's spans and metrics go, and whether anything is recorded at all.

Without ``opentelemetry-api``, or while no SDK provider is set (the API's proxy and no-op
providers), :meth:`Telemetry.tracer` and :meth:`Telemetry.instruments` are ``None`` and the
instrumented code skips everything, extracting and injecting trace context included. Asking the
API for its global providers costs about a microsecond, so while they are unset they are asked
again at most every :data:`RECHECK_SECONDS`: a provider set later is used from then on (and
kept: OpenTelemetry sets the global providers once).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from a2a_wire.telemetry._names import INSTRUMENTATION_NAME

try:
    from opentelemetry import metrics as _metrics
    from opentelemetry import trace as _trace
except ImportError:  # the telemetry extra is not installed
    _trace = None  # type: ignore[assignment]
    _metrics = None  # type: ignore[assignment]

_NO_METERS: tuple[type, ...] = ()
try:  # the API's stand-in until a global meter provider is set (not exported by the API)
    from opentelemetry.metrics._internal import _ProxyMeterProvider

    _NO_METERS = (_metrics.NoOpMeterProvider, _ProxyMeterProvider)
except ImportError:
    if _metrics is not None:
        _NO_METERS = (_metrics.NoOpMeterProvider,)

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import Tracer, TracerProvider

    from a2a_wire.telemetry._metrics import Instruments

__all__ = ["AVAILABLE", "DEFAULT", "RECHECK_SECONDS", "Telemetry"]

AVAILABLE = _trace is not None
"""Whether ``opentelemetry-api`` is installed (the ``telemetry`` extra)."""

_VERSION = "0.1.0"

RECHECK_SECONDS = 1.0
"""Longest time before a global provider set after startup is used."""


class Telemetry:
    """The tracer and the instruments of one server or client.

    Args:
        tracer_provider: Where spans go; the global provider when omitted.
        meter_provider: Where metrics go; the global provider when omitted.
        enabled: ``False`` records nothing whatever the providers.
        record_sizes: Also record each message's part count and size in bytes (never its
            content); off by default.
    """

    __slots__ = (
        "_instruments",
        "_meter_provider",
        "_meters_checked",
        "_tracer",
        "_tracer_provider",
        "_tracers_checked",
        "enabled",
        "record_sizes",
    )

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        enabled: bool = True,
        record_sizes: bool = False,
    ) -> None:
        self.enabled = enabled and AVAILABLE
        self.record_sizes = record_sizes
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._tracer: Tracer | None = None
        self._instruments: Instruments | None = None
        self._tracers_checked = self._meters_checked = -RECHECK_SECONDS

    def tracer(self) -> Tracer | None:
        """The tracer, or ``None`` when spans would go nowhere."""
        if self._tracer is not None or not self.enabled:
            return self._tracer
        if self._tracer_provider is None:
            now = time.monotonic()
            if now - self._tracers_checked < RECHECK_SECONDS:
                return None
            self._tracers_checked = now
        provider = self._tracer_provider or _trace.get_tracer_provider()
        if isinstance(provider, _trace.ProxyTracerProvider | _trace.NoOpTracerProvider):
            return None
        self._tracer = provider.get_tracer(INSTRUMENTATION_NAME, _VERSION)
        return self._tracer

    def instruments(self) -> Instruments | None:
        """The metric instruments, or ``None`` when measurements would go nowhere."""
        if self._instruments is not None or not self.enabled:
            return self._instruments
        if self._meter_provider is None:
            now = time.monotonic()
            if now - self._meters_checked < RECHECK_SECONDS:
                return None
            self._meters_checked = now
        provider = self._meter_provider or _metrics.get_meter_provider()
        if isinstance(provider, _NO_METERS):
            return None
        from a2a_wire.telemetry._metrics import Instruments

        self._instruments = Instruments(provider.get_meter(INSTRUMENTATION_NAME, _VERSION))
        return self._instruments


DEFAULT = Telemetry()
"""The global providers: what a server or client given no :class:`Telemetry` uses."""
