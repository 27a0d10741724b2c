"""Every run ends (runtime/a2a_wire/server/_lifecycle.py, _runner.py): the table, store faults
at a run's end, and follow-ups accepted the moment a turn's interrupted state is committed.

The store faults here are those of :class:`fault_store.FaultyStore` (the in-memory store behind
a switch); the real databases' faults are tested with the real things in tests/server/store/.
Agents that must still be running when a test acts wait on gates the test opens.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fault_store import FaultyStore
from patience import poll
from server_support import (
    EventReader,
    envelope,
    make_card,
    open_stream,
    post,
    result,
    rpc,
    send_params,
    states,
)
from store_support import ServerStores

from a2a_wire.server import (
    RUNTIME_KEY,
    AgentExecutor,
    EventQueue,
    RequestContext,
    ServerSettings,
    TaskUpdater,
    create_app,
)
from a2a_wire.server._lifecycle import TRANSITIONS, Phase, Step, advance
from a2a_wire.server._runner import AGENT_FAILED, STORE_LOST
from a2a_wire.server.store import SQLiteTaskStore, StoreUnavailableError

# -- the table --------------------------------------------------------------------------------


@pytest.mark.parametrize("phase", list(Phase), ids=lambda p: p.value)
@pytest.mark.parametrize("step", list(Step), ids=lambda s: s.value)
def test_every_step_gives_the_tabled_phase_or_is_refused(phase: Phase, step: Step) -> None:
    if step in TRANSITIONS[phase]:
        assert advance(phase, step) is TRANSITIONS[phase][step]
    else:
        with pytest.raises(RuntimeError, match=f"cannot take step {step.value}"):
            advance(phase, step)


def test_every_phase_can_be_ended_and_an_ended_run_stays_ended() -> None:
    assert all(TRANSITIONS[phase][Step.STOPPED] is Phase.ENDED for phase in Phase)
    assert TRANSITIONS[Phase.ENDED] == {Step.STOPPED: Phase.ENDED}
    # From every phase, the run's own steps reach ENDED without help from outside.
    for phase in Phase:
        seen, frontier = {phase}, [phase]
        while frontier:
            for nxt in TRANSITIONS[frontier.pop()].values():
                if nxt not in seen:
                    seen.add(nxt)
                    frontier.append(nxt)
        assert Phase.ENDED in seen


# -- agents -----------------------------------------------------------------------------------


class Turns(AgentExecutor):
    """``fail``: WORKING, wait at :attr:`gate`, raise (``write``: write an artifact first, and
    call :attr:`after_failure` when the store refuses it). ``ask``/``auth``: ask for input (or auth)
    and return; every follow-up asks again. ``linger``: ask for input, then never return."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started = asyncio.Event()
        self.runs = 0
        self.lingering: list[asyncio.Event] = []
        self.after_failure: Callable[[], None] = lambda: None

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        self.runs += 1
        assert context.message is not None
        text = context.message.parts[0].text or ""
        updater = TaskUpdater(events, context)
        if text in ("fail", "write"):
            await updater.start_work()
            self.started.set()
            await self.gate.wait()
            if text == "write":  # raises StoreUnavailableError while the store is down
                try:
                    await updater.add_artifact("after the gate")
                except StoreUnavailableError:
                    self.after_failure()
                    raise
            raise RuntimeError("the agent broke while the store was down")
        if text.startswith("auth"):
            await updater.require_auth("sign in")
            return
        await updater.require_input("more?")
        if text.startswith("linger"):
            forever = asyncio.Event()
            self.lingering.append(forever)
            await forever.wait()


# -- store faults at a run's end --------------------------------------------------------------


async def _failing_run(aiohttp_client: Any) -> tuple[Any, Turns, FaultyStore]:
    agent, store = Turns(), FaultyStore()
    client = await aiohttp_client(create_app(make_card(), agent, store=store))
    return client, agent, store


async def _unavailable(call: asyncio.Task[Any]) -> dict[str, Any]:
    """The -32000 STORE_UNAVAILABLE error of a call answered with HTTP 503 and Retry-After."""
    response = await call
    assert response.status == 503, await response.text()
    assert response.headers["Retry-After"] == "1"
    error: dict[str, Any] = (await response.json())["error"]
    assert (error["code"], error["data"][0]["reason"]) == (-32000, "STORE_UNAVAILABLE")
    return error


def _send(client: Any, text: str) -> asyncio.Task[Any]:
    return asyncio.create_task(post(client, envelope("SendMessage", send_params(text))))


