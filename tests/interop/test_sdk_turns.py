"""Conversations of three turns with an a2a-sdk 1.3.0 server, from the client and the CLI.

The scenario runs in a subprocess (``run_sdk_turns.py``); these tests check what the a2a-wire
client, ``a2a-wire send`` and ``a2a-wire send --stream`` saw of each turn against the task the
SDK stored. Two conversations: the agent asks for input then for a sign-in, or for a sign-in
twice (AUTH_REQUIRED as the first turn), then completes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from interop_support import run_scenario, task_of
from interop_table import ASKED, TURNS, InteropTable

from a2a_wire.types import StreamResponse, Task, TaskState

SECTION = "sdk-turns"
SIGN_IN = "Please sign in to go on."
WORKING = "TASK_STATE_WORKING"


@dataclass(frozen=True)
class Expected:
    """What the SDK's agent says in one conversation (independently of ``run_sdk_turns.py``)."""

    states: tuple[str, ...]
    asked: tuple[str, ...]

    @property
    def codes(self) -> list[int]:
        """The exit codes of ``a2a-wire send``: 8 needs input, 9 needs authentication."""
        by_state = {"TASK_STATE_INPUT_REQUIRED": 8, "TASK_STATE_AUTH_REQUIRED": 9}
        return [by_state.get(state, 0) for state in self.states]


CONVERSATIONS = {
    "input-first": Expected(
        ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED", "TASK_STATE_COMPLETED"),
        ("What is your name?", SIGN_IN, "done"),
    ),
    "auth-first": Expected(
        ("TASK_STATE_AUTH_REQUIRED", "TASK_STATE_AUTH_REQUIRED", "TASK_STATE_COMPLETED"),
        (SIGN_IN, "That sign-in has expired; please sign in again.", "done"),
    ),
}
NEEDS = {
    "TASK_STATE_INPUT_REQUIRED": ("input-required", "the agent needs input"),
    "TASK_STATE_AUTH_REQUIRED": ("auth-required", "the agent needs authentication"),
}


