"""The SendMessage answer that splices the JSON the store wrote for the settled task."""

from __future__ import annotations

from a2a_wire import codec
from a2a_wire.server._stored_answer import StoredTaskResponse, settled_answer
from a2a_wire.server.store import Appended
from a2a_wire.types import Message, Part, Role, SendMessageResponse, Task, TaskState, TaskStatus


def _settled(messages: int) -> Task:
    history = [
        Message(message_id=f"m{i}", role=Role.USER, parts=[Part(text=f"turn {i}")])
        for i in range(messages)
    ]
    status = TaskStatus(state=TaskState.COMPLETED)
    return Task(id="t1", context_id="c1", status=status, history=history)


def _done(task: Task, encoded: bytes | None) -> Appended:
    return Appended([], 0, TaskState.COMPLETED, task, encoded)


def test_the_answer_splices_the_stored_json_and_reads_the_same() -> None:
    task = _settled(3)
    stored = codec.encode(task)
    for length in (None, 3, 10):
        answer = settled_answer(_done(task, stored), length)
        assert isinstance(answer, StoredTaskResponse)
        assert answer.task is task
        wire = codec.dumps(answer.to_dict())
        assert wire == codec.dumps(SendMessageResponse(task=task).to_dict())
        assert wire == b'{"task":' + stored + b"}"


def test_a_shorter_history_asked_for_is_cut_from_the_task_not_spliced() -> None:
    task = _settled(3)
    answer = settled_answer(_done(task, codec.encode(task)), 1)
    assert answer is not None and not isinstance(answer, StoredTaskResponse)
    assert answer.task is not None and [m.message_id for m in answer.task.history] == ["m2"]
    assert len(task.history) == 3  # the fold itself is not cut


def test_without_the_json_the_task_is_encoded_as_usual() -> None:
    task = _settled(2)
    answer = settled_answer(_done(task, None), None)
    assert answer is not None and not isinstance(answer, StoredTaskResponse)
    assert answer.to_dict() == {"task": task.to_dict()}


def test_a_commit_without_a_fold_gives_no_answer() -> None:
    assert settled_answer(None, None) is None
    assert settled_answer(Appended([], 0, TaskState.WORKING), None) is None
