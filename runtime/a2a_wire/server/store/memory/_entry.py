"""The in-memory task store's record of one task (:mod:`._store`).

The log is kept as the events' JSON bodies and a byte per event for its kind, not as
:class:`~a2a_wire.server.store._contract.log.LogEvent` objects: a store holding ten thousand finished
tasks then holds two objects per task that the garbage collector walks (the record and its list
of bodies) instead of one more per event. A read makes the LogEvents it returns.
"""

from __future__ import annotations

from dataclasses import dataclass

from a2a_wire.server.store._contract.log import EventKind, LogEvent
from a2a_wire.server.store._fold.events import Shadow
from a2a_wire.server.store._fold.keys import Instant
from a2a_wire.types import TaskState

__all__ = ["Entry"]

_KINDS = {int(kind): kind for kind in EventKind}


@dataclass(slots=True)
class Entry:
    """One task: its listing columns, its snapshot as JSON and its log.

    Attributes:
        owner: The caller owning the task.
        context_id: Its context.
        state: Its state after the last event.
        status: The listing key of its status (:func:`~a2a_wire.server.store._fold.events.status_instant`).
        changed_at: The store's clock when the state last changed (retention reads it).
        base: The snapshot's JSON.
        base_seq: The last event folded into it.
        first_seq: The number of the first event still logged (compaction moves it on).
        bodies: Each logged event's StreamResponse JSON, from ``first_seq`` on.
        kinds: Each logged event's :class:`EventKind`, as a byte.
        tail_bytes: Bytes of the events after the snapshot.
        shadow: Until the first fold, the store's own copy of the task (see Shadow).
    """

    owner: str
    context_id: str
    state: TaskState
    status: Instant
    changed_at: float
    base: bytes
    base_seq: int
    first_seq: int
    bodies: list[bytes]
    kinds: bytearray
    tail_bytes: int = 0
    shadow: Shadow | None = None

    @property
    def head(self) -> int:
        """The number of the last event (compaction never drops events after the snapshot)."""
        return self.first_seq + len(self.bodies) - 1

    def log(self, event: LogEvent) -> None:
        """Append the next event (numbered ``head + 1``)."""
        self.bodies.append(event.body)
        self.kinds.append(event.kind)

    def events(self, start: int, stop: int | None = None) -> list[LogEvent]:
        """The logged events at positions ``start`` to ``stop`` (list indices), made anew."""
        seq = self.first_seq + start
        pairs = zip(self.kinds[start:stop], self.bodies[start:stop], strict=True)
        return [LogEvent(seq + i, _KINDS[kind], body) for i, (kind, body) in enumerate(pairs)]

    def tail(self) -> list[LogEvent]:
        """The events after the snapshot."""
        return self.events(self.base_seq + 1 - self.first_seq)

    def drop(self, count: int) -> None:
        """Forget the first ``count`` logged events (compaction)."""
        del self.bodies[:count]
        del self.kinds[:count]
        self.first_seq += count