async def _state_of(client: Any, task_id: str) -> str:
    task = await result(client, "GetTask", {"id": task_id})
    return str(task["status"]["state"])


async def test_a_stream_ends_with_a_retryable_error_when_the_end_cannot_be_recorded(
    aiohttp_client: Any,
) -> None:
    client, agent, store = await _failing_run(aiohttp_client)
    reader = await open_stream(client, "SendStreamingMessage", send_params("fail"))
    task_id = (await reader.next() or {})["result"]["task"]["id"]
    await agent.started.wait()
    store.down = True
    agent.gate.set()
    rest = await reader.rest()  # ends: never keep-alives on a task no run will finish
    error = rest[-1]["error"]
    assert error["code"] == -32000
    assert error["data"][0]["reason"] == "STORE_UNAVAILABLE"
    assert error["data"][0]["metadata"]["taskId"] == task_id
    # The run's own error, at once: not the one after stream_outage_seconds of failed reads.
    assert "is not recorded yet" in error["message"], error
    runtime = client.server.app[RUNTIME_KEY]
    assert len(runtime.runs) == 1  # still trying to record the end
    store.down = False
    assert await poll(lambda: _state_of(client, task_id), lambda s: s == "TASK_STATE_FAILED")
    await poll(lambda: asyncio.sleep(0, runtime.runs), lambda runs: not runs)
    task = await result(client, "GetTask", {"id": task_id})
    assert task["status"]["message"]["parts"][0]["text"] == AGENT_FAILED


async def test_a_blocked_send_answers_retryably_when_the_end_cannot_be_recorded(
    aiohttp_client: Any,
) -> None:
    client, agent, store = await _failing_run(aiohttp_client)
    blocked = _send(client, "fail")
    await agent.started.wait()
    store.down = True
    agent.gate.set()
    error = await _unavailable(blocked)
    task_id = error["data"][0]["metadata"]["taskId"]
    store.down = False
    assert await poll(lambda: _state_of(client, task_id), lambda s: s == "TASK_STATE_FAILED")


async def test_an_agent_stopped_by_the_store_fails_its_task_without_a_traceback(
    aiohttp_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    client, agent, store = await _failing_run(aiohttp_client)
    blocked = _send(client, "write")
    await agent.started.wait()
    store.down = True
    with caplog.at_level(logging.INFO, "a2a_wire"):
        agent.gate.set()
        error = await _unavailable(blocked)
        task_id = error["data"][0]["metadata"]["taskId"]
        store.down = False
        task = await poll(
            lambda: result(client, "GetTask", {"id": task_id}),
            lambda t: t["status"]["state"] == "TASK_STATE_FAILED",
        )
    assert task["status"]["message"]["parts"][0]["text"] == STORE_LOST
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "streamed"])
async def test_a_message_whose_task_the_store_cannot_create_is_answered_retryably(
    aiohttp_client: Any, stream: bool
) -> None:
    client, agent, store = await _failing_run(aiohttp_client)
    store.failing = {"create"}  # the agent's first event cannot make the task
    method = "SendStreamingMessage" if stream else "SendMessage"
    response = await post(client, envelope(method, send_params("ask")))
    assert response.status == 503, await response.text()
    error = (await response.json())["error"]
    assert (error["code"], error["data"][0]["reason"]) == (-32000, "STORE_UNAVAILABLE")
    runtime = client.server.app[RUNTIME_KEY]
    await poll(lambda: asyncio.sleep(0, runtime.runs), lambda runs: not runs)
    store.failing = frozenset()
    # Nothing was acknowledged, so nothing is made later: the client sends its message again.
    assert (await result(client, "ListTasks", {}))["tasks"] == []


async def test_a_held_message_whose_task_the_store_cannot_create_is_not_created_twice(
    aiohttp_client: Any,
) -> None:
    # returnImmediately: after first_event_seconds the runtime makes the SUBMITTED task itself,
    # waiting on the hub's lock the agent's create holds; once that create failed it must not
    # try (and wait for the store) again.
    agent, store = Turns(), FaultyStore(stall_seconds=1.0)
    settings = ServerSettings(first_event_seconds=0.01)
    client = await aiohttp_client(create_app(make_card(), agent, store=store, settings=settings))
    store.stalling = {"create"}
    store.stall.clear()
    params = send_params("fail", configuration={"returnImmediately": True})
    await _unavailable(asyncio.create_task(post(client, envelope("SendMessage", params))))
    assert store.calls["create"] == 1
    store.stall.set()
    assert (await result(client, "ListTasks", {}))["tasks"] == []


