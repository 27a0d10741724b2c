"""Restart rules (documented in docs/server.md): what happens to tasks a dead process left behind.

* SUBMITTED or WORKING: their agent run died with the process, so they become FAILED with an agent
  status message saying the server restarted.
* INPUT_REQUIRED or AUTH_REQUIRED: the agent was waiting for the client, so they stay as they are
  and the follow-up message after the restart continues them with a new agent run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from server_support import ScriptedAgent, make_card, message, result

from a2a_wire.server import create_app
from a2a_wire.server.store import RESTART_MESSAGE, SQLiteTaskStore
from a2a_wire.types import Message, Part, Role, Task, TaskState, TaskStatus


async def _seed(path: Path, state: TaskState) -> None:
    store = SQLiteTaskStore(path)
    await store.open()
    note = Message(message_id="m0", role=Role.USER, parts=[Part(text="start")])
    task = Task(id="t1", context_id="c1", status=TaskStatus(state=state), history=[note])
    await store.create(task)
    await store.close()


@pytest.mark.parametrize("state", [TaskState.SUBMITTED, TaskState.WORKING])
async def test_running_tasks_fail_with_a_restart_message(
    aiohttp_client: Any, tmp_path: Path, state: TaskState
) -> None:
    await _seed(tmp_path / "tasks.db", state)
    store = SQLiteTaskStore(tmp_path / "tasks.db")
    client = await aiohttp_client(create_app(make_card(), ScriptedAgent(), store=store))
    task = await result(client, "GetTask", {"id": "t1"})
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert task["status"]["message"]["role"] == "ROLE_AGENT"
    assert task["status"]["message"]["parts"][0]["text"] == RESTART_MESSAGE


async def test_the_recovery_line_counts_in_words(
    aiohttp_client: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await _seed(tmp_path / "tasks.db", TaskState.WORKING)
    store = SQLiteTaskStore(tmp_path / "tasks.db")
    await aiohttp_client(create_app(make_card(), ScriptedAgent(), store=store))
    assert "1 task interrupted by a restart was marked failed" in caplog.text


@pytest.mark.parametrize("state", [TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED])
async def test_waiting_tasks_survive_and_accept_the_follow_up(
    aiohttp_client: Any, tmp_path: Path, state: TaskState
) -> None:
    await _seed(tmp_path / "tasks.db", state)
    agent = ScriptedAgent()
    store = SQLiteTaskStore(tmp_path / "tasks.db")
    client = await aiohttp_client(create_app(make_card(), agent, store=store))
    before = await result(client, "GetTask", {"id": "t1"})
    assert before["status"]["state"] == state.value
    after = await result(client, "SendMessage", {"message": message("more", taskId="t1")})
    assert after["task"]["id"] == "t1" and after["task"]["contextId"] == "c1"
    assert after["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert after["task"]["artifacts"][0]["parts"][0]["text"] == "got more"
    assert agent.contexts[-1].task is not None
