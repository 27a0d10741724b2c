"""The in-memory task store: tasks for the life of the process, at most ``max_tasks`` of them."""

from a2a_wire.server.store.memory._push import InMemoryPushStore
from a2a_wire.server.store.memory._store import DEFAULT_MAX_TASKS, InMemoryTaskStore

__all__ = ["DEFAULT_MAX_TASKS", "InMemoryPushStore", "InMemoryTaskStore"]
