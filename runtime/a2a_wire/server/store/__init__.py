"""Task storage for the server: the :class:`TaskStore` protocol and its backends.

:class:`InMemoryTaskStore` keeps tasks for the life of the process; :class:`SQLiteTaskStore` is
the durable embedded default. Every store is also a :class:`PushStore` (push configs and the
delivery outbox). ListTasks and ListTaskPushNotificationConfigs share one page-size rule and
one signed page-token scheme (:class:`PageTokens`, ``TaskStore.page_tokens``). This
``__init__`` is the public face; the modules are private.
"""

from a2a_wire.server.store._base import (
    RECOVERED_STATES,
    RESTART_MESSAGE,
    TaskPage,
    TaskQuery,
    TaskStore,
)
from a2a_wire.server.store._memory import InMemoryTaskStore
from a2a_wire.server.store._paging import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    MAX_PAGE_TOKEN_LENGTH,
    PAGE_TOKEN_KEY_BYTES,
    PageTokens,
)
from a2a_wire.server.store._push import Delivery, InMemoryPushStore, LaneKey, PushStore
from a2a_wire.server.store._sqlite import SQLiteTaskStore

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "MAX_PAGE_TOKEN_LENGTH",
    "PAGE_TOKEN_KEY_BYTES",
    "RECOVERED_STATES",
    "RESTART_MESSAGE",
    "Delivery",
    "InMemoryPushStore",
    "InMemoryTaskStore",
    "LaneKey",
    "PageTokens",
    "PushStore",
    "SQLiteTaskStore",
    "TaskPage",
    "TaskQuery",
    "TaskStore",
]
