"""The metric instruments of both roles (OpenTelemetry metrics API; durations in seconds)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.metrics import Meter

__all__ = [
    "ACTIVE_RUNS",
    "ACTIVE_STREAMS",
    "CLIENT_DURATION",
    "PUSH_ATTEMPTS",
    "PUSH_DURATION",
    "PUSH_LAG",
    "RUN_DURATION",
    "STREAM_EVENTS",
    "TASK_TRANSITIONS",
    "SERVER_DURATION",
    "STORE_UNAVAILABLE",
    "TASKS_CREATED",
    "Instruments",
]

SERVER_DURATION = "a2a.server.request.duration"
CLIENT_DURATION = "a2a.client.request.duration"
ACTIVE_STREAMS = "a2a.server.active_streams"
TASKS_CREATED = "a2a.server.task.created"
STORE_UNAVAILABLE = "a2a.server.store.unavailable"
ACTIVE_RUNS = "a2a.server.active_runs"
RUN_DURATION = "a2a.server.run.duration"
STREAM_EVENTS = "a2a.server.stream.events"
TASK_TRANSITIONS = "a2a.server.task.transitions"
PUSH_ATTEMPTS = "a2a.server.push.attempts"
PUSH_DURATION = "a2a.server.push.duration"
PUSH_LAG = "a2a.server.push.lag"

# Bucket bounds of the duration histograms, in seconds: from a fast in-memory GetTask to a
# blocking SendMessage that waits for its task (OpenTelemetry's default bounds are for ms).
DURATION_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300
)  # fmt: skip


class Instruments:
    """One meter's instruments; each records with the attributes docs/observability.md lists."""

    __slots__ = (
        "active_runs",
        "active_streams",
        "client_duration",
        "push_attempts",
        "push_duration",
        "push_lag",
        "run_duration",
        "server_duration",
        "store_unavailable",
        "stream_events",
        "task_transitions",
        "tasks_created",
    )

    def __init__(self, meter: Meter) -> None:
        buckets = list(DURATION_BUCKETS)
        self.server_duration = meter.create_histogram(
            SERVER_DURATION,
            unit="s",
            description="Duration of JSON-RPC calls served (a stream: until it ends).",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.client_duration = meter.create_histogram(
            CLIENT_DURATION,
            unit="s",
            description="Duration of JSON-RPC calls made by the client.",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.active_streams = meter.create_up_down_counter(
            ACTIVE_STREAMS, unit="{stream}", description="Event streams open on the server."
        )
        self.tasks_created = meter.create_counter(
            TASKS_CREATED, unit="{task}", description="Tasks the server created."
        )
        self.active_runs = meter.create_up_down_counter(
            ACTIVE_RUNS, unit="{run}", description="Runs of the agent's execute in progress."
        )
        self.run_duration = meter.create_histogram(
            RUN_DURATION,
            unit="s",
            description="Duration of the agent's execute, per run.",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.stream_events = meter.create_counter(
            STREAM_EVENTS, unit="{event}", description="Events written on the server's streams."
        )
        self.push_attempts = meter.create_counter(
            PUSH_ATTEMPTS,
            unit="{attempt}",
            description="Push delivery attempts, by outcome (delivered, retry, failed).",
        )
        self.push_duration = meter.create_histogram(
            PUSH_DURATION,
            unit="s",
            description="Duration of one push delivery attempt (the POST to the webhook).",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.push_lag = meter.create_histogram(
            PUSH_LAG,
            unit="s",
            description="From an event's commit to its delivery to a webhook.",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.task_transitions = meter.create_counter(
            TASK_TRANSITIONS,
            unit="{transition}",
            description="Tasks that entered a state, by the state entered (creation included).",
        )
        self.store_unavailable = meter.create_counter(
            STORE_UNAVAILABLE,
            unit="{answer}",
            description="Answers (and stream ends) saying the task store is unavailable.",
        )
