"""Conversations of three turns of the a2a-sdk 1.3.0 client with the a2a-wire server.

The scenario runs in a subprocess (``run_sdk_client_turns.py``); these tests compare, with the
a2a-wire codec, what the SDK's client parsed in each turn with the task our server stored when
the turn ended. The agent (``interop_agents``, scripts ``ask-input`` and ``ask-auth``) asks
twice and completes at the third turn.
"""

from __future__ import annotations

from typing import Any

import pytest
from interop_agents import ASKS
from interop_support import replay, run_scenario, task_of
from interop_table import ASKED, SDK_TURNS, InteropTable

from a2a_wire.types import Role, StreamResponse, Task, TaskState

SECTION = "sdk-client-turns"
SAID = ("Ada", "Lovelace")  # the follow-ups of run_sdk_client_turns.py
conversation = pytest.mark.parametrize("script", list(ASKS))


@pytest.fixture(scope="module")
def cells() -> dict[str, Any]:
    result: dict[str, Any] = run_scenario("run_sdk_client_turns.py")
    return result


def record(table: InteropTable, script: str, index: int, outcome: str) -> None:
    table.record(SECTION, SDK_TURNS[index], outcome, ASKED[script])


def expected_states(script: str) -> list[TaskState]:
    asked, _ = ASKS[script]
    return [asked, asked, TaskState.COMPLETED]


def said_and_asked(stored: Task) -> list[tuple[Role, str]]:
    return [(m.role, m.parts[0].text or "") for m in stored.history]


def check_conversation(script: str, stored: list[Task]) -> None:
    """The turns ``stored`` after each: states, questions, one context, the history, the answer."""
    _, questions = ASKS[script]
    assert [t.status.state for t in stored if t.status] == expected_states(script)
    texts = [t.status.message.parts[0].text for t in stored if t.status and t.status.message]
    assert texts == [*questions, "done"]
    assert len({(t.id, t.context_id) for t in stored}) == 1
    last = stored[-1]
    assert said_and_asked(last) == [
        (Role.USER, script),
        (Role.AGENT, questions[0]),
        (Role.USER, SAID[0]),
        (Role.AGENT, questions[1]),
        (Role.USER, SAID[1]),
        (Role.AGENT, "done"),
    ]
    assert [a.parts[0].text for a in last.artifacts] == [f"hello, {' '.join(SAID)}"]


@conversation
def test_blocking_conversation(
    cells: dict[str, Any], interop_table: InteropTable, script: str
) -> None:
    cell = cells[f"blocking {script}"]
    turns = cell["turns"]
    assert cell["after"] == "UnsupportedOperationError"  # a fourth message, to the completed task
    assert [[next(iter(event)) for event in turn["sdk"]] for turn in turns] == [["task"]] * 3
    parsed = [task_of(turn["sdk"][0]["task"]) for turn in turns]
    stored = [task_of(turn["stored"]) for turn in turns]
    assert parsed == stored
    check_conversation(script, stored)
    record(
        interop_table,
        script,
        0,
        "pass: each turn one Task in the state asked (the question as its status message), "
        "equal to the stored task; one task and context throughout; the answer artifact "
        "names both replies; a fourth message: the SDK raises UnsupportedOperationError (-32004)",
    )


@conversation
def test_streamed_conversation(
    cells: dict[str, Any], interop_table: InteropTable, script: str
) -> None:
    cell = cells[f"streamed {script}"]
    turns = cell["turns"]
    assert cell["after"] == "UnsupportedOperationError"
    asked, _ = ASKS[script]
    kinds = [[next(iter(event)) for event in turn["sdk"]] for turn in turns]
    assert kinds == [
        ["task", "statusUpdate", "statusUpdate"],
        ["task", "statusUpdate", "statusUpdate"],
        ["task", "statusUpdate", "artifactUpdate", "statusUpdate"],
    ]
    stored = [task_of(turn["stored"]) for turn in turns]
    for turn, task in zip(turns, stored, strict=True):
        seen = replay(turn["sdk"])
        assert (seen.task_id, seen.status, seen.artifacts) == (task.id, task.status, task.artifacts)
    openers = [StreamResponse.from_dict(turn["sdk"][0]).task for turn in turns]
    opened = [t.status.state for t in openers if t and t.status]
    assert opened == [TaskState.SUBMITTED, asked, asked]  # a follow-up opens as the task was
    check_conversation(script, stored)
    record(
        interop_table,
        script,
        1,
        "pass: each turn's stream opens with the Task (follow-ups: still in the state asked), "
        "then WORKING and the question, or the artifact and COMPLETED, and ends there; each "
        "replayed equals the stored task; a fourth message: the SDK raises "
        "UnsupportedOperationError (-32004)",
    )


@conversation
def test_a_subscription_follows_the_next_turn(
    cells: dict[str, Any], interop_table: InteropTable, script: str
) -> None:
    cell = cells[f"subscribed {script}"]
    asked, questions = ASKS[script]
    assert [next(iter(event)) for event in cell["sdk"]] == ["task", "statusUpdate", "statusUpdate"]
    seen = replay(cell["sdk"])
    stored = task_of(cell["stored"])
    assert (seen.task_id, seen.status) == (stored.id, stored.status)
    opened = task_of(cell["sdk"][0]["task"])
    assert opened.status is not None and opened.status.state == asked
    assert stored.status is not None and stored.status.state == asked
    assert stored.status.message is not None and stored.status.message.parts[0].text == questions[1]
    assert task_of(cell["answered"]["task"]) == stored  # the blocking answer saw the same turn
    record(
        interop_table,
        script,
        2,
        "pass: the subscription opens with the Task waiting, follows the turn the blocking "
        "answer starts (WORKING, the second question) and ends there; replayed, it equals the "
        "stored task and the blocking call's answer",
    )
