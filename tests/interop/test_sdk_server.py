"""The a2a-wire client against the a2a-sdk 1.3.0 server: what we parse equals what the SDK stored.

The scenario runs in a subprocess (``run_sdk_server.py``); these tests compare, with the a2a-wire
codec, each result our client parsed with what the SDK's task and push-config stores hold.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from interop_support import replay, run_scenario, task_of, trimmed, without_artifacts
from interop_table import OPERATIONS, SDK, InteropTable

from a2a_wire.types import (
    AgentCard,
    ListTaskPushNotificationConfigsResponse,
    ListTasksResponse,
    SendMessageResponse,
    TaskPushNotificationConfig,
    TaskState,
)

SECTION = "sdk-server"


@pytest.fixture(scope="module")
def cells() -> dict[str, Any]:
    result: dict[str, Any] = run_scenario("run_sdk_server.py")
    return result


def record(table: InteropTable, index: int, outcome: str) -> None:
    table.record(SECTION, OPERATIONS[index], outcome)


def test_card_is_read_and_its_interface_chosen(
    cells: dict[str, Any], interop_table: InteropTable
) -> None:
    card = cells["card"]
    assert AgentCard.from_dict(card["ours"]) == AgentCard.from_dict(card["served"])
    assert card["url"] == card["served"]["supportedInterfaces"][0]["url"]
    record(interop_table, 0, "pass: the parsed card equals the served card; JSONRPC 1.0 chosen")


def test_send_blocking(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["send_blocking"]
    parsed = SendMessageResponse.from_dict(cell["ours"]).task
    assert parsed is not None and parsed == task_of(cell["stored"])
    assert parsed.status is not None and parsed.status.state == TaskState.COMPLETED
    record(interop_table, 1, "pass: COMPLETED Task, equal to the stored task")


def test_send_return_immediately(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["send_return_immediately"]
    parsed = SendMessageResponse.from_dict(cell["ours"]).task
    assert parsed is not None and parsed == task_of(cell["stored"])
    assert parsed.status is not None and parsed.status.state == TaskState.SUBMITTED
    record(
        interop_table,
        2,
        "pass: SUBMITTED Task (the SDK answers at the agent's first event), equal to the stored "
        "task",
    )


def test_send_answered_with_message(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["send_message_reply"]
    reply = SendMessageResponse.from_dict(cell["ours"]).message
    assert reply is not None and reply.parts[0].text == "reply to reply"
    assert cell["tasks_created"] == 0
    record(interop_table, 3, "pass: one agent Message; no task stored")


def test_send_streaming(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["send_streaming"]
    stored = task_of(cell["stored"])
    seen = replay(cell["ours"])
    expected_kinds = ["task", "statusUpdate", "artifactUpdate", "artifactUpdate", "statusUpdate"]
    assert seen.kinds == expected_kinds
    assert (seen.task_id, seen.status, seen.artifacts) == (
        stored.id,
        stored.status,
        stored.artifacts,
    )
    record(
        interop_table,
        4,
        "pass: task, WORKING, two artifact chunks, COMPLETED; replayed state equals the stored task",
    )


def test_get_task_history_lengths(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["get_task_history"]
    stored = task_of(cell["stored"])
    assert len(stored.history) == 3
    for key, view in cell["ours"].items():
        length = None if key == "None" else int(key)
        assert task_of(view) == trimmed(stored, length), key
    # What the SDK gives a follow-up that names only the task (spec 3.4.3 infers the context):
    follow_up = stored.history[2]
    follow_up_context = follow_up.context_id
    assert follow_up.task_id == stored.id and follow_up_context != stored.context_id
    record(
        interop_table,
        5,
        "pass: each equals the stored task with its last N messages. Seen: a follow-up naming "
        "only taskId gets a fresh contextId in the SDK (its history and status message carry "
        "it; spec 3.4.3 takes the task's)",
    )


def test_list_tasks_paging(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["list_tasks_paging"]
    stored = [task_of(t) for t in cell["stored"]]
    pages = [ListTasksResponse.from_dict(p) for p in cell["ours"]]
    assert [len(p.tasks) for p in pages] == [2, 2, 1]
    assert all(p.page_size == 2 and p.total_size == 5 for p in pages)
    assert [bool(p.next_page_token) for p in pages] == [True, True, False]
    assert [t for p in pages for t in p.tasks] == [without_artifacts(t) for t in stored]
    full = ListTasksResponse.from_dict(cell["ours_with_artifacts"])
    assert full.tasks == [trimmed(t, 1) for t in stored]
    record(
        interop_table,
        6,
        "pass: pages of 2, 2, 1 in stored order, without artifacts; with includeArtifacts equal "
        "to the stored tasks",
    )


def test_cancel_task(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["cancel_task"]
    parsed = task_of(cell["ours"])
    assert parsed == task_of(cell["stored"])
    assert parsed.status is not None and parsed.status.state == TaskState.CANCELED
    assert cell["cancel_again"] == "TaskNotCancelableError"
    record(
        interop_table,
        7,
        "pass: CANCELED Task equal to the stored task; again: our client raises "
        "TaskNotCancelableError (-32002)",
    )


def test_subscribe_to_task(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["subscribe_to_task"]
    stored = task_of(cell["stored"])
    seen = replay(cell["ours"])
    assert seen.kinds == ["task", "artifactUpdate", "statusUpdate"]
    first = task_of(cell["ours"][0]["task"])
    assert first.status is not None and first.status.state == TaskState.WORKING
    assert (seen.task_id, seen.status, seen.artifacts) == (
        stored.id,
        stored.status,
        stored.artifacts,
    )
    record(
        interop_table,
        8,
        "pass: WORKING snapshot, artifact, COMPLETED; replayed state equals the stored task",
    )


def test_unknown_task_error(cells: dict[str, Any], interop_table: InteropTable) -> None:
    assert cells["error_task_not_found"]["ours"] == "TaskNotFoundError"
    record(interop_table, 9, "pass: our client raises TaskNotFoundError (-32001)")


def test_push_config_methods(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["push_configs"]
    created = TaskPushNotificationConfig.from_dict(cell["ours"]["created"])
    [stored] = [TaskPushNotificationConfig.from_dict(c) for c in cell["stored"]]
    assert created == stored
    assert TaskPushNotificationConfig.from_dict(cell["ours"]["got"]) == stored
    listed = ListTaskPushNotificationConfigsResponse.from_dict(cell["ours"]["listed"])
    assert listed.configs == [stored]
    assert cell["stored_after_delete"] == []
    assert created.id == created.task_id  # the SDK's choice of config id when none is sent
    record(
        interop_table,
        10,
        "pass: created, read and listed configs equal the stored one; Delete empties the store. "
        "Seen: the SDK names a config without id after its task id, and answers Delete with "
        "`result: null` (our client reads null as the empty result)",
    )


def test_extended_card(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["extended_card"]
    assert AgentCard.from_dict(cell["ours"]) == AgentCard.from_dict(cell["stored"])
    record(interop_table, 11, "pass: the parsed card equals the SDK's configured extended card")


@pytest.mark.parametrize(
    ("method", "row"),
    [
        ("GetTask", "GetTask without the header"),
        ("SendStreamingMessage", "SendStreamingMessage without the header"),
    ],
)
def test_missing_version_on_the_sdk_server(
    cells: dict[str, Any], interop_table: InteropTable, method: str, row: str
) -> None:
    answer = cells["no_version"][method]
    assert (answer["status"], answer["contentType"]) == (200, "application/json")
    error = json.loads(answer["body"])["error"]
    assert error["code"] == -32009
    [info] = error["data"]
    assert info["reason"] == "VERSION_NOT_SUPPORTED" and info["metadata"] == {}
    interop_table.record(
        "version",
        row,
        "-32009 (ErrorInfo VERSION_NOT_SUPPORTED, empty metadata), HTTP 200 JSON",
        f"{SDK} server",
    )


def test_client_credentials_against_the_sdk_server_behind_a_bearer_check(
    cells: dict[str, Any], interop_table: InteropTable
) -> None:
    """Our ClientCredentials reads the SDK card's OAuth 2.0 flow, gets a token from the loopback
    provider, and replaces it once when the bearer check refuses it (issue 27)."""
    cell = cells["oauth"]
    assert cell["states"] == ["TASK_STATE_COMPLETED", "TASK_STATE_COMPLETED"]
    assert cell["token_requests"] == 2  # the first token, then one after the revocation
    assert cell["refusals"] == 1  # one 401, then the retry passed
    record(
        interop_table,
        12,
        "pass: behind a bearer check, our ClientCredentials reads the SDK card's clientCredentials "
        "flow, gets a token, and replaces it once when it is refused (one 401, then the call "
        "completes)",
    )
