"""Human-readable output of the CLI: safe text, task views built from stream events."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_wire.cli._output import (
    Printer,
    clean,
    count,
    event_line,
    progress_line,
    state_name,
)
from a2a_wire.cli._view import TaskView
from a2a_wire.types import (
    Artifact,
    ListTasksResponse,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)


@given(st.text())
def test_clean_leaves_no_control_character(text: str) -> None:
    out = clean(text)
    assert all(ch in "\n\t" or not (ord(ch) < 32 or 0x7F <= ord(ch) <= 0x9F) for ch in out)
    assert clean(out) == out


def test_clean_keeps_text() -> None:
    assert clean("a\x1b[31mred\x07\nnext\tcol\x9b") == "a[31mred\nnext\tcol"


def test_state_names() -> None:
    assert state_name(TaskState.INPUT_REQUIRED) == "input-required"
    assert state_name(TaskState.COMPLETED) == "completed"
    assert state_name(None) == "unknown"


def _chunk(text: str, *, append: bool, artifact_id: str = "a1") -> StreamResponse:
    artifact = Artifact(artifact_id=artifact_id, name="echo", parts=[Part(text=text)])
    update = TaskArtifactUpdateEvent(task_id="t", context_id="c", artifact=artifact, append=append)
    return StreamResponse(artifact_update=update)


def _status(state: TaskState, text: str = "") -> StreamResponse:
    note = Message(message_id="m", role=Role.AGENT, parts=[Part(text=text)]) if text else None
    status = TaskStatus(state=state, message=note)
    return StreamResponse(
        status_update=TaskStatusUpdateEvent(task_id="t", context_id="c", status=status)
    )


def test_task_view_assembles_chunks_and_takes_snapshots() -> None:
    view = TaskView()
    view.apply(
        StreamResponse(
            task=Task(id="t", context_id="c", status=TaskStatus(state=TaskState.SUBMITTED))
        )
    )
    view.apply(_status(TaskState.WORKING, "busy"))
    view.apply(_chunk("hel", append=False))
    view.apply(_chunk("lo", append=True))
    view.apply(_chunk("other", append=False, artifact_id="a2"))
    assert view.state == TaskState.WORKING and view.events == 5
    assert view.task is not None
    assert [[p.text for p in a.parts] for a in view.task.artifacts] == [["hel", "lo"], ["other"]]
    view.apply(_chunk("HEL", append=False))  # a replacement of a1
    assert [p.text for p in view.task.artifacts[0].parts] == ["HEL"]
    fresh = Task(id="t", context_id="c", status=TaskStatus(state=TaskState.COMPLETED))
    view.apply(StreamResponse(task=fresh))  # a re-subscription's snapshot replaces everything
    assert view.state == TaskState.COMPLETED and view.task.artifacts == []


def test_event_lines() -> None:
    assert event_line(_status(TaskState.WORKING, "busy")).plain == "working   busy"
    assert event_line(_chunk("hel", append=False)).plain == "artifact  echo = hel"
    assert event_line(_chunk("lo", append=True)).plain == "artifact  echo += lo"
    reply = Message(message_id="m", role=Role.AGENT, parts=[Part(text="hi"), Part(data={"k": 1})])
    assert event_line(StreamResponse(message=reply)).plain == 'message   hi {"k":1}'


def test_printer_shows_agent_text_literally(capsys: pytest.CaptureFixture[str]) -> None:
    artifact = Artifact(
        artifact_id="a",
        name="out",
        parts=[
            Part(text="[bold]not markup[/bold] \x1b[2J"),
            Part(text=" and more"),
            Part(data={"nested": [1, 2]}),
            Part(raw=b"\x00\x01", filename="blob.bin", media_type="application/octet-stream"),
        ],
    )
    task = Task(
        id="t-1", context_id="c-1", status=TaskStatus(state=TaskState.FAILED), artifacts=[artifact]
    )
    Printer(json_output=False).task(task)
    out = capsys.readouterr().out
    assert "[bold]not markup[/bold] [2J and more" in out  # chunks joined, escape removed
    assert "\x1b" not in out
    assert '"nested": [' in out
    assert "[file] blob.bin (application/octet-stream, 2 bytes)" in out
    assert "failed" in out


def test_printer_json_is_protojson_lines(capsys: pytest.CaptureFixture[str]) -> None:
    printer = Printer(json_output=True)
    printer.task(Task(id="t", context_id="c", status=TaskStatus(state=TaskState.WORKING)))
    printer.event(_chunk("x", append=True))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == '{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}'
    assert lines[1].startswith('{"artifactUpdate":{"taskId":"t"')


def test_counts_and_the_progress_line() -> None:
    assert (count(0, "task"), count(1, "task"), count(2, "config")) == (
        "0 tasks",
        "1 task",
        "2 configs",
    )
    view = TaskView()
    assert progress_line(view, 0.3) == "waiting for the agent · 0.3s"  # no "unknown · 0 events"
    view.apply(
        StreamResponse(
            task=Task(id="t", context_id="c", status=TaskStatus(state=TaskState.WORKING))
        )
    )
    assert progress_line(view, 1.0) == "working · 1 event · 1.0s"
    view.apply(_chunk("x", append=False))
    assert progress_line(view, 2.0) == "working · 2 events · 2.0s"
    reply = TaskView()
    reply.apply(
        StreamResponse(message=Message(message_id="m", role=Role.AGENT, parts=[Part(text="hi")]))
    )
    assert progress_line(reply, 0.5) == "answered · 1 event · 0.5s"


def test_task_list_summary(capsys: pytest.CaptureFixture[str]) -> None:
    printer = Printer(json_output=False)
    printer.task_list(ListTasksResponse(tasks=[], next_page_token="", page_size=50, total_size=0))
    assert capsys.readouterr().out == "no tasks\n"
    one = Task(id="t-1", context_id="c-1", status=TaskStatus(state=TaskState.COMPLETED))
    printer.task_list(
        ListTasksResponse(tasks=[one], next_page_token="", page_size=50, total_size=1)
    )
    out = capsys.readouterr().out
    assert "t-1" in out and out.endswith("1 of 1 task\n")


@pytest.mark.parametrize(
    ("state", "line"),
    [
        (TaskState.INPUT_REQUIRED, "input-required Which city?"),
        (TaskState.AUTH_REQUIRED, "auth-required Which city?"),
        (TaskState.WORKING, "working   Which city?"),
        (TaskState.COMPLETED, "completed Which city?"),
    ],
)
def test_a_status_line_keeps_its_state_apart_from_its_message(state: TaskState, line: str) -> None:
    assert event_line(_status(state, "Which city?")).plain == line


def test_a_status_line_without_a_message_ends_with_the_state() -> None:
    assert event_line(_status(TaskState.COMPLETED)).plain == "completed"


def test_a_task_line_ends_with_its_status_message() -> None:
    note = Message(message_id="m", role=Role.AGENT, parts=[Part(text="Which city?")])
    status = TaskStatus(state=TaskState.INPUT_REQUIRED, message=note)
    line = event_line(StreamResponse(task=Task(id="t", context_id="c", status=status)))
    assert line.plain == "task      t  context c  input-required Which city?"
    status = TaskStatus(state=TaskState.WORKING)
    line = event_line(StreamResponse(task=Task(id="t", context_id="c", status=status)))
    assert line.plain == "task      t  context c  working"


def test_a_task_pads_no_field_to_the_longest(capsys: pytest.CaptureFixture[str]) -> None:
    long = "a status message much longer than any id or state in this task, " * 2
    note = Message(message_id="m", role=Role.AGENT, parts=[Part(text=long + "\nand a second line")])
    status = TaskStatus(state=TaskState.INPUT_REQUIRED, message=note)
    Printer(json_output=False).task(Task(id="t-1", context_id="c-1", status=status))
    assert capsys.readouterr().out.splitlines() == [
        "task     t-1",
        "context  c-1",
        "state    input-required",
        f"status   {long}",
        "         and a second line",
    ]


def test_errors_name_states_as_the_cli_does(capsys: pytest.CaptureFixture[str]) -> None:
    from a2a_wire.cli._common import print_error
    from a2a_wire.errors import TaskNotCancelableError

    error = TaskNotCancelableError("Task t-1 is TASK_STATE_CANCELED and cannot be canceled")
    print_error(error, json_output=False)
    assert capsys.readouterr().err.splitlines() == [
        "error: TaskNotCancelableError (-32002): Task t-1 is canceled and cannot be canceled"
    ]
    print_error(error, json_output=True)  # the machine-readable form keeps the agent's words
    assert "TASK_STATE_CANCELED" in capsys.readouterr().err
