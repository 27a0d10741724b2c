"""The a2a-sdk 1.3.0 client against the a2a-wire server: what the SDK parses equals what we stored.

The scenario runs in a subprocess (``run_sdk_client.py``, see :mod:`interop_support`); these
tests read what it wrote and compare, with the a2a-wire codec, each result the SDK parsed with
the task our server stored.
"""

from __future__ import annotations

from typing import Any

import pytest
from interop_support import replay, run_scenario, task_of, trimmed, without_artifacts
from interop_table import OPERATIONS, InteropTable

from a2a_wire.types import (
    AgentCard,
    AuthenticationInfo,
    ListTaskPushNotificationConfigsResponse,
    ListTasksResponse,
    Message,
    Role,
    TaskPushNotificationConfig,
    TaskState,
)

SECTION = "sdk-client"


@pytest.fixture(scope="module")
def cells() -> dict[str, Any]:
    result: dict[str, Any] = run_scenario("run_sdk_client.py")
    return result


def record(table: InteropTable, index: int, outcome: str) -> None:
    table.record(SECTION, OPERATIONS[index], outcome)


def test_card_resolves_and_parses_equal(cells: dict[str, Any], interop_table: InteropTable) -> None:
    card = cells["card"]
    assert AgentCard.from_dict(card["sdk"]) == AgentCard.from_dict(card["served"])
    [iface] = card["sdk"]["supportedInterfaces"]
    assert (iface["protocolBinding"], iface["protocolVersion"]) == ("JSONRPC", "1.0")
    record(interop_table, 0, "pass: the parsed card equals the served card; JSONRPC 1.0 chosen")


