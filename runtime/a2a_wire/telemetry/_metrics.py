"""The metric instruments of both roles (OpenTelemetry metrics API; durations in seconds).

Each instrument is declared once in :data:`METRICS` (name, kind, unit, attributes); the
instruments are made from it and docs/observability.md's table is checked against it
(tests/telemetry/test_docs.py). The outbox gauges are read on collection from the
:class:`Backlog` sources a push deliverer registers (no query unless metrics are collected).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from a2a_wire.telemetry._names import (
    AGENT_NAME,
    ERROR_TYPE,
    LEASE_OUTCOME,
    METHOD_NAME,
    PUSH_OUTCOME,
    STORE_OPERATION,
    TASK_STATE,
)

if TYPE_CHECKING:
    from opentelemetry.metrics import (
        CallbackOptions,
        Counter,
        Histogram,
        Meter,
        Observation,
        UpDownCounter,
    )

__all__ = [
    "DURATION_BUCKETS",
    "METRICS",
    "Backlog",
    "Instruments",
    "Metric",
]


@dataclass(frozen=True, slots=True)
class Metric:
    """One instrument: what docs/observability.md's metrics table lists for it.

    Attributes:
        name: The instrument's name.
        kind: ``histogram``, ``counter``, ``up-down counter`` or ``gauge`` (observable).
        unit: UCUM unit (``s``, or an annotation such as ``{task}``).
        description: One line.
        attributes: The attributes its measurements may carry.
    """

    name: str
    kind: str
    unit: str
    description: str
    attributes: tuple[str, ...] = ()


SERVER_DURATION = Metric(
    "a2a.server.request.duration",
    "histogram",
    "s",
    "Duration of JSON-RPC calls served (a stream: until it ends).",
    (METHOD_NAME, ERROR_TYPE),
)
CLIENT_DURATION = Metric(
    "a2a.client.request.duration",
    "histogram",
    "s",
    "Duration of JSON-RPC calls made by the client.",
    (METHOD_NAME, ERROR_TYPE),
)
ACTIVE_STREAMS = Metric(
    "a2a.server.active_streams", "up-down counter", "{stream}", "Event streams open on the server."
)
TASKS_CREATED = Metric("a2a.server.task.created", "counter", "{task}", "Tasks the server created.")
STORE_UNAVAILABLE = Metric(
    "a2a.server.store.unavailable",
    "counter",
    "{answer}",
    "Answers (and stream ends) saying the task store is unavailable.",
    (METHOD_NAME,),
)
STORE_DURATION = Metric(
    "a2a.server.store.duration",
    "histogram",
    "s",
    "Duration of one call of the server to its task store.",
    (STORE_OPERATION, ERROR_TYPE),
)
ACTIVE_RUNS = Metric(
    "a2a.server.active_runs", "up-down counter", "{run}", "Runs of the agent's execute in progress."
)
RUN_DURATION = Metric(
    "a2a.server.run.duration",
    "histogram",
    "s",
    "Duration of the agent's execute, per run.",
    (AGENT_NAME, ERROR_TYPE),
)
STREAM_EVENTS = Metric(
    "a2a.server.stream.events",
    "counter",
    "{event}",
    "Events written on the server's streams.",
    (METHOD_NAME,),
)
TASK_TRANSITIONS = Metric(
    "a2a.server.task.transitions",
    "counter",
    "{transition}",
    "Tasks that entered a state, by the state entered (creation included).",
    (TASK_STATE,),
)
PUSH_ATTEMPTS = Metric(
    "a2a.server.push.attempts",
    "counter",
    "{attempt}",
    "Push delivery attempts, by outcome (delivered, retry, failed).",
    (PUSH_OUTCOME, ERROR_TYPE),
)
PUSH_DURATION = Metric(
    "a2a.server.push.duration",
    "histogram",
    "s",
    "Duration of one push delivery attempt (the POST to the webhook).",
)
PUSH_LAG = Metric(
    "a2a.server.push.lag",
    "histogram",
    "s",
    "From an event's commit to its delivery to a webhook.",
)
OUTBOX_DEPTH = Metric(
    "a2a.server.push.outbox.depth",
    "gauge",
    "{delivery}",
    "Push deliveries stored and not yet delivered or given up.",
)
OUTBOX_AGE = Metric(
    "a2a.server.push.outbox.age",
    "gauge",
    "s",
    "Age of the oldest push delivery not yet delivered or given up.",
)
LEASES_LOST = Metric(
    "a2a.server.lease.lost",
    "counter",
    "{lease}",
    "Task leases this process held and found gone (taken over, or fenced).",
)
LEASE_TAKEOVERS = Metric(
    "a2a.server.lease.takeovers",
    "counter",
    "{task}",
    "Expired task leases of other processes this process ended.",
    (LEASE_OUTCOME,),
)

METRICS = (
    SERVER_DURATION,
    CLIENT_DURATION,
    ACTIVE_STREAMS,
    TASKS_CREATED,
    STORE_UNAVAILABLE,
    STORE_DURATION,
    ACTIVE_RUNS,
    RUN_DURATION,
    STREAM_EVENTS,
    TASK_TRANSITIONS,
    PUSH_ATTEMPTS,
    PUSH_DURATION,
    PUSH_LAG,
    OUTBOX_DEPTH,
    OUTBOX_AGE,
    LEASES_LOST,
    LEASE_TAKEOVERS,
)
"""Every instrument, in the order of docs/observability.md's table."""

