"""What the backends' ``create`` share: the task's first write and the turn that may follow it."""

from __future__ import annotations

from collections.abc import Sequence

from a2a_wire.server.store._contract.log import Appended, EventLogStore, LogInput

__all__ = ["first_turn"]


async def first_turn(
    store: EventLogStore, created: Appended, task_id: str, events: Sequence[LogInput], push: bool
) -> Appended:
    """What a create took in, ``created``, followed by ``events`` appended as a second write.

    For a store whose :meth:`EventLogStore.create` cannot take ``events`` into its own
    transaction; the caller checked them before creating.
    """
    if not events:
        return created
    done = await store.append(task_id, events, push=push)
    logged = [*created.events, *done.events]
    return Appended(logged, created.outbox + done.outbox, done.state, done.task, done.task_json)
