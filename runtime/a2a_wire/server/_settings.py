"""Server settings: every limit and interval the JSON-RPC server applies, with its default.

``docs/server.md`` ("Configuration reference") lists each with its ``serve`` configuration key.

The server reads these once, when :func:`a2a_wire.server._app.create_app` builds the application; a
:class:`ServerSettings` is frozen, so one instance can be shared by several applications.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from a2a_wire._protocol.wire import normalize_origin
from a2a_wire.server.push._settings import PushSettings
from a2a_wire.server.store import DEFAULT_HISTORY_LIMIT, DEFAULT_MAX_TASKS

__all__ = ["PROBE_PATHS", "ServerSettings"]

PROBE_PATHS = ("/healthz", "/readyz")
"""The liveness and readiness paths (:mod:`a2a_wire.server._health`), never the JSON-RPC one."""

MIB = 1024 * 1024
DAY = 86400.0


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Limits, intervals and addresses of an A2A JSON-RPC server.

    Attributes:
        rpc_path: The path that takes JSON-RPC POSTs (spec 9); it is the ``url`` advertised in
            the agent card's ``supportedInterfaces``.
        public_url: Scheme and authority clients use to reach the server, e.g.
            ``"https://agent.example.com"``. Empty: taken from each card request's scheme and
            ``Host`` header (set it when the server runs behind a proxy).
        max_body_bytes: Largest request body read; a larger one is answered with HTTP 413.
        max_header_bytes: Longest header line aiohttp reads under ``a2a-wire serve`` (its
            ``max_field_size``; ``create_app`` cannot set it: pass it to your own runner). A
            longer header gets aiohttp's bare HTTP 400; up to it, a bearer token over
            ``TokenSettings.max_token_bytes`` reaches the server and gets its 401.
        body_timeout_seconds: Longest time a request body may take to arrive once its headers
            are in; a slower one is answered with HTTP 408 and its connection closed. Also the
            time a refused request's unread body gets to be read and dropped.
        max_batch_size: Most requests in one JSON-RPC batch; a longer batch is refused whole.
        stream_queue_size: Events each open stream keeps in memory. A reader that falls further
            behind reads the rest from the store, so one slow reader never holds more memory or
            delays the agent and the other readers, and still gets every event (spec 3.5.2).
        keepalive_seconds: Idle time after which an open stream gets an SSE comment line.
        card_max_age_seconds: ``Cache-Control: max-age`` of the agent card (spec 8.6.1).
        cancel_grace_seconds: How long CancelTask waits for the agent's ``execute`` to stop
            after it was cancelled, before recording the task as canceled anyway.
        shutdown_grace_seconds: How long shutdown waits for cancelled agent runs to finish.
        followup_wait_seconds: How long a follow-up to an interrupted task waits for the agent's
            run, whose turn has ended, to return (or, with a shared store, for another
            process to give the task's lease back) before it supersedes that run.
        first_event_seconds: How long SendMessage with ``returnImmediately`` waits for the
            agent's first event (which decides between a task and a direct Message reply)
            before the server makes the SUBMITTED task itself and answers with it.
        max_parts_per_message: Most parts in a client's message; more is -32602 on
            ``message.parts``.
        max_history_per_task: Most messages a task keeps. Beyond it the oldest go, silently,
            except the first (the message that started the task): see
            :func:`a2a_wire.server.store.trim_history`.
        max_streams_per_client: Open streams one caller may hold; one more is HTTP 429.
        requests_per_second: Sustained request rate of one caller (a token bucket); over it,
            HTTP 429 with ``Retry-After``.
        request_burst: Requests one caller may send at once above that rate.
        auth_failures_per_minute: Failed authentications one source address may make per
            minute (with registered clients); then HTTP 429 before credentials are looked at.
        limit_anonymous: Also apply the request and stream limits to unauthenticated callers,
            per source address; otherwise only registered clients are limited, per client id.
        cors_origins: Origins of browser applications allowed to call the server
            (``"https://app.example.com"``, or ``"*"`` for any); empty, the default, turns CORS
            off. See :mod:`a2a_wire.server._cors`.
        terminal_retention_seconds: How long a terminal task is kept after it finished; then
            it is deleted (-32001), with its push configs and outbox rows.
        interrupted_retention_seconds: How long an interrupted task (INPUT_REQUIRED,
            AUTH_REQUIRED) waits for its follow-up; then it is deleted.
        event_log_retention_seconds: How long a terminal task's events are kept for streams
            resuming with ``Last-Event-ID``; then the log is compacted (the task stays).
        memory_max_tasks: Most tasks the in-memory store that ``create_app`` makes holds; the
            oldest finished (then interrupted) ones make room for new ones.
        retention_interval_seconds: Time between two passes of the retention sweeper.
        store_retry_after_seconds: ``Retry-After`` (whole seconds, rounded up) of an answer
            refused because the task store is unavailable (HTTP 503, -32000
            ``STORE_UNAVAILABLE``), and of ``/readyz`` when not ready.
        stream_outage_seconds: How long an open stream rides out a store that fails its reads
            (retrying with backoff, keep-alives still sent); then it ends with a -32000 error
            event naming the task, for the client to resume.
        readiness_timeout_seconds: Longest time ``GET /readyz`` waits for the store's ping.
        store_write_retry_seconds: How long a task write (the agent's event, a follow-up
            message, a new task) that the store refused before writing anything (no connection
            to the database) is tried again before it fails; ``0`` tries once.
        push: Push notification delivery (timeouts, retries, webhook address allowlist); used
            when the card declares ``capabilities.pushNotifications``.
    """

    rpc_path: str = "/"
    public_url: str = ""
    max_body_bytes: int = 10 * MIB
    max_header_bytes: int = 128 * 1024
    body_timeout_seconds: float = 30.0
    max_batch_size: int = 100
    stream_queue_size: int = 1024
    keepalive_seconds: float = 15.0
    card_max_age_seconds: int = 300
    cancel_grace_seconds: float = 5.0
    shutdown_grace_seconds: float = 10.0
    followup_wait_seconds: float = 5.0
    first_event_seconds: float = 1.0
    max_parts_per_message: int = 100
    max_history_per_task: int = DEFAULT_HISTORY_LIMIT
    max_streams_per_client: int = 100
    requests_per_second: float = 100.0
    request_burst: int = 200
    auth_failures_per_minute: int = 10
    limit_anonymous: bool = False
    cors_origins: tuple[str, ...] = ()
    terminal_retention_seconds: float = 7 * DAY
    interrupted_retention_seconds: float = 7 * DAY
    event_log_retention_seconds: float = 3600.0
    memory_max_tasks: int = DEFAULT_MAX_TASKS
    retention_interval_seconds: float = 60.0
    store_retry_after_seconds: float = 1.0
    stream_outage_seconds: float = 10.0
    readiness_timeout_seconds: float = 2.0
    store_write_retry_seconds: float = 1.0
    push: PushSettings = field(default_factory=PushSettings)

    def __post_init__(self) -> None:
        """Check the values.

        Raises:
            ValueError: a limit is not positive, ``rpc_path`` does not start with ``/`` (or is
                ``/healthz`` or ``/readyz``), or an
                entry of ``cors_origins`` is not an origin.
        """
        if not self.rpc_path.startswith("/"):
            raise ValueError(f"rpc_path must start with '/': {self.rpc_path!r}")
        if self.rpc_path in PROBE_PATHS:
            raise ValueError(f"rpc_path must not be a probe's path: {self.rpc_path!r}")
        positive = {
            "max_body_bytes": self.max_body_bytes,
            "max_header_bytes": self.max_header_bytes,
            "body_timeout_seconds": self.body_timeout_seconds,
            "max_batch_size": self.max_batch_size,
            "stream_queue_size": self.stream_queue_size,
            "keepalive_seconds": self.keepalive_seconds,
            "cancel_grace_seconds": self.cancel_grace_seconds,
            "shutdown_grace_seconds": self.shutdown_grace_seconds,
            "followup_wait_seconds": self.followup_wait_seconds,
            "first_event_seconds": self.first_event_seconds,
            "max_parts_per_message": self.max_parts_per_message,
            "max_history_per_task": self.max_history_per_task,
            "max_streams_per_client": self.max_streams_per_client,
            "requests_per_second": self.requests_per_second,
            "request_burst": self.request_burst,
            "auth_failures_per_minute": self.auth_failures_per_minute,
            "terminal_retention_seconds": self.terminal_retention_seconds,
            "interrupted_retention_seconds": self.interrupted_retention_seconds,
            "event_log_retention_seconds": self.event_log_retention_seconds,
            "memory_max_tasks": self.memory_max_tasks,
            "retention_interval_seconds": self.retention_interval_seconds,
            "store_retry_after_seconds": self.store_retry_after_seconds,
            "stream_outage_seconds": self.stream_outage_seconds,
            "readiness_timeout_seconds": self.readiness_timeout_seconds,
        }
        for name, value in positive.items():
            if not value > 0:
                raise ValueError(f"{name} must be positive, not {value!r}")
        if self.card_max_age_seconds < 0:
            raise ValueError("card_max_age_seconds must not be negative")
        if not self.store_write_retry_seconds >= 0:
            raise ValueError(
                f"store_write_retry_seconds must not be negative, not {self.store_write_retry_seconds!r}"
            )
        object.__setattr__(self, "cors_origins", tuple(self.cors_origins))
        for origin in self.cors_origins:
            try:
                normalize_origin(origin)
            except ValueError:
                raise ValueError(
                    f"cors_origins must hold origins scheme://host[:port] or '*', not {origin!r}"
                ) from None