# Bucket bounds of the duration histograms, in seconds: from a fast in-memory GetTask to a
# blocking SendMessage that waits for its task (OpenTelemetry's default bounds are for ms).
DURATION_BUCKETS = (
    0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300
)  # fmt: skip


class Backlog(Protocol):
    """A push outbox as last read: see :class:`a2a_wire.server.push.Backlog`."""

    def observe(self, *, read: bool = True) -> tuple[int, float] | None:
        """``(depth, age of the oldest row in seconds)``; with ``read``, a new count first."""
        ...


class Instruments:
    """One meter's instruments; each records with the attributes its :class:`Metric` lists."""

    __slots__ = (
        "active_runs",
        "active_streams",
        "backlogs",
        "client_duration",
        "lease_takeovers",
        "leases_lost",
        "push_attempts",
        "push_duration",
        "push_lag",
        "run_duration",
        "server_duration",
        "store_duration",
        "store_unavailable",
        "stream_events",
        "task_transitions",
        "tasks_created",
    )

    def __init__(self, meter: Meter) -> None:
        self.backlogs: list[Backlog] = []
        """The outboxes the gauges report (a push deliverer adds its own while it runs)."""
        self.server_duration: Histogram = _make(meter, SERVER_DURATION)
        self.client_duration: Histogram = _make(meter, CLIENT_DURATION)
        self.active_streams: UpDownCounter = _make(meter, ACTIVE_STREAMS)
        self.tasks_created: Counter = _make(meter, TASKS_CREATED)
        self.store_unavailable: Counter = _make(meter, STORE_UNAVAILABLE)
        self.store_duration: Histogram = _make(meter, STORE_DURATION)
        self.active_runs: UpDownCounter = _make(meter, ACTIVE_RUNS)
        self.run_duration: Histogram = _make(meter, RUN_DURATION)
        self.stream_events: Counter = _make(meter, STREAM_EVENTS)
        self.task_transitions: Counter = _make(meter, TASK_TRANSITIONS)
        self.push_attempts: Counter = _make(meter, PUSH_ATTEMPTS)
        self.push_duration: Histogram = _make(meter, PUSH_DURATION)
        self.push_lag: Histogram = _make(meter, PUSH_LAG)
        self.leases_lost: Counter = _make(meter, LEASES_LOST)
        self.lease_takeovers: Counter = _make(meter, LEASE_TAKEOVERS)
        _make(meter, OUTBOX_DEPTH, self._depths)
        _make(meter, OUTBOX_AGE, self._ages)

    def _observed(self, read: bool) -> list[tuple[int, float]]:
        return [seen for b in list(self.backlogs) if (seen := b.observe(read=read)) is not None]

    def _depths(self, _options: CallbackOptions) -> Iterable[Observation]:
        from opentelemetry.metrics import Observation

        return [Observation(depth) for depth, _ in self._observed(read=True)]

    def _ages(self, _options: CallbackOptions) -> Iterable[Observation]:
        """The ages of the counts the depth gauge just read (one query per collection)."""
        from opentelemetry.metrics import Observation

        return [Observation(age) for _, age in self._observed(read=False)]


def _make(meter: Meter, metric: Metric, callback: Any = None) -> Any:
    """The instrument ``metric`` declares (a gauge reads ``callback`` on each collection)."""
    name, unit, text = metric.name, metric.unit, metric.description
    if metric.kind == "histogram":
        buckets = list(DURATION_BUCKETS)
        return meter.create_histogram(
            name, unit=unit, description=text, explicit_bucket_boundaries_advisory=buckets
        )
    if metric.kind == "counter":
        return meter.create_counter(name, unit=unit, description=text)
    if metric.kind == "up-down counter":
        return meter.create_up_down_counter(name, unit=unit, description=text)
    return meter.create_observable_gauge(name, [callback], unit=unit, description=text)