@pytest.fixture(scope="module", params=list(CONVERSATIONS))
def held(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    """One conversation's name and what its scenario wrote (one subprocess per conversation)."""
    name: str = request.param
    # Eight CLI runs among the calls: more than the default 60 s, within pytest's 120 s.
    return name, run_scenario("run_sdk_turns.py", name, timeout=100)


def record(table: InteropTable, name: str, index: int, outcome: str) -> None:
    table.record(SECTION, TURNS[index], outcome, ASKED[name])


def completed(stored: Task) -> None:
    assert stored.status is not None and stored.status.state == TaskState.COMPLETED
    assert [a.parts[0].text for a in stored.artifacts] == ["hello, Ada"]


def test_blocking_follow_ups_through_the_client(
    held: tuple[str, dict[str, Any]], interop_table: InteropTable
) -> None:
    name, cells = held
    cell, expected = cells["blocking"], CONVERSATIONS[name]
    assert cell["states"] == list(expected.states)
    assert cell["asked"] == list(expected.asked)
    assert cell["after"] == "UnsupportedOperationError"  # a fourth message, to the completed task
    completed(task_of(cell["stored"]))
    record(
        interop_table,
        name,
        0,
        "pass: each turn's Task in the state asked, with the agent's question; the stored task "
        "COMPLETED; a fourth message: our client raises UnsupportedOperationError (-32004)",
    )


def test_streamed_follow_ups_through_the_client(
    held: tuple[str, dict[str, Any]], interop_table: InteropTable
) -> None:
    name, cells = held
    cell, expected = cells["streamed"], CONVERSATIONS[name]
    turns = cell["turns"]
    kinds = [[next(iter(event)) for event in turn["events"]] for turn in turns]
    assert kinds == [
        ["task", "statusUpdate"],
        ["statusUpdate", "statusUpdate"],  # no Task first: the SDK's follow-up turn
        ["statusUpdate", "artifactUpdate", "statusUpdate"],
    ]
    assert [(t["state"], t["finished"]) for t in turns] == [(s, True) for s in expected.states]
    asked = [StreamResponse.from_dict(t["events"][-1]).status_update for t in turns]
    assert [
        u.status.message.parts[0].text for u in asked if u and u.status and u.status.message
    ] == (list(expected.asked))
    assert [t["warnings"] for t in turns] == [0, 1, 1]  # one warning per stream that needs one
    assert cell["after"] == "UnsupportedOperationError"
    last = [StreamResponse.from_dict(e) for e in turns[2]["events"]]
    assert {e.status_update.task_id for e in last if e.status_update} == {cell["task_id"]}
    stored = task_of(cell["stored"])
    completed(stored)
    assert task_of(cell["fetched"]) == stored  # GetTask gives the task whole afterwards
    assert last[-1].status_update is not None and last[-1].status_update.status == stored.status
    record(
        interop_table,
        name,
        1,
        "pass: turn 1 Task then the question; turns 2 and 3 begin with a status update of the "
        "task (read with one warning each): the second question, then artifact and COMPLETED; "
        "GetTask afterwards equals the stored task; a fourth message: our client raises "
        "UnsupportedOperationError (-32004)",
    )


def _state(event: StreamResponse) -> str:
    """The state a Task or status update event reports."""
    found = event.task or event.status_update
    assert found is not None and found.status is not None
    return found.status.state.value


def _check_cli_turns(cell: dict[str, Any], expected: Expected) -> None:
    runs = cell["runs"]
    assert [run["code"] for run in runs] == expected.codes, [r["err"] for r in runs]
    ended = json.loads(runs[0]["err"].splitlines()[-1])["turnEnded"]
    assert (ended["taskId"], ended["state"]) == (cell["task_id"], expected.states[0])
    assert ended["question"] == expected.asked[0]
    assert expected.asked[0] in runs[0]["out"]
    second = runs[1]
    _, what = NEEDS[expected.states[1]]
    assert f"{what}: {expected.asked[1]}" in second["err"].splitlines()
    assert second["err"].rstrip().endswith(f"--task-id {cell['task_id']}")
    assert "done" in runs[2]["out"] and "hello, Ada" in runs[2]["out"]
    completed(task_of(cell["stored"]))


def test_blocking_follow_ups_through_the_cli(
    held: tuple[str, dict[str, Any]], interop_table: InteropTable
) -> None:
    name, cells = held
    cell, expected = cells["cli blocking"], CONVERSATIONS[name]
    _check_cli_turns(cell, expected)
    shown, _ = NEEDS[expected.states[1]]
    assert f"state    {shown}" in cell["runs"][1]["out"]
    assert "state    completed" in cell["runs"][2]["out"]
    assert all(run["err"] == "" for run in cell["runs"][2:])
    record(
        interop_table,
        name,
        2,
        f"pass: each turn's task printed; exit {', '.join(map(str, expected.codes))}; the "
        "question and the `--task-id` answer on stderr",
    )


def test_streamed_follow_ups_through_the_cli(
    held: tuple[str, dict[str, Any]], interop_table: InteropTable
) -> None:
    name, cells = held
    cell, expected = cells["cli"], CONVERSATIONS[name]
    _check_cli_turns(cell, expected)
    second, third = cell["runs"][1:]
    shown, _ = NEEDS[expected.states[1]]
    assert f"{shown} {expected.asked[1]}" in second["out"]
    assert "completed done" in third["out"]
    for run in (second, third):
        assert run["err"].count("not the Task (spec 3.1.2)") == 1
        assert "InvalidAgentResponseError" not in run["err"]
    record(
        interop_table,
        name,
        3,
        f"pass: each turn's events printed; exit {', '.join(map(str, expected.codes))}; the "
        "question and the `--task-id` answer on stderr; the streams that begin with an update "
        "are read, with one warning line on stderr",
    )


def test_subscribe_between_turns(
    held: tuple[str, dict[str, Any]], interop_table: InteropTable
) -> None:
    name, cells = held
    cell, expected = cells["cli"], CONVERSATIONS[name]
    turn, follow = cell["turn"], cell["follow"]
    assert turn["code"] == expected.codes[0], turn["err"]
    [shown] = [json.loads(line) for line in turn["out"].splitlines()]
    assert shown["task"]["status"]["state"] == expected.states[0]
    ended = json.loads(turn["err"].splitlines()[-1])["turnEnded"]
    assert (ended["taskId"], ended["question"]) == (cell["task_id"], expected.asked[0])
    assert follow["code"] == 0, follow["err"]
    lines = follow["out"].splitlines()
    events = [StreamResponse.from_dict(json.loads(line)) for line in lines]
    states = [_state(e) for e in events if e.artifact_update is None]
    first, second, last = expected.states
    assert states == [first, WORKING, second, WORKING, last]
    assert [e.which_payload() for e in events].count("artifact_update") == 1
    # Following on, it says at each question that it reads on, and never ends the turn.
    notes = [json.loads(line)["turnEnded"] for line in follow["err"].splitlines() if line]
    assert [note["following"] for note in notes] == [True, True], follow["err"]
    record(
        interop_table,
        name,
        4,
        f"pass: after the first question `subscribe --turn` prints the Task and exits "
        f"{expected.codes[0]}; `subscribe` started there follows the next two turns on the "
        "stream the SDK server keeps open, and exits 0 at COMPLETED",
    )
