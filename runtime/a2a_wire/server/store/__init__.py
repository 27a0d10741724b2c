"""Task storage for the server: the :class:`EventLogStore` protocol and its backends.

A task is stored as the append-only log of the events applied to it, each numbered when it is
committed, with a snapshot kept current from the log (see :class:`EventLogStore`).
:class:`InMemoryTaskStore` keeps tasks for the life of the process, at most ``max_tasks`` of
them; :class:`SQLiteTaskStore` is the durable embedded default. Every store is also a
:class:`PushStore` (push configs and the delivery outbox). A store that several server
processes share (the PostgreSQL store) also implements :class:`SharedTaskStore` (leases and
cancel requests) and :class:`PushClaims` (outbox rows claimed by one process at a time).
ListTasks and ListTaskPushNotificationConfigs share one page-size rule and one signed
page-token scheme (:class:`PageTokens`, ``EventLogStore.page_tokens``). This ``__init__`` is
the public face; the modules are private.
"""

from a2a_wire.server.store._base import RECOVERED_STATES, RESTART_MESSAGE, TaskPage, TaskQuery
from a2a_wire.server.store._log import (
    Appended,
    EventKind,
    EventLogStore,
    EventRange,
    LogEvent,
    LogInput,
    Snapshot,
)
from a2a_wire.server.store._log_memory import InMemoryTaskStore
from a2a_wire.server.store._log_sqlite import SQLiteTaskStore
from a2a_wire.server.store._paging import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    MAX_PAGE_TOKEN_LENGTH,
    PAGE_TOKEN_KEY_BYTES,
    PageTokens,
)
from a2a_wire.server.store._push import (
    Delivery,
    InMemoryPushStore,
    LaneKey,
    PushClaims,
    PushStore,
)
from a2a_wire.server.store._shared import CancelReply, CancelRequest, SharedTaskStore
from a2a_wire.server.store._unavailable import StoreUnavailableError

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "MAX_PAGE_TOKEN_LENGTH",
    "PAGE_TOKEN_KEY_BYTES",
    "RECOVERED_STATES",
    "RESTART_MESSAGE",
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
    "PushClaims",
    "PushStore",
    "SQLiteTaskStore",
    "SharedTaskStore",
    "Snapshot",
    "StoreUnavailableError",
    "TaskPage",
    "TaskQuery",
]