def test_send_blocking(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["send_blocking"]
    parsed = task_of(cell["sdk"]["task"])
    assert parsed == task_of(cell["stored"])
    assert parsed.status is not None and parsed.status.state == TaskState.COMPLETED
    record(interop_table, 1, "pass: COMPLETED Task, equal to the stored task")


def test_send_return_immediately(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["send_return_immediately"]
    parsed = task_of(cell["sdk"]["task"])
    assert parsed == task_of(cell["stored"])
    assert parsed.status is not None and parsed.status.state == TaskState.WORKING
    record(interop_table, 2, "pass: WORKING Task while the agent waits, equal to the stored task")


def test_send_answered_with_message(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["send_message_reply"]
    reply = Message.from_dict(cell["sdk"]["message"])
    assert reply.role == Role.AGENT and reply.parts[0].text == "reply to reply"
    assert reply.context_id and reply.message_id and not reply.task_id
    assert cell["tasks_created"] == 0
    record(interop_table, 3, "pass: one agent Message with a contextId; no task stored")


def test_send_streaming(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["send_streaming"]
    stored = task_of(cell["stored"])
    seen = replay(cell["sdk"])
    expected_kinds = ["task", "statusUpdate", "artifactUpdate", "artifactUpdate", "statusUpdate"]
    assert seen.kinds == expected_kinds
    assert seen.task_id == stored.id
    assert seen.status == stored.status
    assert seen.artifacts == stored.artifacts
    assert [p.text for p in stored.artifacts[0].parts] == ["chunk-1 ", "chunk-2"]
    record(
        interop_table,
        4,
        "pass: task, WORKING, two artifact chunks, COMPLETED; replayed state equals the stored task",
    )


def test_get_task_history_lengths(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["get_task_history"]
    stored = task_of(cell["stored"])
    assert len(stored.history) == 4
    for key, view in cell["sdk"].items():
        length = None if key == "None" else int(key)
        assert task_of(view) == trimmed(stored, length), key
    assert "history" not in cell["sdk"]["0"]
    record(interop_table, 5, "pass: each equals the stored task with its last N messages")


def test_list_tasks_paging(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["list_tasks_paging"]
    stored = [task_of(t) for t in cell["stored"]]
    pages = [ListTasksResponse.from_dict(p) for p in cell["sdk"]]
    assert [len(p.tasks) for p in pages] == [2, 2, 1]
    assert all(p.page_size == 2 and p.total_size == 5 for p in pages)
    assert [bool(p.next_page_token) for p in pages] == [True, True, False]
    listed = [t for p in pages for t in p.tasks]
    assert listed == [without_artifacts(t) for t in stored]
    assert all("artifacts" not in t for p in cell["sdk"] for t in p["tasks"])
    full = ListTasksResponse.from_dict(cell["sdk_with_artifacts"])
    assert full.tasks == [trimmed(t, 1) for t in stored]
    record(
        interop_table,
        6,
        "pass: pages of 2, 2, 1 in stored order, no artifacts key; with includeArtifacts equal "
        "to the stored tasks",
    )


def test_cancel_task(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["cancel_task"]
    parsed = task_of(cell["sdk"])
    assert parsed == task_of(cell["stored"])
    assert parsed.status is not None and parsed.status.state == TaskState.CANCELED
    assert cell["cancel_again"] == "TaskNotCancelableError"
    record(
        interop_table,
        7,
        "pass: CANCELED Task equal to the stored task; again: the SDK raises "
        "TaskNotCancelableError (-32002)",
    )


def test_subscribe_to_task(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["subscribe_to_task"]
    stored = task_of(cell["stored"])
    seen = replay(cell["sdk"])
    assert seen.kinds == ["task", "artifactUpdate", "statusUpdate"]
    first = task_of(cell["sdk"][0]["task"])
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
    assert cells["error_task_not_found"]["sdk"] == "TaskNotFoundError"
    record(interop_table, 9, "pass: the SDK raises TaskNotFoundError (-32001)")


def test_push_config_methods(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["push_configs"]
    stored = TaskPushNotificationConfig.from_dict(cell["stored"])
    assert stored.token == "tok-1" and stored.authentication is not None
    assert stored.authentication.credentials == "secret"
    shown = TaskPushNotificationConfig.from_dict(cell["stored"])  # what answers show
    shown.token = ""
    shown.authentication = AuthenticationInfo(scheme=stored.authentication.scheme)
    sdk = cell["sdk"]
    assert TaskPushNotificationConfig.from_dict(sdk["created"]) == shown
    assert TaskPushNotificationConfig.from_dict(sdk["got"]) == shown
    assert ListTaskPushNotificationConfigsResponse.from_dict(sdk["listed"]).configs == [shown]
    assert stored.id and stored.id != stored.task_id  # a fresh id, not the task's
    assert cell["stored_after_delete"] == []
    record(
        interop_table,
        10,
        "pass: created, read and listed configs equal the stored one (its id made by the "
        "server) without its token and credentials, which the store keeps; Delete empties "
        "the store",
    )


def test_extended_card(cells: dict[str, Any], interop_table: InteropTable) -> None:
    cell = cells["extended_card"]
    assert AgentCard.from_dict(cell["sdk"]) == AgentCard.from_dict(cell["served"])
    assert cell["public"]["securitySchemes"]  # the public card says how to authenticate
    assert cell["anonymous_status"] == 401
    record(
        interop_table,
        11,
        "pass: with a bearer token the parsed card equals the served extended card; "
        "without one, HTTP 401",
    )


def test_a_client_credentials_token_of_the_provider(
    cells: dict[str, Any], interop_table: InteropTable
) -> None:
    """The SDK's client, given a bearer token from the loopback OAuth provider (issue 27)."""
    cell = cells["oauth"]
    scheme = cell["card"]["securitySchemes"]["oauth2"]["oauth2SecurityScheme"]
    assert scheme["flows"]["clientCredentials"]["tokenUrl"].endswith("/token")
    assert cell["card"]["securityRequirements"] == [{"schemes": {"oauth2": {"list": ["a2a"]}}}]
    states = [e["task"]["status"]["state"] for e in cell["events"] if "task" in e]
    assert states[-1] == "TASK_STATE_COMPLETED"
    assert cell["anonymous_status"] == 401
    assert cell["challenge"].startswith("Bearer ")
    record(
        interop_table,
        12,
        "pass: the SDK parses the card's OAuth2 clientCredentials scheme and its requirement; "
        "with the provider's token its call completes; without one, HTTP 401 with a Bearer "
        "challenge",
    )
