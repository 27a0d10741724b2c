"""Task methods over real HTTP: SendMessage (blocking, returnImmediately, replies, history),
multi-turn rules (spec 3.4), GetTask, CancelTask, capability errors (spec 3.3.4), agent
failures and storage."""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import Any

import pytest
from patience import poll
from server_support import (
    ScriptedAgent,
    error,
    make_card,
    message,
    reason,
    result,
    send_params,
    violations,
)
from store_support import ServerStores

from a2a_wire.server import RUNTIME_KEY, create_app
from a2a_wire.server.store import InMemoryTaskStore, SQLiteTaskStore
from a2a_wire.types import Message, Part, Role, Task, TaskState, TaskStatus


async def send(client: Any, text: str, configuration: Any = None, **fields: Any) -> Any:
    return await result(client, "SendMessage", send_params(text, configuration, **fields))


# -- SendMessage ----------------------------------------------------------------------------------


async def test_send_blocks_until_terminal(client: Any) -> None:
    task = (await send(client, "hello"))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "hello"}]
    uuid.UUID(task["id"])
    assert task["history"][0]["taskId"] == task["id"]
    assert task["history"][0]["contextId"] == task["contextId"]


async def test_send_waits_for_a_slow_agent(client: Any, agent: ScriptedAgent) -> None:
    call = asyncio.create_task(send(client, "wait"))
    await agent.started.wait()
    await asyncio.sleep(0.05)
    assert not call.done()
    agent.gate.set()
    task = (await call)["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_return_immediately(client: Any, agent: ScriptedAgent) -> None:
    task = (await send(client, "wait", {"returnImmediately": True}))["task"]
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    stored = await result(client, "GetTask", {"id": task["id"]})  # acknowledged => stored
    assert stored["id"] == task["id"]
    agent.gate.set()
    done = await poll(lambda: result(client, "GetTask", {"id": task["id"]}), _settled)
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"


def _settled(task: Any) -> bool:
    return task["status"]["state"] not in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")


async def test_send_returns_at_interrupted_state(client: Any) -> None:
    task = (await send(client, "input"))["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert task["status"]["message"]["parts"] == [{"text": "need more"}]


async def test_direct_message_reply(client: Any) -> None:
    got = await send(client, "reply", contextId="ctx-1")
    assert set(got) == {"message"}
    assert got["message"]["role"] == "ROLE_AGENT"
    assert got["message"]["contextId"] == "ctx-1"
    assert "taskId" not in got["message"]
    assert (await result(client, "ListTasks", {}))["totalSize"] == 0


async def test_agent_made_task(client: Any, agent: ScriptedAgent) -> None:
    task = (await send(client, "task"))["task"]
    assert task["id"] == agent.contexts[0].task_id
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["history"][0]["parts"] == [{"text": "task"}]


@pytest.mark.parametrize(("length", "expected"), [(None, 2), (0, 0), (1, 1), (5, 2)])
async def test_history_length_on_the_result(client: Any, length: int | None, expected: int) -> None:
    config = {} if length is None else {"historyLength": length}
    task = (await send(client, "reject", config))["task"]  # user message + status message
    assert len(task.get("history", [])) == expected
    if expected == 1:
        assert task["history"][0]["role"] == "ROLE_AGENT"
    if expected == 0:
        assert "history" not in task


async def test_negative_history_length_is_invalid(client: Any) -> None:
    err = await error(client, "SendMessage", send_params("echo", {"historyLength": -1}))
    assert err["code"] == -32602
    assert violations(err) == ["configuration.historyLength"]


async def test_task_ids_are_unique(client: Any) -> None:
    tasks = await asyncio.gather(*(send(client, "echo") for _ in range(20)))
    assert len({t["task"]["id"] for t in tasks}) == 20


# -- multi-turn (spec 3.4) ------------------------------------------------------------------------


async def test_new_context_is_made_when_none_is_given(client: Any) -> None:
    first = (await send(client, "echo"))["task"]
    second = (await send(client, "echo"))["task"]
    assert first["contextId"] and second["contextId"]
    assert first["contextId"] != second["contextId"]


@pytest.mark.parametrize("context", ["nul\u0000inside", "\u0001\u0000\u0001", "plain"])
async def test_any_client_context_id_is_kept_and_found(client: Any, context: str) -> None:
    """A context id is any JSON string, U+0000 included (PostgreSQL's text refuses it: the
    store escapes it, see ``_log_postgres_text``)."""
    task = (await send(client, "echo", contextId=context))["task"]
    assert task["contextId"] == context
    got = await result(client, "GetTask", {"id": task["id"]})
    assert got["contextId"] == context
    found = await result(client, "ListTasks", {"contextId": context})
    assert [t["id"] for t in found["tasks"]] == [task["id"]]


async def test_client_context_is_kept_for_a_new_task(client: Any) -> None:
    first = (await send(client, "echo"))["task"]
    second = (await send(client, "echo", contextId=first["contextId"]))["task"]
    assert second["contextId"] == first["contextId"]
    assert second["id"] != first["id"]


async def test_follow_up_continues_the_task_with_inferred_context(
    client: Any, agent: ScriptedAgent
) -> None:
    first = (await send(client, "input"))["task"]
    second = (await send(client, "more", taskId=first["id"]))["task"]
    assert second["id"] == first["id"]
    assert second["contextId"] == first["contextId"]
    assert second["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [p["parts"][0]["text"] for p in second["history"]] == ["input", "need more", "more"]
    context = agent.contexts[-1]
    assert context.task is not None and context.task.id == first["id"]
    assert context.message is not None and context.message.context_id == first["contextId"]


async def test_follow_up_with_matching_context(client: Any) -> None:
    first = (await send(client, "input"))["task"]
    second = await send(client, "x", taskId=first["id"], contextId=first["contextId"])
    assert second["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_unknown_task_id_is_task_not_found(client: Any) -> None:
    err = await error(client, "SendMessage", send_params("x", taskId="no-such-task"))
    assert err["code"] == -32001
    assert reason(err) == "TASK_NOT_FOUND"
    assert err["data"][0]["metadata"] == {"taskId": "no-such-task"}


async def test_message_to_terminal_task_is_unsupported(client: Any) -> None:
    done = (await send(client, "echo"))["task"]
    err = await error(client, "SendMessage", send_params("again", taskId=done["id"]))
    assert err["code"] == -32004
    assert reason(err) == "UNSUPPORTED_OPERATION"
    assert err["data"][0]["metadata"]["taskId"] == done["id"]
    assert err["message"] == f"Task {done['id']} is completed; it takes no more messages"


async def test_context_mismatch_is_invalid_params(client: Any) -> None:
    first = (await send(client, "input"))["task"]
    params = send_params("x", taskId=first["id"], contextId="another-context")
    err = await error(client, "SendMessage", params)
    assert err["code"] == -32602
    assert violations(err) == ["message.contextId"]
    still = await result(client, "GetTask", {"id": first["id"]})
    assert still["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert len(still["history"]) == 2


async def test_message_to_a_busy_task_is_unsupported(client: Any, agent: ScriptedAgent) -> None:
    first = (await send(client, "wait", {"returnImmediately": True}))["task"]
    err = await error(client, "SendMessage", send_params("x", taskId=first["id"]))
    assert err["code"] == -32004
    agent.gate.set()


# -- agent failures -------------------------------------------------------------------------------


async def test_agent_exception_fails_the_task(
    client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, "a2a_wire.server"):
        task = (await send(client, "raise"))["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    text = task["status"]["message"]["parts"][0]["text"]
    assert "secret" not in text
    assert "secret detail of the agent failure" in caplog.text
    assert (await send(client, "echo"))["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("script", ["silent", "early"])
async def test_agent_that_leaves_no_outcome_fails_the_task(client: Any, script: str) -> None:
    task = (await send(client, script))["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert task["status"]["message"]["role"] == "ROLE_AGENT"


# -- GetTask --------------------------------------------------------------------------------------


async def test_get_task_with_history_length(client: Any) -> None:
    task = (await send(client, "reject"))["task"]
    full = await result(client, "GetTask", {"id": task["id"]})
    assert full == task
    assert "history" not in await result(client, "GetTask", {"id": task["id"], "historyLength": 0})
    last = await result(client, "GetTask", {"id": task["id"], "historyLength": 1})
    assert last["history"] == task["history"][-1:]
    err = await error(client, "GetTask", {"id": task["id"], "historyLength": -2})
    assert err["code"] == -32602 and violations(err) == ["historyLength"]


async def test_get_unknown_task(client: Any) -> None:
    err = await error(client, "GetTask", {"id": "nope"})
    assert err["code"] == -32001
    assert reason(err) == "TASK_NOT_FOUND"


# -- CancelTask -----------------------------------------------------------------------------------


async def test_cancel_running_task_goes_through_the_hook(client: Any, agent: ScriptedAgent) -> None:
    pending = asyncio.create_task(send(client, "wait"))
    await agent.started.wait()
    task_id = agent.contexts[0].task_id
    canceled = await result(client, "CancelTask", {"id": task_id, "metadata": {"why": "test"}})
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert canceled["status"]["message"]["parts"] == [{"text": "stopped on request"}]
    assert agent.cancels[0].task_id == task_id
    assert agent.cancels[0].metadata == {"why": "test"}
    assert agent.cancelled_runs == 1
    blocked = (await pending)["task"]  # the blocking SendMessage ends with the cancel
    assert blocked["status"]["state"] == "TASK_STATE_CANCELED"


async def test_cancel_without_hook_events_is_recorded_by_the_server(
    client: Any, agent: ScriptedAgent
) -> None:
    agent.cancel_emits = False
    task = (await send(client, "wait", {"returnImmediately": True}))["task"]
    canceled = await result(client, "CancelTask", {"id": task["id"]})
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert "message" not in canceled["status"]


async def test_cancel_interrupted_task(client: Any) -> None:
    task = (await send(client, "input"))["task"]
    canceled = await result(client, "CancelTask", {"id": task["id"]})
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"


async def test_cancel_terminal_and_repeated_cancel_are_not_cancelable(client: Any) -> None:
    done = (await send(client, "echo"))["task"]
    err = await error(client, "CancelTask", {"id": done["id"]})
    assert err["code"] == -32002
    assert reason(err) == "TASK_NOT_CANCELABLE"
    waiting = (await send(client, "input"))["task"]
    await result(client, "CancelTask", {"id": waiting["id"]})
    again = await error(client, "CancelTask", {"id": waiting["id"]})
    assert again["code"] == -32002
    # The words of the CLI in the message; the machine-readable state keeps the wire value.
    assert again["message"] == f"Task {waiting['id']} is canceled and cannot be canceled"
    assert again["data"][0]["metadata"]["state"] == "TASK_STATE_CANCELED"
    state = (await result(client, "GetTask", {"id": waiting["id"]}))["status"]["state"]
    assert state == "TASK_STATE_CANCELED"


async def test_cancel_unknown_task(client: Any) -> None:
    err = await error(client, "CancelTask", {"id": "nope"})
    assert err["code"] == -32001


# -- capabilities (spec 3.3.4) --------------------------------------------------------------------

PUSH_CALLS = [
    ("CreateTaskPushNotificationConfig", {"taskId": "t", "url": "https://hook.example/x"}),
    ("GetTaskPushNotificationConfig", {"taskId": "t", "id": "c"}),
    ("ListTaskPushNotificationConfigs", {"taskId": "t"}),
    ("DeleteTaskPushNotificationConfig", {"taskId": "t", "id": "c"}),
]


@pytest.mark.parametrize(("method", "params"), PUSH_CALLS)
@pytest.mark.parametrize(("push", "code"), [(None, -32003), (False, -32003), (True, -32001)])
async def test_push_config_methods(
    aiohttp_client: Any, method: str, params: Any, push: bool | None, code: int
) -> None:
    client = await aiohttp_client(create_app(make_card(push=push), ScriptedAgent()))
    err = await error(client, method, params)
    assert err["code"] == code  # with the capability: task "t" is unknown (test_push_*.py)


@pytest.mark.parametrize(("push", "code"), [(None, -32003)])
async def test_send_with_push_config(aiohttp_client: Any, push: bool | None, code: int) -> None:
    client = await aiohttp_client(create_app(make_card(push=push), ScriptedAgent()))
    config = {"taskPushNotificationConfig": {"url": "https://hook.example/x"}}
    err = await error(client, "SendMessage", send_params("echo", config))
    assert err["code"] == code
    assert (await result(client, "ListTasks", {}))["totalSize"] == 0


@pytest.mark.parametrize(("extended", "code"), [(None, -32004), (False, -32004), (True, -32007)])
async def test_extended_card(aiohttp_client: Any, extended: bool | None, code: int) -> None:
    client = await aiohttp_client(create_app(make_card(extended=extended), ScriptedAgent()))
    err = await error(client, "GetExtendedAgentCard")
    assert err["code"] == code


# -- storage --------------------------------------------------------------------------------------


async def test_store_is_opened_and_closed_with_the_app(aiohttp_client: Any) -> None:
    store = InMemoryTaskStore()
    client = await aiohttp_client(create_app(make_card(), ScriptedAgent(), store=store))
    await send(client, "echo")
    await client.close()
    with pytest.raises(RuntimeError, match=r"^the task store is not open; call open\(\) first$"):
        await store.get("x")


async def test_sqlite_store_recovery_at_startup(aiohttp_client: Any, tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    seed = SQLiteTaskStore(path)
    await seed.open()
    note = Message(message_id="m", role=Role.USER, parts=[Part(text="hi")])
    working = Task(
        id="t1", context_id="c1", status=TaskStatus(state=TaskState.WORKING), history=[note]
    )
    await seed.create(working)
    await seed.close()
    client = await aiohttp_client(
        create_app(make_card(), ScriptedAgent(), store=SQLiteTaskStore(path))
    )
    recovered = await result(client, "GetTask", {"id": "t1"})
    assert recovered["status"]["state"] == "TASK_STATE_FAILED"
    task = (await send(client, "echo"))["task"]
    assert (await result(client, "GetTask", {"id": task["id"]}))["status"]["state"] == (
        "TASK_STATE_COMPLETED"
    )


async def test_shutdown_cancels_pending_runs(aiohttp_client: Any, store_for: ServerStores) -> None:
    agent = ScriptedAgent()
    app = create_app(make_card(), agent, store=store_for())
    client = await aiohttp_client(app)
    await send(client, "wait", {"returnImmediately": True})
    runtime = app[RUNTIME_KEY]
    assert len(runtime.runs) == 1
    await client.close()
    assert not runtime.runs
    assert agent.cancelled_runs == 1


async def test_hubs_are_released(aiohttp_client: Any, store_for: ServerStores) -> None:
    app = create_app(make_card(), ScriptedAgent(), store=store_for())
    client = await aiohttp_client(app)
    first = (await send(client, "input"))["task"]
    await send(client, "more", taskId=first["id"])
    await send(client, "reply")
    await error(client, "SendMessage", send_params("x", taskId=first["id"]))
    await asyncio.sleep(0)
    assert app[RUNTIME_KEY].hubs == {}
    assert not app[RUNTIME_KEY].runs


async def test_message_fields_reach_the_agent(client: Any, agent: ScriptedAgent) -> None:
    params = send_params("echo", {"acceptedOutputModes": ["text/plain"]})
    params["metadata"] = {"k": "v"}
    params["message"]["referenceTaskIds"] = ["r1"]
    await result(client, "SendMessage", params)
    context = agent.contexts[0]
    assert context.metadata == {"k": "v"}
    assert context.configuration is not None
    assert context.configuration.accepted_output_modes == ["text/plain"]
    assert context.message is not None and context.message.reference_task_ids == ["r1"]
    assert context.caller == ""
    assert context.task is None
    assert message("x")["role"] == "ROLE_USER"


async def test_follow_up_waits_for_the_interrupted_run_to_return(
    client: Any, agent: ScriptedAgent
) -> None:
    first = (await send(client, "linger"))["task"]
    assert first["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    follow = asyncio.create_task(send(client, "more", taskId=first["id"]))
    await asyncio.sleep(0.05)
    assert not follow.done()
    assert len(agent.contexts) == 1
    agent.gate.set()
    assert (await follow)["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
