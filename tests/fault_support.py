"""A task store whose calls fail on demand, as a store does while its database is unavailable.

:class:`FailingStore` is the in-memory store with a switch: every call named in
:attr:`FailingStore.failing` (``"*"``: all of them) raises
:class:`~a2a_wire.server.store.StoreUnavailableError`, the one error every real backend raises
for a fault of its database (tests/server/store/test_sqlite_faults.py makes SQLite raise it for
real). :attr:`FailingStore.stall` makes ``ping`` hang instead. The HTTP mapping tests use it.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Coroutine
from typing import Any

from a2a_wire.server.store import InMemoryTaskStore, StoreUnavailableError

STORE_CALLS = (
    "ping",
    "create",
    "append",
    "get",
    "snapshot",
    "list",
    "read_events",
    "wait_events",
    "put_push_config",
    "get_push_config",
    "list_push_configs",
    "delete_push_config",
)
"""The calls the switch covers: every call a request or a stream makes."""

ALL = frozenset({"*"})


class FailingStore(InMemoryTaskStore):
    """The in-memory store, failing the calls named in :attr:`failing` (see the module)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.failing: set[str] | frozenset[str] = frozenset()
        self.stall = False
        self.calls: collections.Counter[str] = collections.Counter()
        self.refused: collections.Counter[str] = collections.Counter()

    def fails(self, name: str) -> bool:
        return name in self.failing or "*" in self.failing


def _guarded(name: str) -> Callable[..., Coroutine[Any, Any, Any]]:
    inner = getattr(InMemoryTaskStore, name)

    async def call(self: FailingStore, *args: Any, **kwargs: Any) -> Any:
        self.calls[name] += 1
        if name == "ping" and self.stall:
            await asyncio.Event().wait()
        if self.fails(name):
            self.refused[name] += 1
            raise StoreUnavailableError("The task store (test) is unavailable; retry later")
        return await inner(self, *args, **kwargs)

    call.__name__ = name
    return call


for _name in STORE_CALLS:
    setattr(FailingStore, _name, _guarded(_name))
