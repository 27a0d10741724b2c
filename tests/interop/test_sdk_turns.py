"""Conversations of three turns with an a2a-sdk 1.3.0 server, from the client and the CLI.

The scenario runs in a subprocess (``run_sdk_turns.py``); these tests check what the a2a-wire
client and ``a2a-wire send --stream`` saw of each turn against the task the SDK stored.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from interop_support import run_scenario, task_of
from interop_table import TURNS, InteropTable

from a2a_wire.types import StreamResponse, Task, TaskState

SECTION = "sdk-turns"
ASKED = ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED", "TASK_STATE_COMPLETED"]


@pytest.fixture(scope="module")
def cells() -> dict[str, Any]:
    result: dict[str, Any] = run_scenario("run_sdk_turns.py")
    return result


def record(table: InteropTable, index: int, outcome: str) -> None:
    table.record(SECTION, TURNS[index], outcome)


def completed(stored: Task) -> None:
    assert stored.status is not None and stored.status.state == TaskState.COMPLETED
    assert [a.parts[0].text for a in stored.artifacts] == ["hello, Ada"]


def test_blocking_follow_ups_through_the_client(
    cells: dict[str, Any], interop_table: InteropTable
) -> None:
    cell = cells["blocking"]
    assert cell["states"] == ASKED
    completed(task_of(cell["stored"]))
    record(interop_table, 0, "pass: each turn's Task in the state asked; the stored task COMPLETED")


def test_streamed_follow_ups_through_the_client(
    cells: dict[str, Any], interop_table: InteropTable
) -> None:
    cell = cells["streamed"]
    turns = cell["turns"]
    kinds = [[next(iter(event)) for event in turn["events"]] for turn in turns]
    assert kinds == [
        ["task", "statusUpdate"],
        ["statusUpdate", "statusUpdate"],  # no Task first: the SDK's follow-up turn
        ["statusUpdate", "artifactUpdate", "statusUpdate"],
    ]
    assert [(t["state"], t["finished"]) for t in turns] == [(s, True) for s in ASKED]
    assert [t["warnings"] for t in turns] == [0, 1, 1]  # one warning per stream that needs one
    last = [StreamResponse.from_dict(e) for e in turns[2]["events"]]
    assert {e.status_update.task_id for e in last if e.status_update} == {cell["task_id"]}
    stored = task_of(cell["stored"])
    completed(stored)
    assert task_of(cell["fetched"]) == stored  # GetTask gives the task whole afterwards
    assert last[-1].status_update is not None and last[-1].status_update.status == stored.status
    record(
        interop_table,
        1,
        "pass: turn 1 Task then INPUT_REQUIRED; turns 2 and 3 begin with a status update of the "
        "task (read with one warning each): AUTH_REQUIRED, then artifact and COMPLETED; GetTask "
        "afterwards equals the stored task",
    )


def test_follow_ups_through_the_cli(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["cli"]
    first, second, third = cell["runs"]
    assert [run["code"] for run in cell["runs"]] == [8, 9, 0], [r["err"] for r in cell["runs"]]
    assert "What is your name?" in first["out"]
    ended = json.loads(first["err"].splitlines()[-1])["turnEnded"]
    assert (ended["taskId"], ended["question"]) == (cell["task_id"], "What is your name?")
    assert "auth-required Please sign in to go on." in second["out"]
    assert "the agent needs authentication: Please sign in to go on." in second["err"]
    assert f"--task-id {cell['task_id']}" in second["err"]
    assert "completed done" in third["out"] and "hello, Ada" in third["out"]
    for run in (second, third):
        assert run["err"].count("not the Task (spec 3.1.2)") == 1
        assert "InvalidAgentResponseError" not in run["err"]
    completed(task_of(cell["stored"]))
    record(
        interop_table,
        2,
        "pass: each turn printed; exit 8 (needs input), 9 (needs authentication), 0, the "
        "question and the `--task-id` answer on stderr; the streams that begin with an update "
        "are read, with one warning line on stderr",
    )
