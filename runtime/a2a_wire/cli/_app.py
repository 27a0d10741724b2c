"""From a checked :class:`~a2a_wire.cli.config._load.Config` to a ready aiohttp application.

* The card comes from ``[card]`` and the skills (spec 8.2); the server adds its JSON-RPC
  interface itself.
* The store is SQLite in ``data_dir`` (created on first start, with the page-token key kept
  beside the database so ListTasks cursors outlive a restart), or in memory. For
  ``storage = "postgresql"``, :func:`build_postgres_store` makes the
  :class:`~a2a_wire.server.store.PostgresTaskStore` of ``[postgresql]`` (the
  page-token key still comes from ``data_dir``: every process and host must hold the same file).
* Skills, registered clients, the extended card and card signing go to the server as a
  :class:`~a2a_wire.server.SecurityConfig`; the server routes each message to its skill
  (:class:`~a2a_wire.server.SkillRouter`) and authenticates callers when clients are registered.
* The request log middleware (:mod:`a2a_wire.cli._logging`) is put in front of the server's
  own middleware.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from aiohttp import web

from a2a_wire.cli._exporting import start_exporting
from a2a_wire.cli._logging import NotingExecutor, RequestLog
from a2a_wire.cli.config._load import Config, SkillEntry
from a2a_wire.server import SecurityConfig, Skill, create_app
from a2a_wire.server.store import (
    EventLogStore,
    InMemoryTaskStore,
    PostgresTaskStore,
    SQLiteTaskStore,
)
from a2a_wire.telemetry import Telemetry
from a2a_wire.types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentProvider,
    AgentSkill,
)

__all__ = [
    "build_app",
    "build_card",
    "build_postgres_store",
    "build_security",
    "build_store",
    "page_token_key",
]

_KEY_FILE = "page-token.key"


def _agent_skill(entry: SkillEntry) -> AgentSkill:
    return AgentSkill(
        id=entry.id,
        name=entry.name,
        description=entry.description,
        tags=list(entry.tags),
        examples=list(entry.examples),
        input_modes=list(entry.input_modes),
        output_modes=list(entry.output_modes),
    )


def build_card(config: Config) -> AgentCard:
    """The public agent card the configuration describes.

    Args:
        config: The configuration.

    Returns:
        The card, without ``supportedInterfaces`` (the server fills them in).
    """
    card = config.card
    provider = None
    if card.provider_organization or card.provider_url:
        provider = AgentProvider(organization=card.provider_organization, url=card.provider_url)
    return AgentCard(
        name=card.name,
        description=card.description,
        version=card.version,
        provider=provider,
        documentation_url=card.documentation_url or None,
        icon_url=card.icon_url or None,
        capabilities=AgentCapabilities(
            streaming=card.streaming,
            push_notifications=card.push_notifications,
            extended_agent_card=True if config.security.extended_card else None,
            extensions=[
                AgentExtension(
                    uri=e.uri,
                    description=e.description,
                    required=e.required,
                    params=dict(e.params) if e.params else None,
                )
                for e in card.extensions
            ],
        ),
        default_input_modes=list(card.default_input_modes),
        default_output_modes=list(card.default_output_modes),
        skills=[_agent_skill(skill) for skill in config.skills],
    )


def page_token_key(data_dir: Path) -> bytes:
    """The key signing ListTasks cursors, made once and kept (owner-only) in ``data_dir``.

    ``serve --workers`` calls it before it starts any worker, so that the workers read one key
    and never race to make two.

    Args:
        data_dir: The data directory (it must exist).

    Returns:
        The 32-byte key.

    Raises:
        OSError: The file cannot be read or written.
    """
    path = data_dir / _KEY_FILE
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        key = b""
    if len(key) < 32:  # missing, or too short to be ours: replaced by a new one
        key = secrets.token_bytes(32)
        # A new file, owner-only from its creation, then renamed over the old one (whose mode
        # an O_TRUNC open would have kept): never a moment with the key readable by others.
        spare = path.with_name(f".{_KEY_FILE}.{secrets.token_hex(8)}")
        descriptor = os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(key)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(spare, path)
        except BaseException:
            spare.unlink(missing_ok=True)
            raise
    return key


def build_store(config: Config) -> EventLogStore:
    """The task store: SQLite in the data directory (created if missing), or in memory.

    Both keep ``max_history_per_task`` messages a task; the in-memory one holds at most
    ``memory_max_tasks`` tasks.

    Args:
        config: The configuration.

    Returns:
        The store, not yet opened (the server opens it at startup).

    Raises:
        OSError: The data directory cannot be created or written.
    """
    server, settings = config.server, config.settings
    limit = settings.max_history_per_task
    if server.storage == "memory":
        return InMemoryTaskStore(history_limit=limit, max_tasks=settings.memory_max_tasks)
    if server.storage == "postgresql":
        return build_postgres_store(config)
    server.data_dir.mkdir(parents=True, exist_ok=True)
    key = page_token_key(server.data_dir)
    return SQLiteTaskStore(
        server.database,
        synchronous=server.sqlite_synchronous,
        busy_timeout_seconds=server.sqlite_busy_timeout_seconds,
        page_token_key=key,
        history_limit=limit,
    )


def build_postgres_store(config: Config) -> PostgresTaskStore:
    """The PostgreSQL event log store of ``[postgresql]``, not yet opened.

    Made with ``recover=False``: several processes share the schema, and the recovery on open
    would fail the tasks the others are running. A dead process's tasks are the lease
    takeover's (docs/scale-out.md, "Failover").

    Args:
        config: The configuration; ``config.postgresql.address()`` must hold the DSN (the
            configuration check makes sure it does when ``storage = "postgresql"``).

    Returns:
        The store (connecting, migrating and listening happen when it is opened).

    Raises:
        OSError: The data directory (for the page-token key) cannot be created or written.
    """
    section = config.postgresql
    config.server.data_dir.mkdir(parents=True, exist_ok=True)
    return PostgresTaskStore(
        section.address(),
        schema=section.schema,
        pool_size=section.pool_size,
        poll_interval=section.poll_interval_seconds,
        lease_seconds=section.lease_seconds,
        heartbeat_seconds=section.heartbeat_seconds,
        connect_timeout=section.connect_timeout_seconds,
        statement_timeout=section.statement_timeout_seconds,
        acquire_timeout=section.acquire_timeout_seconds,
        migration_lock_timeout=section.migration_lock_timeout_seconds,
        recover=False,
        page_token_key=page_token_key(config.server.data_dir),
        history_limit=config.settings.max_history_per_task,
    )


def build_security(config: Config) -> SecurityConfig:
    """Registered clients, skills (each executor wrapped for the request log), signing.

    Args:
        config: The configuration.

    Returns:
        The server's :class:`~a2a_wire.server.SecurityConfig`.
    """
    skills = [
        Skill(
            _agent_skill(entry),
            NotingExecutor(entry.executor),
            public=entry.public,
            default=entry.default,
        )
        for entry in config.skills
    ]
    security = config.security
    return SecurityConfig(
        clients=config.clients,
        skills=skills,
        extended_card=security.extended_card,
        card_signer=security.signer,
        api_key_header=security.api_key_header,
        realm=security.realm,
        oauth2=security.oauth2,
        tokens=security.tokens,
    )


def build_app(config: Config) -> tuple[web.Application, RequestLog]:
    """The server application for ``config``, and its request log (which drains it at stop).

    Skills are routed by the server (:class:`~a2a_wire.server.SkillRouter`):
    ``message.metadata.skillId``, else the task's skill, else the default skill; an unknown
    skill is -32602.

    Args:
        config: The configuration.

    Returns:
        The application and the middleware object counting its active requests.

    Raises:
        OSError: The data directory cannot be created.
        ScrapeEndpointError: The Prometheus scrape endpoint cannot listen.
    """
    card = build_card(config)
    section = config.telemetry
    app = create_app(
        card,
        store=build_store(config),
        settings=config.settings,
        security=build_security(config),
        telemetry=Telemetry(record_sizes=section.record_sizes) if section.active else None,
    )
    exporting = start_exporting(section, card.name) if section.active else None
    if exporting is not None:  # after the server's own cleanups: the spans of its stop go too
        app.on_cleanup.append(exporting.stop)
    log = RequestLog()
    app.middlewares.insert(0, log.middleware)
    return app, log