async def test_a_store_that_failed_under_the_agent_is_not_waited_for_again(
    aiohttp_client: Any,
) -> None:
    client, agent, store = await _failing_run(aiohttp_client)
    store.stall_seconds = None

    def stall_after_the_failure() -> None:  # the next call (recording FAILED) hangs
        store.failing = frozenset()
        store.stall.clear()

    agent.after_failure = stall_after_the_failure
    blocked = _send(client, "write")
    await agent.started.wait()
    store.failing = {"append"}
    agent.gate.set()
    error = await _unavailable(blocked)  # answered after the one failure, not after the stall
    task_id = error["data"][0]["metadata"]["taskId"]
    store.stall.set()
    task = await poll(
        lambda: result(client, "GetTask", {"id": task_id}),
        lambda t: t["status"]["state"] == "TASK_STATE_FAILED",
    )
    assert task["status"]["message"]["parts"][0]["text"] == STORE_LOST


async def test_shutdown_ends_a_run_whose_end_is_still_unrecorded(aiohttp_client: Any) -> None:
    client, agent, store = await _failing_run(aiohttp_client)
    blocked = _send(client, "fail")
    await agent.started.wait()
    store.down = True
    agent.gate.set()
    await _unavailable(blocked)
    runtime = client.server.app[RUNTIME_KEY]
    assert runtime.runs
    await client.close()  # the app's cleanup cancels the retrying run and waits for it
    assert not runtime.runs
    assert store.failed >= 1


