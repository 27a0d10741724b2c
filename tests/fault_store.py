"""A task store whose database fails or stalls on demand: the in-memory store behind switches.

:class:`FaultyStore` raises :class:`~a2a_wire.server.store.StoreUnavailableError`, the one error
every real backend raises for a fault of its database, from the calls named in
:attr:`FaultyStore.failing` (``ALL``: every call; :attr:`FaultyStore.down` says the same).
While :attr:`FaultyStore.stall` is cleared, the calls named in :attr:`FaultyStore.stalling` wait
for it like a statement on a frozen connection: ``stall_seconds`` at most (``None``: for ever),
then they raise StoreUnavailableError too, as a statement timeout does. The calls named in
:attr:`FaultyStore.answer_lost` are carried out, then raise it: the database committed, but its
answer was lost with the connection. The runtime's behaviour
under faults is tested against it; the real databases' faults are tested with the real things
(tests/server/store/, tests/functional/).
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
"""The calls the switches cover: every call a request, a run or a stream makes."""

ALL = frozenset({"*"})
"""Every call in :data:`STORE_CALLS`."""

STALL_SECONDS = 0.1
"""Default deadline of a stalled call (small: a test's statement timeout)."""


class FaultyStore(InMemoryTaskStore):
    """The in-memory store, failing or stalling the calls it is told to (see the module).

    Attributes:
        failing: Names of the calls that raise (``ALL``: all of them).
        stall: Cleared, the calls in :attr:`stalling` wait for it to be set again.
        stalling: Names of the calls a cleared :attr:`stall` holds (``ALL`` by default).
        stall_seconds: A stalled call's deadline; ``None`` waits for ever.
        answer_lost: Names of the calls that are made, then raise (the commit's answer lost).
        calls: How many times each call was made.
        refused: How many times each call raised (failing, or stalled past its deadline).
    """

    def __init__(self, *, stall_seconds: float | None = STALL_SECONDS, **options: Any) -> None:
        super().__init__(**options)
        self.failing: set[str] | frozenset[str] = frozenset()
        self.stall = asyncio.Event()
        self.stall.set()
        self.stalling: set[str] | frozenset[str] = ALL
        self.stall_seconds = stall_seconds
        self.answer_lost: set[str] | frozenset[str] = frozenset()
        self.calls: collections.Counter[str] = collections.Counter()
        self.refused: collections.Counter[str] = collections.Counter()

    @property
    def down(self) -> bool:
        """Whether every call fails; setting it fails all calls or none."""
        return "*" in self.failing

    @down.setter
    def down(self, value: bool) -> None:
        self.failing = ALL if value else frozenset()

    @property
    def failed(self) -> int:
        """How many calls were refused in all."""
        return sum(self.refused.values())

    async def _reach(self, name: str) -> None:
        self.calls[name] += 1
        if not self.stall.is_set() and {name, "*"} & self.stalling:
            try:
                async with asyncio.timeout(self.stall_seconds):
                    await self.stall.wait()
            except TimeoutError:
                self.refused[name] += 1
                raise StoreUnavailableError(
                    "The task store (test) stalled past its deadline"
                ) from None
        if {name, "*"} & self.failing:
            self.refused[name] += 1
            raise StoreUnavailableError("The task store (test) is unavailable; retry later")


def _guarded(name: str) -> Callable[..., Coroutine[Any, Any, Any]]:
    inner = getattr(InMemoryTaskStore, name)

    async def call(self: FaultyStore, *args: Any, **kwargs: Any) -> Any:
        await self._reach(name)
        answer = await inner(self, *args, **kwargs)
        if {name, "*"} & self.answer_lost:
            self.refused[name] += 1
            raise StoreUnavailableError("The task store (test) lost its answer; retry later")
        return answer

    call.__name__ = name
    return call


for _name in STORE_CALLS:
    setattr(FaultyStore, _name, _guarded(_name))
