"""TaskUpdater: what each helper puts on the queue, and the chunked artifact it refuses."""

from __future__ import annotations

import pytest

from a2a_wire.server import RequestContext, TaskUpdater
from a2a_wire.types import TaskArtifactUpdateEvent


class Recorder:
    """An EventQueue that keeps what it is given."""

    def __init__(self) -> None:
        self.events: list[object] = []

    async def enqueue_event(self, event: object) -> bool:
        self.events.append(event)
        return True


def updater() -> tuple[TaskUpdater, Recorder]:
    queue = Recorder()
    context = RequestContext(message=None, task_id="t1", context_id="c1")
    return TaskUpdater(queue, context), queue


async def test_chunks_append_to_the_artifact_the_first_call_made() -> None:
    task, queue = updater()
    first = await task.add_artifact("one", name="poem")
    again = await task.add_artifact(" two", artifact_id=first, append=True, last_chunk=True)
    assert again == first and first
    sent = [e for e in queue.events if isinstance(e, TaskArtifactUpdateEvent)]
    assert [(e.artifact.artifact_id, e.append, e.last_chunk) for e in sent if e.artifact] == [
        (first, False, False),
        (first, True, True),
    ]


async def test_append_without_an_artifact_id_is_refused() -> None:
    task, queue = updater()
    with pytest.raises(ValueError) as caught:
        await task.add_artifact("two", name="poem", append=True)
    assert "artifact_id" in str(caught.value)
    assert "pass the id that the first add_artifact of this artifact returned" in str(caught.value)
    assert queue.events == [], "nothing was sent"
