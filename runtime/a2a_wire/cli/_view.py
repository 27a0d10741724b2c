"""A task as a stream has described it so far: the CLI's view of ``send --stream`` and ``subscribe``."""

from __future__ import annotations

import copy

from a2a_wire.types import Artifact, Message, StreamResponse, Task, TaskState

__all__ = ["TaskView"]


class TaskView:
    """The task as a stream has described it so far (spec 3.1.2, 4.2.2 chunk rules)."""

    def __init__(self) -> None:
        self.task: Task | None = None
        self.message: Message | None = None
        self.events = 0
        #: Whether a Task snapshot came (a follow-up turn of some peers sends only updates).
        self.whole = False

    @property
    def state(self) -> TaskState | None:
        """The last state seen."""
        if self.task is None or self.task.status is None:
            return None
        return self.task.status.state

    def apply(self, event: StreamResponse) -> None:
        """Take one stream event into the view."""
        self.events += 1
        if event.message is not None:
            self.message = event.message
        elif event.task is not None:
            self.whole = True
            self.task = copy.copy(event.task)
            self.task.artifacts = list(event.task.artifacts)
        elif event.status_update is not None:
            self._current(event.status_update.task_id, event.status_update.context_id)
            assert self.task is not None
            self.task.status = event.status_update.status
        elif event.artifact_update is not None and event.artifact_update.artifact is not None:
            update = event.artifact_update
            self._current(update.task_id, update.context_id)
            self._add(update.artifact, update.append)

    def _current(self, task_id: str, context_id: str) -> None:
        if self.task is None:
            self.task = Task(id=task_id, context_id=context_id)

    def _add(self, artifact: Artifact | None, append: bool) -> None:
        assert self.task is not None and artifact is not None
        artifacts = self.task.artifacts
        for index, known in enumerate(artifacts):
            if known.artifact_id == artifact.artifact_id:
                if append:
                    merged = copy.copy(known)
                    merged.parts = [*known.parts, *artifact.parts]
                    artifacts[index] = merged
                else:
                    artifacts[index] = artifact
                return
        artifacts.append(artifact)