class LostCompletion(AgentExecutor):
    """WORKING, wait at :attr:`gate`, then COMPLETED, which the test's store commits but whose
    answer it loses: ``lost`` lets the store's error through, ``fail`` raises one of its own."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started = asyncio.Event()

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        assert context.message is not None
        updater = TaskUpdater(events, context)
        await updater.start_work()
        self.started.set()
        await self.gate.wait()
        try:
            await updater.complete()
        except StoreUnavailableError:
            if context.message.parts[0].text == "fail":
                raise RuntimeError("the agent broke on the store's error") from None
            raise


@pytest.mark.parametrize(
    ("text", "failure"), [("fail", AGENT_FAILED), ("lost", STORE_LOST)], ids=["failed", "lost"]
)
async def test_the_runtime_s_refused_end_is_not_blamed_on_the_agent(
    aiohttp_client: Any, caplog: pytest.LogCaptureFixture, text: str, failure: str
) -> None:
    agent, store = LostCompletion(), FaultyStore()
    client = await aiohttp_client(create_app(make_card(), agent, store=store))
    runtime = client.server.app[RUNTIME_KEY]
    reader = await open_stream(client, "SendStreamingMessage", send_params(text))
    task_id = (await reader.next() or {})["result"]["task"]["id"]
    await agent.started.wait()
    store.answer_lost = {"append"}  # the agent's COMPLETED is committed; its answer is lost
    with caplog.at_level(logging.INFO, "a2a_wire"):
        agent.gate.set()
        await reader.rest()
        await poll(lambda: asyncio.sleep(0, runtime.runs), lambda runs: not runs)
    store.answer_lost = frozenset()
    # The runtime's FAILED comes after the committed COMPLETED: refused, and logged as its own.
    assert await _state_of(client, task_id) == "TASK_STATE_COMPLETED"
    lines = [r.getMessage() for r in caplog.records if r.name == "a2a_wire.server"]
    assert [line for line in lines if "from the agent" in line] == []  # not the agent's
    mine = f"task {task_id}: the runtime's failed status ({failure}) is not recorded: "
    assert [line for line in lines if line.startswith(mine)], lines


class HeldCancel(Turns):
    """:class:`Turns` whose ``cancel`` hook waits at :attr:`cancel_gate` (the test opens it)."""

    def __init__(self) -> None:
        super().__init__()
        self.cancel_entered = asyncio.Event()
        self.cancel_gate = asyncio.Event()

    async def cancel(self, context: RequestContext, events: EventQueue) -> None:
        self.cancel_entered.set()
        await self.cancel_gate.wait()


async def test_a_cancel_the_store_cannot_record_is_recorded_once_it_is_back(
    aiohttp_client: Any,
) -> None:
    agent, store = HeldCancel(), FaultyStore()
    client = await aiohttp_client(create_app(make_card(), agent, store=store))
    reader = await open_stream(client, "SendStreamingMessage", send_params("fail"))
    task_id = (await reader.next() or {})["result"]["task"]["id"]
    await agent.started.wait()
    cancel = asyncio.create_task(post(client, envelope("CancelTask", {"id": task_id})))
    await agent.cancel_entered.wait()
    store.down = True
    agent.cancel_gate.set()  # the run stops; CANCELED cannot be recorded
    error = await _unavailable(cancel)
    assert "the cancel of task" in error["message"], error
    assert error["data"][0]["metadata"]["taskId"] == task_id
    store.down = False  # the runner records it: the task is not left WORKING with no run
    assert await poll(lambda: _state_of(client, task_id), lambda s: s == "TASK_STATE_CANCELED")
    runtime = client.server.app[RUNTIME_KEY]
    await poll(lambda: asyncio.sleep(0, runtime.runs), lambda runs: not runs)
    assert states(await reader.rest())[-1] == "TASK_STATE_CANCELED"


# -- follow-ups the moment the turn ends ------------------------------------------------------

FOLLOW_UPS = 200


async def _follow_ups(client: Any, first: str, *, streamed: bool) -> int:
    """Ask, then at once follow up FOLLOW_UPS times on the same task; how many were refused."""
    asked = (await result(client, "SendMessage", send_params(first)))["task"]
    refusals: list[Any] = []
    for i in range(FOLLOW_UPS):
        params = send_params(f"{first}{i}", taskId=asked["id"])
        if streamed:
            response = await post(client, envelope("SendStreamingMessage", params))
            if response.content_type != "text/event-stream":  # refused before its first event
                refusals.append(await response.json())
                continue
            events = await EventReader(response).rest()
            refusals.extend(e for e in events if "error" in e)
            assert states(events)[-1].endswith(("INPUT_REQUIRED", "AUTH_REQUIRED")), events
        else:
            answer = await rpc(client, "SendMessage", params)
            if "error" in answer:
                refusals.append(answer)
    assert refusals == []
    return len(refusals)


@pytest.mark.slow
@pytest.mark.parametrize("first", ["ask", "auth"])
@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
async def test_follow_ups_right_after_the_turn_ends_are_never_refused(
    aiohttp_client: Any, store_for: ServerStores, first: str, streamed: bool
) -> None:
    agent = Turns()
    client = await aiohttp_client(create_app(make_card(), agent, store=store_for()))
    assert await _follow_ups(client, first, streamed=streamed) == 0
    assert agent.runs == FOLLOW_UPS + 1


async def test_follow_ups_on_sqlite_are_never_refused(aiohttp_client: Any, tmp_path: Path) -> None:
    agent = Turns()
    store = SQLiteTaskStore(tmp_path / "tasks.sqlite3")
    client = await aiohttp_client(create_app(make_card(), agent, store=store))
    assert await _follow_ups(client, "ask", streamed=False) == 0
    assert await _follow_ups(client, "auth", streamed=True) == 0


async def test_a_follow_up_supersedes_a_run_that_does_not_return_after_its_turn(
    aiohttp_client: Any, store_for: ServerStores
) -> None:
    agent = Turns()
    settings = ServerSettings(followup_wait_seconds=0.05)
    client = await aiohttp_client(
        create_app(make_card(), agent, settings=settings, store=store_for(settings))
    )
    asked = (await result(client, "SendMessage", send_params("linger")))["task"]
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    runtime = client.server.app[RUNTIME_KEY]
    assert len(runtime.runs) == 1  # it asked for input and lingers
    answer = await result(client, "SendMessage", send_params("ask", taskId=asked["id"]))
    assert answer["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert agent.runs == 2
    # The lingering run was cancelled (it ignored no cancellation) and has ended.
    await poll(lambda: asyncio.sleep(0, runtime.runs), lambda runs: not runs)
    history = [m["parts"][0]["text"] for m in answer["task"]["history"]]
    assert history == ["linger", "more?", "ask", "more?"]


async def test_a_follow_up_while_the_turn_is_open_is_still_busy(aiohttp_client: Any) -> None:
    agent = Turns()
    client = await aiohttp_client(create_app(make_card(), agent, store=FaultyStore()))
    blocked = asyncio.create_task(rpc(client, "SendMessage", send_params("fail")))
    await agent.started.wait()
    page = await result(client, "ListTasks", {})
    task_id = page["tasks"][0]["id"]
    error = (await rpc(client, "SendMessage", send_params("more", taskId=task_id)))["error"]
    assert error["code"] == -32004
    agent.gate.set()
    assert "task" in (await blocked)["result"]
