"""Task storage for the server: the :class:`EventLogStore` protocol and its three backends.

A task is stored as the append-only log of the events applied to it, each numbered when it is
committed, with a snapshot kept current from the log (see :class:`EventLogStore`).
:class:`InMemoryTaskStore` keeps tasks for the life of the process, at most ``max_tasks`` of
them; :class:`SQLiteTaskStore` is the durable embedded default; :class:`PostgresTaskStore` is
shared by several server processes (it needs the ``postgresql`` extra, imported when it opens).
Every store is also a :class:`PushStore` (push configs and the delivery outbox); the PostgreSQL
one also implements :class:`SharedTaskStore` (leases and cancel requests) and
:class:`PushClaims`. ListTasks and ListTaskPushNotificationConfigs share one page-size rule and
one signed page-token scheme (:class:`PageTokens`). The layout of the package and how each
backend works are in docs/internals/store.md. This ``__init__`` is the face.
"""

from a2a_wire.server.store._contract.errors import StoreUnavailableError, describe
from a2a_wire.server.store._contract.log import (
    PURGE_BATCH,
    Appended,
    EventKind,
    EventLogStore,
    EventRange,
    LogEvent,
    LogInput,
    Snapshot,
)
from a2a_wire.server.store._contract.push import Delivery, LaneKey, PushClaims, PushStore
from a2a_wire.server.store._contract.shared import (
    CancelReply,
    CancelRequest,
    SharedTaskStore,
    shared_store,
)
from a2a_wire.server.store._contract.tasks import (
    RECOVERED_STATES,
    RESTART_MESSAGE,
    TaskPage,
    TaskQuery,
)
from a2a_wire.server.store._fold.history import DEFAULT_HISTORY_LIMIT, trim_history
from a2a_wire.server.store._fold.paging import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    MAX_PAGE_TOKEN_LENGTH,
    PAGE_TOKEN_KEY_BYTES,
    PageTokens,
    page_scope,
    page_size,
)
from a2a_wire.server.store.memory import DEFAULT_MAX_TASKS, InMemoryPushStore, InMemoryTaskStore
from a2a_wire.server.store.postgresql import (
    ACQUIRE_TIMEOUT,
    CONNECT_TIMEOUT,
    DEFAULT_SCHEMA,
    HEARTBEAT_SECONDS,
    LEASE_SECONDS,
    MIGRATION_LOCK_TIMEOUT,
    POLL_INTERVAL,
    POOL_SIZE,
    PROCESS_LOST_MESSAGE,
    STATEMENT_TIMEOUT,
    PostgresTaskStore,
    check_schema_name,
    migrate,
)
from a2a_wire.server.store.sqlite import BUSY_TIMEOUT_SECONDS, SQLiteTaskStore

__all__ = [
    "ACQUIRE_TIMEOUT",
    "BUSY_TIMEOUT_SECONDS",
    "CONNECT_TIMEOUT",
    "DEFAULT_HISTORY_LIMIT",
    "DEFAULT_MAX_TASKS",
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_SCHEMA",
    "HEARTBEAT_SECONDS",
    "LEASE_SECONDS",
    "MAX_PAGE_SIZE",
    "MAX_PAGE_TOKEN_LENGTH",
    "MIGRATION_LOCK_TIMEOUT",
    "PAGE_TOKEN_KEY_BYTES",
    "POLL_INTERVAL",
    "POOL_SIZE",
    "PROCESS_LOST_MESSAGE",
    "PURGE_BATCH",
    "RECOVERED_STATES",
    "RESTART_MESSAGE",
    "STATEMENT_TIMEOUT",
    "Appended",
    "CancelReply",
    "CancelRequest",
    "Delivery",
    "EventKind",
    "EventLogStore",
    "EventRange",
    "InMemoryPushStore",
    "InMemoryTaskStore",
    "LaneKey",
    "LogEvent",
    "LogInput",
    "PageTokens",
    "PostgresTaskStore",
    "PushClaims",
    "PushStore",
    "SQLiteTaskStore",
    "SharedTaskStore",
    "Snapshot",
    "StoreUnavailableError",
    "TaskPage",
    "TaskQuery",
    "check_schema_name",
    "describe",
    "migrate",
    "page_scope",
    "page_size",
    "shared_store",
    "trim_history",
]
