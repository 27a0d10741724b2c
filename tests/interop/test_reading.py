"""Reading cells: both clients read JSON the pinned proto does not define, from a scripted server.

Our client reads in this process; the SDK's client reads in a subprocess
(``run_sdk_reading.py``). Each test pins what each one does and records it in the interop table.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from interop_scripted import STREAM, TASKS, scripted_app
from interop_support import run_scenario, serve
from interop_table import OURS, READING, SDK, InteropTable

from a2a_wire.client import A2AClient, ClientSettings, is_interrupted, is_terminal
from a2a_wire.types import GetTaskRequest, Task, TaskState

SECTION = "reading"
ALLOW = ClientSettings(allow=("127.0.0.1",))


@pytest.fixture(scope="module")
def sdk() -> dict[str, Any]:
    result: dict[str, Any] = run_scenario("run_sdk_reading.py")
    return result


@pytest.fixture
async def client() -> AsyncIterator[A2AClient]:
    async with serve(scripted_app()) as base:
        async with await A2AClient.connect(base, settings=ALLOW) as a2a:
            yield a2a


def record(table: InteropTable, index: int, ours: str, theirs: str) -> None:
    table.record(SECTION, READING[index], ours, f"{OURS} client")
    table.record(SECTION, READING[index], theirs, f"{SDK} client")


async def test_fields_the_proto_lacks(
    client: A2AClient, sdk: dict[str, Any], interop_table: InteropTable
) -> None:
    task = await client.get_task(GetTaskRequest(id="extra-fields"))
    plain = dict(TASKS["extra-fields"])
    del plain["generation"]
    plain["status"] = {k: v for k, v in plain["status"].items() if k != "progressHint"}
    assert task == Task.from_dict(plain)
    assert Task.from_dict(sdk["extra-fields"]["parsed"]) == Task.from_dict(plain)
    record(
        interop_table,
        0,
        "read; the unknown fields are ignored (equal to the task without them)",
        "read; the unknown fields are ignored (equal to the task without them)",
    )


async def test_submitted_without_timestamp(
    client: A2AClient, sdk: dict[str, Any], interop_table: InteropTable
) -> None:
    task = await client.get_task(GetTaskRequest(id="no-timestamp"))
    assert task.status is not None and task.status.state == TaskState.SUBMITTED
    assert task.status.timestamp is None
    assert sdk["no-timestamp"]["state"] == "TASK_STATE_SUBMITTED"
    assert sdk["no-timestamp"]["has_timestamp"] is False
    record(
        interop_table,
        1,
        "read; SUBMITTED, timestamp unset",
        "read; TASK_STATE_SUBMITTED, timestamp unset",
    )


async def test_unknown_part_kind(
    client: A2AClient, sdk: dict[str, Any], interop_table: InteropTable
) -> None:
    task = await client.get_task(GetTaskRequest(id="unknown-part"))
    [artifact] = task.artifacts
    assert [part.text for part in artifact.parts] == ["kept"]
    assert sdk["unknown-part"]["artifact_part_kinds"] == ["text", None]
    record(
        interop_table,
        2,
        "read; the unknown part is dropped (logged), the text part is kept",
        "read; the unknown part becomes an empty Part (no content member) beside the text part",
    )


async def test_unknown_task_state(
    client: A2AClient, sdk: dict[str, Any], interop_table: InteropTable
) -> None:
    task = await client.get_task(GetTaskRequest(id="unknown-state"))
    assert task.status is not None
    state = task.status.state
    assert not state.is_known and state.value == "TASK_STATE_PAUSED"
    assert not is_terminal(state) and not is_interrupted(state)
    assert task.to_dict()["status"]["state"] == "TASK_STATE_PAUSED"  # relayed unchanged
    assert sdk["unknown-state"]["state"] == "TASK_STATE_UNSPECIFIED"
    assert "state" not in sdk["unknown-state"]["parsed"]["status"]
    record(
        interop_table,
        3,
        "read; kept as the unknown value TASK_STATE_PAUSED (re-encoded unchanged), neither "
        "terminal nor interrupted, so waiting goes on",
        "read; the state silently becomes TASK_STATE_UNSPECIFIED (the value is lost)",
    )


async def test_unknown_stream_member(
    client: A2AClient, sdk: dict[str, Any], interop_table: InteropTable
) -> None:
    async with client.send_streaming_message(client.text_request("go")) as stream:
        members = [next(iter(event.to_dict())) async for event in stream]
    assert len(STREAM) == 3
    assert members == ["task", "statusUpdate"]
    assert sdk["stream"] == {"members": ["task", None, "status_update"]}
    record(
        interop_table,
        4,
        "the event is skipped (logged); the stream yields task, statusUpdate and ends normally",
        "the event is yielded as an empty StreamResponse (no payload member) between the other two",
    )
