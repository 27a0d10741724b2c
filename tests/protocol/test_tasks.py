"""Tests for the sans-IO task lifecycle (a2a_wire._protocol.tasks): the transition table and apply()."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_wire import codec
from a2a_wire._protocol.states import (
    INTERRUPTED_STATES,
    TERMINAL_STATES,
    is_interrupted,
    is_settled,
    is_terminal,
    state_word,
)
from a2a_wire._protocol.tasks import (
    TRANSITIONS,
    InvalidTransitionError,
    apply,
    new_task,
    with_history,
    without_artifacts,
)
from a2a_wire.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    Timestamp,
)

S = TaskState
T0 = Timestamp(seconds=1_700_000_000, nanos=0)
NOW = Timestamp(seconds=1_700_000_100, nanos=123_000_000)
PAUSED = TaskState("TASK_STATE_PAUSED")  # a state from some newer protocol version
UNKNOWN_NUMBER = TaskState(42)
ALL_STATES = [*TaskState, PAUSED, UNKNOWN_NUMBER]
ACTIVE = [S.SUBMITTED, S.WORKING, S.INPUT_REQUIRED, S.AUTH_REQUIRED]


def msg(
    text: str = "hi",
    *,
    role: Role = Role.USER,
    mid: str = "m1",
    task_id: str = "",
    context_id: str = "",
) -> Message:
    parts = [Part(text=text)]
    return Message(message_id=mid, role=role, parts=parts, task_id=task_id, context_id=context_id)


def task_in(state: TaskState, **kw: object) -> Task:
    return Task(
        id="t1",
        context_id="c1",
        status=TaskStatus(state=state, timestamp=T0),
        history=[msg(task_id="t1", context_id="c1")],
        **kw,  # type: ignore[arg-type]
    )


def status_event(state: TaskState, **kw: object) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        task_id="t1",
        context_id="c1",
        status=TaskStatus(state=state, **kw),  # type: ignore[arg-type]
    )


def artifact_event(
    artifact_id: str, *texts: str, append: bool = False, last_chunk: bool = False, **kw: object
) -> TaskArtifactUpdateEvent:
    artifact = Artifact(artifact_id=artifact_id, parts=[Part(text=t) for t in texts], **kw)  # type: ignore[arg-type]
    return TaskArtifactUpdateEvent(
        task_id="t1", context_id="c1", artifact=artifact, append=append, last_chunk=last_chunk
    )


def texts(artifact: Artifact) -> list[str | None]:
    return [p.text for p in artifact.parts]


# -- The table ---------------------------------------------------------------------------------


def test_table_has_a_row_for_every_declared_state() -> None:
    assert set(TRANSITIONS) == set(TaskState)


def test_terminal_and_interrupted_sets() -> None:
    assert {S.COMPLETED, S.FAILED, S.CANCELED, S.REJECTED} == TERMINAL_STATES
    assert {S.INPUT_REQUIRED, S.AUTH_REQUIRED} == INTERRUPTED_STATES


def test_terminal_states_are_absorbing() -> None:
    for state in TERMINAL_STATES:
        assert TRANSITIONS[state] == frozenset()


@pytest.mark.parametrize("state", ACTIVE)
def test_every_active_state_can_end_cancel_or_wait(state: TaskState) -> None:
    assert TERMINAL_STATES <= TRANSITIONS[state]
    assert INTERRUPTED_STATES | {S.WORKING} <= TRANSITIONS[state]


def test_submitted_unspecified_and_unknown_are_never_targets() -> None:
    targets = set().union(*TRANSITIONS.values())
    assert S.SUBMITTED not in targets
    assert S.UNSPECIFIED not in targets
    assert PAUSED not in targets and UNKNOWN_NUMBER not in targets
    assert TRANSITIONS[S.UNSPECIFIED] == frozenset()


@pytest.mark.parametrize("state", ALL_STATES, ids=str)
def test_predicates(state: TaskState) -> None:
    assert is_terminal(state) == (state in {S.COMPLETED, S.FAILED, S.CANCELED, S.REJECTED})
    assert is_interrupted(state) == (state in {S.INPUT_REQUIRED, S.AUTH_REQUIRED})
    assert is_settled(state) == (is_terminal(state) or is_interrupted(state))


@pytest.mark.parametrize(
    ("state", "word"),
    [
        (S.INPUT_REQUIRED, "input-required"),
        (S.AUTH_REQUIRED, "auth-required"),
        (S.CANCELED, "canceled"),
        (S.UNSPECIFIED, "unspecified"),
        (None, "unknown"),
    ],
    ids=str,
)
def test_messages_name_states_in_the_words_of_the_cli(state: TaskState | None, word: str) -> None:
    assert state_word(state) == word


def test_a_state_this_version_does_not_know_is_named_after_its_value() -> None:
    assert state_word(PAUSED) == "paused"  # a newer version's name, written the same way
    assert state_word(UNKNOWN_NUMBER) == "42"  # a bare number, as it came


def test_unknown_state_is_neither_terminal_nor_interrupted() -> None:
    assert not PAUSED.is_known
    assert not is_terminal(PAUSED) and not is_interrupted(PAUSED) and not is_settled(PAUSED)
    assert not is_terminal(UNKNOWN_NUMBER) and not is_settled(UNKNOWN_NUMBER)


@pytest.mark.parametrize(
    ("current", "target"), list(itertools.product(ALL_STATES, ALL_STATES)), ids=str
)
def test_every_pair(current: TaskState, target: TaskState) -> None:
    task = task_in(current)
    before = codec.encode(task)
    event = status_event(target)
    if target in TRANSITIONS.get(current, frozenset()):
        apply(task, event, now=NOW)
        assert task.status == TaskStatus(state=target, timestamp=NOW)
        assert len(task.history) == 1
    else:
        moving = re.escape(f"{state_word(current)} to {state_word(target)}")
        with pytest.raises(InvalidTransitionError, match=f"^task 't1' cannot move from {moving}$"):
            apply(task, event, now=NOW)
        assert codec.encode(task) == before


# -- Status updates ----------------------------------------------------------------------------


def test_status_message_joins_history_with_the_task_ids() -> None:
    task = task_in(S.WORKING)
    note = msg("thinking", role=Role.AGENT, mid="a1")
    event = status_event(S.WORKING, message=note, timestamp=T0)
    apply(task, event, now=NOW)
    assert task.status is not None and task.status.timestamp == T0  # kept when given
    assert task.history[-1].message_id == "a1"
    assert (task.history[-1].task_id, task.history[-1].context_id) == ("t1", "c1")
    assert task.status.message == task.history[-1]
    assert note.task_id == "" and note.context_id == ""  # the event's message is not mutated


def test_progress_messages_in_the_same_state() -> None:
    task = task_in(S.WORKING)
    for i in range(3):
        apply(task, status_event(S.WORKING, message=msg(f"{i}", mid=f"p{i}")), now=NOW)
    assert [m.message_id for m in task.history] == ["m1", "p0", "p1", "p2"]


def test_status_update_without_status_is_refused() -> None:
    task = task_in(S.WORKING)
    with pytest.raises(InvalidTransitionError, match="^status update without a status$"):
        apply(task, TaskStatusUpdateEvent(task_id="t1", context_id="c1"), now=NOW)


def test_task_without_status_accepts_no_status_update() -> None:
    task = Task(id="t1")
    with pytest.raises(InvalidTransitionError, match=r"from unspecified to working$"):
        apply(task, status_event(S.WORKING), now=NOW)
    assert task.status is None


WORKING = TaskStatus(state=S.WORKING)
ELSEWHERE = [
    (TaskStatusUpdateEvent(task_id="t2", context_id="c1", status=WORKING),
     "^status update for task 't2' applied to task 't1'$"),
    (TaskStatusUpdateEvent(task_id="t1", context_id="c2", status=WORKING),
     "^status update for context 'c2' applied to a task in context 'c1'$"),
    (TaskArtifactUpdateEvent(task_id="t2", artifact=Artifact(artifact_id="a")),
     "^artifact update for task 't2' applied to task 't1'$"),
    (msg(task_id="t2"), "^message for task 't2' applied to task 't1'$"),
    (msg(context_id="c9"), "^message for context 'c9' applied to a task in context 'c1'$"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("event", "message"),
    ELSEWHERE,
    ids=["status-task", "status-context", "artifact-task", "message-task", "message-context"],
)
def test_events_for_another_task_are_refused(
    event: TaskStatusUpdateEvent | TaskArtifactUpdateEvent | Message, message: str
) -> None:
    task = task_in(S.WORKING)
    before = codec.encode(task)
    with pytest.raises(InvalidTransitionError, match=message):
        apply(task, event, now=NOW)
    assert codec.encode(task) == before


def test_events_with_empty_ids_belong_to_the_task() -> None:
    task = task_in(S.WORKING)
    apply(task, TaskStatusUpdateEvent(status=TaskStatus(state=S.COMPLETED)), now=NOW)
    assert task.status is not None and task.status.state == S.COMPLETED


# -- Artifacts ---------------------------------------------------------------------------------


def test_artifact_added_then_replaced_in_place() -> None:
    task = task_in(S.WORKING)
    apply(task, artifact_event("a", "one"), now=NOW)
    apply(task, artifact_event("b", "two"), now=NOW)
    apply(task, artifact_event("a", "uno"), now=NOW)
    assert [a.artifact_id for a in task.artifacts] == ["a", "b"]
    assert texts(task.artifacts[0]) == ["uno"]


def test_append_extends_parts_and_takes_new_fields() -> None:
    task = task_in(S.WORKING)
    apply(task, artifact_event("a", "x", name="draft", description="d"), now=NOW)
    apply(task, artifact_event("a", "y", append=True), now=NOW)
    apply(task, artifact_event("a", "z", append=True, last_chunk=True, name="final"), now=NOW)
    (artifact,) = task.artifacts
    assert texts(artifact) == ["x", "y", "z"]
    assert (artifact.name, artifact.description) == ("final", "d")


def test_append_does_not_mutate_earlier_objects() -> None:
    task = task_in(S.WORKING)
    first = artifact_event("a", "x")
    apply(task, first, now=NOW)
    snapshot = with_history(task, None)
    apply(task, artifact_event("a", "y", append=True), now=NOW)
    assert first.artifact is not None and texts(first.artifact) == ["x"]
    assert texts(snapshot.artifacts[0]) == ["x"]


def test_append_to_a_missing_artifact_starts_it() -> None:
    task = task_in(S.WORKING)
    apply(task, artifact_event("a", "x"), now=NOW)
    apply(task, artifact_event("b", "y", append=True), now=NOW)
    apply(task, artifact_event("b", "z", append=True, last_chunk=True), now=NOW)
    assert [a.artifact_id for a in task.artifacts] == ["a", "b"]
    assert texts(task.artifacts[1]) == ["y", "z"]


def test_last_chunk_is_a_hint_only() -> None:
    with_flag, without_flag = task_in(S.WORKING), task_in(S.WORKING)
    apply(with_flag, artifact_event("a", "x", last_chunk=True), now=NOW)
    apply(without_flag, artifact_event("a", "x"), now=NOW)
    assert with_flag == without_flag
    apply(with_flag, artifact_event("a", "y", append=True), now=NOW)
    assert texts(with_flag.artifacts[0]) == ["x", "y"]


@pytest.mark.parametrize(
    "event",
    [
        TaskArtifactUpdateEvent(task_id="t1"),
        TaskArtifactUpdateEvent(task_id="t1", artifact=Artifact(parts=[Part(text="x")])),
    ],
    ids=["no-artifact", "no-artifact-id"],
)
def test_artifact_update_needs_an_identified_artifact(event: TaskArtifactUpdateEvent) -> None:
    task = task_in(S.WORKING)
    with pytest.raises(
        InvalidTransitionError, match="^artifact update without an artifact or an artifactId$"
    ):
        apply(task, event, now=NOW)
    assert task.artifacts == []


@pytest.mark.parametrize(
    ("state", "word"),
    [
        (S.COMPLETED, "completed"),
        (S.FAILED, "failed"),
        (S.CANCELED, "canceled"),
        (S.REJECTED, "rejected"),
    ],
    ids=str,
)
def test_nothing_is_added_after_a_terminal_state(state: TaskState, word: str) -> None:
    assert state in TERMINAL_STATES
    task = task_in(state)
    before = codec.encode(task)
    for event, added in (
        (artifact_event("a", "x"), "an artifact"),
        (msg("late", mid="m2"), "a message"),
    ):
        with pytest.raises(
            InvalidTransitionError, match=re.escape(f"is {word}; cannot add {added}")
        ):
            apply(task, event, now=NOW)
    assert codec.encode(task) == before


@pytest.mark.parametrize("state", [PAUSED, *sorted(INTERRUPTED_STATES, key=str)], ids=str)
def test_artifacts_and_messages_allowed_in_non_terminal_states(state: TaskState) -> None:
    task = task_in(state)
    apply(task, artifact_event("a", "x"), now=NOW)
    apply(task, msg("more", mid="m2"), now=NOW)
    assert len(task.artifacts) == 1 and len(task.history) == 2
    assert task.status is not None and task.status.state == state


# -- Messages and history ----------------------------------------------------------------------


def test_messages_are_appended_with_ids_filled_in() -> None:
    task = task_in(S.INPUT_REQUIRED)
    follow_up = msg("answer", mid="m2")
    apply(task, follow_up, now=NOW)
    assert [m.message_id for m in task.history] == ["m1", "m2"]
    assert (task.history[-1].task_id, task.history[-1].context_id) == ("t1", "c1")
    assert follow_up.task_id == ""
    bound = msg("again", mid="m3", task_id="t1", context_id="c1")
    apply(task, bound, now=NOW)
    assert task.history[-1] is bound


def test_new_task() -> None:
    first = msg("hello")
    task = new_task(first, task_id="t9", context_id="c9", now=NOW)
    assert task.id == "t9" and task.context_id == "c9"
    assert task.status == TaskStatus(state=S.SUBMITTED, timestamp=NOW)
    assert [(m.message_id, m.task_id, m.context_id) for m in task.history] == [("m1", "t9", "c9")]
    assert first.task_id == "" and first.context_id == ""
    assert task.artifacts == [] and task.missing_fields() == []


def history_task(n: int) -> Task:
    task = task_in(S.WORKING)
    task.history = [msg(str(i), mid=f"m{i}") for i in range(n)]
    return task


@pytest.mark.parametrize(
    ("length", "expected"),
    [(None, 5), (0, 0), (1, 1), (3, 3), (5, 5), (6, 5), (1000, 5)],
)
def test_with_history(length: int | None, expected: int) -> None:
    task = history_task(5)
    before = codec.encode(task)
    view = with_history(task, length)
    assert [m.message_id for m in view.history] == [f"m{i}" for i in range(5 - expected, 5)]
    assert codec.encode(task) == before
    assert view.status == task.status and view.id == task.id
    assert ("history" in view.to_dict()) == (expected > 0)


def test_with_history_copy_is_independent() -> None:
    task = history_task(2)
    view = with_history(task, None)
    view.history.append(msg("x", mid="x"))
    assert len(task.history) == 2


def test_negative_history_length_is_a_bug() -> None:
    with pytest.raises(ValueError, match="^history_length must not be negative$"):
        with_history(history_task(1), -1)


def test_without_artifacts() -> None:
    task = task_in(S.WORKING)
    apply(task, artifact_event("a", "x"), now=NOW)
    view = without_artifacts(task)
    assert "artifacts" not in view.to_dict()
    assert len(task.artifacts) == 1 and view.history == task.history


# -- Property: any sequence of events --------------------------------------------------------

states = st.sampled_from(ALL_STATES)
events = st.one_of(
    st.builds(lambda s: status_event(s), states),
    st.builds(
        lambda s, mid: status_event(s, message=msg("note", role=Role.AGENT, mid=mid)),
        states,
        st.text(max_size=3),
    ),
    st.builds(
        lambda aid, append, last: artifact_event(aid, "p", append=append, last_chunk=last),
        st.sampled_from(["a", "b", ""]),
        st.booleans(),
        st.booleans(),
    ),
    st.builds(
        lambda tid, mid: msg("m", mid=mid, task_id=tid),
        st.sampled_from(["", "t1", "t2"]),
        st.text(max_size=3),
    ),
)


def history_growth(event: TaskStatusUpdateEvent | TaskArtifactUpdateEvent | Message) -> int:
    if isinstance(event, TaskArtifactUpdateEvent):
        return 0
    if isinstance(event, TaskStatusUpdateEvent):
        return int(event.status is not None and event.status.message is not None)
    return 1


@given(start=st.sampled_from(ACTIVE + [PAUSED]), sequence=st.lists(events, max_size=12))
def test_any_event_sequence_keeps_the_rules(
    start: TaskState, sequence: list[TaskStatusUpdateEvent | TaskArtifactUpdateEvent | Message]
) -> None:
    task = task_in(start)
    for event in sequence:
        before = codec.encode(task)
        snapshot = with_history(task, None)
        state = task.status.state if task.status is not None else S.UNSPECIFIED
        try:
            apply(task, event, now=NOW)
        except InvalidTransitionError:
            assert codec.encode(task) == before
            continue
        assert codec.encode(snapshot) == before  # apply never mutates shared objects
        assert not is_terminal(state)
        assert task.status is not None
        if isinstance(event, TaskStatusUpdateEvent):
            assert event.status is not None
            assert task.status.state == event.status.state
            assert task.status.state in TRANSITIONS.get(state, frozenset())
        else:
            assert task.status.state == state
        assert len(task.history) - len(snapshot.history) == history_growth(event)
        assert all(m.task_id == "t1" and m.context_id == "c1" for m in task.history)
