"""The server's history rule (a2a_wire.server._history): checking historyLength, trimming what a
task keeps, and the snapshot an answer shows."""

from __future__ import annotations

import pytest

from a2a_wire.errors import InvalidParamsError
from a2a_wire.server._history import requested_length, view
from a2a_wire.server.store import trim_history
from a2a_wire.types import Artifact, Message, Part, Role, Task, TaskState, TaskStatus


def _msg(n: int) -> Message:
    return Message(message_id=f"m{n}", role=Role.USER, parts=[Part(text=str(n))])


def _task(size: int) -> Task:
    return Task(
        id="t",
        status=TaskStatus(state=TaskState.WORKING),
        history=[_msg(i) for i in range(size)],
        artifacts=[Artifact(artifact_id="a", parts=[Part(text="x")])],
    )


@pytest.mark.parametrize("value", [None, 0, 1, 1000])
def test_requested_length_passes_absent_and_non_negative_values(value: int | None) -> None:
    assert requested_length(value) == value


def test_requested_length_refuses_a_negative_value_on_its_field() -> None:
    with pytest.raises(InvalidParamsError) as caught:
        requested_length(-1, "configuration.historyLength")
    assert str(caught.value) == "configuration.historyLength must not be negative"
    assert caught.value.violations == [("configuration.historyLength", "must be zero or more")]


@pytest.mark.parametrize(
    ("size", "limit", "kept"),
    [
        (5, None, [0, 1, 2, 3, 4]),
        (5, 5, [0, 1, 2, 3, 4]),
        (5, 3, [0, 3, 4]),
        (5, 2, [0, 4]),
        (5, 1, [0]),
        (0, 1, []),
    ],
)
def test_trim_keeps_the_first_and_the_newest(size: int, limit: int | None, kept: list[int]) -> None:
    task = Task(id="t", history=[_msg(i) for i in range(size)])
    before = task.history
    trim_history(task, limit)
    assert [m.message_id for m in task.history] == [f"m{i}" for i in kept]
    assert len(before) == size  # the old list is not mutated


@pytest.mark.parametrize(
    ("length", "kept"), [(None, [0, 1, 2]), (0, []), (2, [1, 2]), (9, [0, 1, 2])]
)
def test_view_cuts_the_history_to_the_requested_length(length: int | None, kept: list[int]) -> None:
    task = _task(3)
    shown = view(task, length)
    assert [m.message_id for m in shown.history] == [f"m{i}" for i in kept]
    assert shown.artifacts == task.artifacts
    assert len(task.history) == 3


def test_view_without_artifacts_leaves_the_key_out() -> None:
    task = _task(2)
    shown = view(task, None, artifacts=False)
    assert "artifacts" not in shown.to_dict()
    assert len(task.artifacts) == 1


def test_view_is_a_snapshot_of_the_task_as_it_was() -> None:
    task = _task(2)
    shown = view(task)
    before = shown.to_dict()
    trim_history(task, 1)
    task.status = TaskStatus(state=TaskState.COMPLETED)
    assert shown.to_dict() == before
