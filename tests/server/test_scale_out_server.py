"""Several servers on one PostgreSQL schema, in one test process (runtime/a2a_wire/server/_peers.py).

Each server is a ``create_app`` with its own :class:`PostgresTaskStore` (its own process id,
pool, listening connection and keeper) and its own :class:`ScriptedAgent`, served on 127.0.0.1
as ``serve`` serves it; which agent ran what shows which "process" did. The lease clock stands
still, so no lease expires because the machine is slow, while the keepers beat every 0.2 s and
so notice a lease another process ended. Streams have a keep-alive far beyond the tests'
patience: an event that reaches a stream on another server was woken by the store.

The three ``a2a-wire serve`` processes of tests/cli/test_serve_scale_out.py show the same over
real processes, with a kill.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import asyncpg
import pytest
from patience import PATIENCE, poll
from pg_support import deafen
from server_support import (
    EventReader,
    ScriptedAgent,
    envelope,
    error,
    make_card,
    open_stream,
    post,
    result,
    send_params,
    serve_like_the_cli,
    states,
)

from a2a_wire.errors import TaskNotCancelableError
from a2a_wire.server import ServerSettings, create_app
from a2a_wire.server.store import (
    InMemoryTaskStore,
    PostgresTaskStore,
    SQLiteTaskStore,
    StoreUnavailableError,
    shared_store,
)
from a2a_wire.types import Task, TaskState, TaskStatus, TaskStatusUpdateEvent

pytestmark = pytest.mark.slow

QUIET = 3600.0
"""A keep-alive period no test waits out: streams must be woken by events."""


class DeafAgent(ScriptedAgent):
    """A :class:`ScriptedAgent` whose cancel hook waits on :attr:`hook_gate` (a stalled holder)."""

    def __init__(self) -> None:
        super().__init__()
        self.hook_gate = asyncio.Event()

    async def cancel(self, context: Any, events: Any) -> None:
        self.cancels.append(context)
        await self.hook_gate.wait()


class RefusingAgent(ScriptedAgent):
    """A :class:`ScriptedAgent` whose cancel hook refuses (spec 3.1.5: the task goes on)."""

    async def cancel(self, context: Any, events: Any) -> None:
        self.cancels.append(context)
        raise TaskNotCancelableError("this task cannot stop now", metadata={"why": "busy"})


@dataclass
class Server:
    """One server of the cluster: its agent, store and an HTTP session on it."""

    agent: ScriptedAgent
    store: PostgresTaskStore
    client: aiohttp.ClientSession


Cluster = Callable[..., Awaitable[Server]]


@pytest.fixture
async def cluster(postgres_dsn: str, postgres_schema: str) -> AsyncIterator[Cluster]:
    """Starts servers on the test's schema (``cluster(agent=..., cancel_grace_seconds=...)``;
    ``store_type``: a subclass of the PostgreSQL store; ``store_options``: more of its options)."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(
            agent: ScriptedAgent | None = None,
            store_type: type[PostgresTaskStore] = PostgresTaskStore,
            store_options: dict[str, Any] | None = None,
            **settings: Any,
        ) -> Server:
            agent = agent or ScriptedAgent()
            options: dict[str, Any] = {"heartbeat_seconds": 0.2, **(store_options or {})}
            store = store_type(
                postgres_dsn,
                schema=postgres_schema,
                lease_seconds=10.0,
                lease_clock=lambda: 1_000_000.0,
                **options,
            )
            settings.setdefault("keepalive_seconds", QUIET)
            app = create_app(make_card(), agent, store=store, settings=ServerSettings(**settings))
            host, port = await stack.enter_async_context(serve_like_the_cli(app))
            session = aiohttp.ClientSession(base_url=f"http://{host}:{port}")
            client = await stack.enter_async_context(session)
            return Server(agent, store, client)

        yield start


async def started(server: Server, text: str) -> tuple[EventReader, str]:
    """A streamed task on ``server`` whose agent waits at its gate (``wait``, ``chunks``)."""
    reader = await open_stream(server.client, "SendStreamingMessage", send_params(text))
    first = await reader.next()
    assert first is not None
    await server.agent.started.wait()
    return reader, first["result"]["task"]["id"]


async def blocked_wait(server: Server) -> tuple[asyncio.Task[Any], str]:
    """A blocking SendMessage of a ``wait`` task on ``server`` (its answer), and the task's id."""
    blocked = asyncio.create_task(result(server.client, "SendMessage", send_params("wait")))
    await server.agent.started.wait()
    page = await result(server.client, "ListTasks", {})
    return blocked, page["tasks"][0]["id"]


def test_only_the_postgresql_store_is_shared(tmp_path: Any) -> None:
    assert shared_store(InMemoryTaskStore()) is None
    assert shared_store(SQLiteTaskStore(tmp_path / "tasks.db")) is None
    assert shared_store(PostgresTaskStore("postgresql://nowhere")) is not None


async def test_a_stream_on_another_server_is_woken_by_the_store(cluster: Cluster) -> None:
    a, b = await cluster(), await cluster()
    here, task_id = await started(a, "chunks")
    assert (await here.next()) is not None  # WORKING
    there = await open_stream(b.client, "SubscribeToTask", {"id": task_id})
    first = await there.next()
    assert first is not None and first["result"]["task"]["status"]["state"] == "TASK_STATE_WORKING"
    for _ in range(3):  # each chunk is let go only once the other stream has seen the last one
        a.agent.gate.set()
        event = await there.next()
        assert event is not None and "artifactUpdate" in event["result"]
    rest = await there.rest()
    assert states(rest) == ["TASK_STATE_COMPLETED"]
    assert (await here.rest())[-1] == rest[-1]
    assert here.ids[len(here.ids) - len(there.ids) :] == there.ids


async def test_a_cancel_sent_to_another_server_stops_the_run_where_it_runs(
    cluster: Cluster,
) -> None:
    a, c = await cluster(), await cluster()
    blocked, task_id = await blocked_wait(a)
    asked = {"id": task_id, "metadata": {"reason": "user", "n": 2}}
    canceled = await result(c.client, "CancelTask", asked)
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert canceled["status"]["message"]["parts"] == [{"text": "stopped on request"}]
    assert len(a.agent.cancels) == 1 and c.agent.cancels == []  # the hook ran where the task ran
    assert a.agent.cancels[0].metadata == {"reason": "user", "n": 2}  # with the request's metadata
    await poll(lambda: _now(a.agent.cancelled_runs), lambda n: n == 1)  # and its run stopped
    answer = await blocked  # the blocked SendMessage there answers with the CANCELED task
    assert answer["task"]["status"]["state"] == "TASK_STATE_CANCELED"
    again = await error(c.client, "CancelTask", {"id": task_id})
    assert again["code"] == -32002


async def test_a_refusal_by_the_holders_hook_is_the_answer_of_the_asking_server(
    cluster: Cluster,
) -> None:
    """As on one process: -32002 with the hook's message, and the task goes on where it runs."""
    a, c = await cluster(RefusingAgent()), await cluster()
    blocked, task_id = await blocked_wait(a)
    refused = await error(c.client, "CancelTask", {"id": task_id, "metadata": {"k": "v"}})
    assert refused["code"] == -32002 and refused["message"] == "this task cannot stop now"
    assert [d.get("metadata") for d in refused["data"]] == [{"why": "busy"}]
    assert len(a.agent.cancels) == 1 and a.agent.cancels[0].metadata == {"k": "v"}
    assert c.agent.cancels == []
    task = await result(c.client, "GetTask", {"id": task_id})
    assert task["status"]["state"] == "TASK_STATE_WORKING"
    assert a.agent.cancelled_runs == 0  # the run there goes on
    done, _ = await asyncio.wait({blocked}, timeout=1.0)  # time for a wrong answer to arrive
    assert not done  # the blocked SendMessage on A still waits for the run's end
    a.agent.gate.set()
    answer = await blocked
    assert answer["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert a.agent.cancelled_runs == 0


async def test_a_refused_cancel_on_one_server_leaves_a_blocked_send_waiting(
    cluster: Cluster,
) -> None:
    """A blocking SendMessage answers once the task settles, not when a refused cancel ends."""
    a = await cluster(RefusingAgent())
    blocked, task_id = await blocked_wait(a)
    refused = await error(a.client, "CancelTask", {"id": task_id})
    assert refused["code"] == -32002 and refused["message"] == "this task cannot stop now"
    done, _ = await asyncio.wait({blocked}, timeout=1.0)  # time for a wrong answer to arrive
    assert not done
    a.agent.gate.set()
    answer = await blocked
    assert answer["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_task_without_a_run_at_its_holder_is_canceled_by_the_asking_server(
    cluster: Cluster,
) -> None:
    """The holder answers at once that nothing runs there; the asker cancels as one process."""
    a, c = await cluster(), await cluster()
    await a.store.create(Task(id="t1", context_id="c1", status=TaskStatus(state=TaskState.WORKING)))
    assert await c.store.lease_holder("t1") == a.store.process_id
    canceled = await result(c.client, "CancelTask", {"id": "t1", "metadata": {"k": "v"}})
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert canceled["status"]["message"]["parts"] == [{"text": "stopped on request"}]
    assert a.agent.cancels == [] and [x.metadata for x in c.agent.cancels] == [{"k": "v"}]
    assert await c.store.lease_holder("t1") is None


async def test_a_holder_that_does_not_act_in_time_is_canceled_by_the_asking_server(
    cluster: Cluster,
) -> None:
    a = await cluster(DeafAgent(), cancel_grace_seconds=0.1)
    c = await cluster(cancel_grace_seconds=0.1)
    assert isinstance(a.agent, DeafAgent)
    reader, task_id = await started(a, "wait")
    canceled = await result(c.client, "CancelTask", {"id": task_id})
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert "message" not in canceled["status"]  # recorded by c, not by a's hook
    assert len(a.agent.cancels) == 1  # a got the request, and its hook is still stuck
    await poll(lambda: _now(a.agent.cancelled_runs), lambda n: n == 1)  # a's lease ended
    assert states(await reader.rest()) == ["TASK_STATE_WORKING", "TASK_STATE_CANCELED"]
    a.agent.hook_gate.set()


LONG_BOUND = 3600.0
"""A ``cancel_grace_seconds`` for the asking server: its overrule deadline is never reached."""

DEAF = {"heartbeat_seconds": None, "poll_interval": QUIET}
"""A holder's store options under which only a notification, or its listener connecting again,
brings it a cancel request: no heartbeat ticks its keeper and it polls once an hour."""


@pytest.fixture
async def admin(postgres_dsn: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection of the test's own, outside every server's store."""
    conn = await asyncpg.connect(postgres_dsn)
    yield conn
    await conn.close()


async def _requests_waiting(admin: asyncpg.Connection, schema: str) -> int:
    return int(await admin.fetchval(f"SELECT count(*) FROM {schema}.cancel_requests"))


async def test_a_cancel_whose_notification_was_lost_is_answered_by_the_holder(
    cluster: Cluster, admin: asyncpg.Connection, postgres_schema: str
) -> None:
    a = await cluster(store_options=DEAF)
    c = await cluster(cancel_grace_seconds=LONG_BOUND)
    blocked, task_id = await blocked_wait(a)
    listener = await deafen(a.store)  # a hears no notification from now on
    cancel = asyncio.create_task(result(c.client, "CancelTask", {"id": task_id}))
    await poll(lambda: _requests_waiting(admin, postgres_schema), lambda n: n == 1)  # unheard
    pid = listener.server_pid
    await admin.execute("SELECT pg_terminate_backend($1)", pid)  # a's listener is dropped
    canceled = await asyncio.wait_for(cancel, PATIENCE)  # far sooner than c's overrule
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert canceled["status"]["message"]["parts"] == [{"text": "stopped on request"}]  # by a
    assert len(a.agent.cancels) == 1 and listener.reconnects >= 1
    assert (await blocked)["task"]["status"]["state"] == "TASK_STATE_CANCELED"


class LosingReplies(PostgresTaskStore):
    """The PostgreSQL store, refusing the first :attr:`lose` cancel replies (the store failed)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lose = 0

    async def reply_cancel(self, request: Any, reply: Any) -> None:
        if self.lose > 0:
            self.lose -= 1
            raise StoreUnavailableError("gone", retry_after=1.0)
        await super().reply_cancel(request, reply)


async def test_a_cancel_whose_reply_was_lost_is_answered_from_the_ended_task(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    a = await cluster(store_type=LosingReplies)
    c = await cluster(cancel_grace_seconds=LONG_BOUND)
    assert isinstance(a.store, LosingReplies)
    a.store.lose = 1  # a cancels, and cannot say so
    blocked, task_id = await blocked_wait(a)
    with caplog.at_level(logging.INFO, "a2a_wire"):
        cancel = result(c.client, "CancelTask", {"id": task_id})
        canceled = await asyncio.wait_for(cancel, PATIENCE)  # far sooner than c's overrule
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert canceled["status"]["message"]["parts"] == [{"text": "stopped on request"}]  # by a
    assert len(a.agent.cancels) == 1 and c.agent.cancels == []
    lines = [r.getMessage() for r in caplog.records]
    assert any("cancel reply was not sent" in line for line in lines), lines
    assert not any("canceling here" in line for line in lines), lines  # not overruled
    assert (await blocked)["task"]["status"]["state"] == "TASK_STATE_CANCELED"


async def test_a_refusal_whose_reply_was_lost_is_sent_again_by_the_holder(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    a = await cluster(RefusingAgent(), store_type=LosingReplies)
    c = await cluster(cancel_grace_seconds=LONG_BOUND)
    assert isinstance(a.store, LosingReplies)
    a.store.lose = 1  # a's hook refuses, and a cannot say so: the task goes on, held by a
    reader, task_id = await started(a, "wait")
    with caplog.at_level(logging.INFO, "a2a_wire"):
        refused = await asyncio.wait_for(error(c.client, "CancelTask", {"id": task_id}), PATIENCE)
    assert refused["code"] == -32002 and refused["message"] == "this task cannot stop now"
    assert len(a.agent.cancels) == 1  # the request sent again ran no second hook there
    lines = [r.getMessage() for r in caplog.records]
    assert any("sent it again" in line for line in lines), lines
    assert any("answered again" in line for line in lines), lines
    assert a.agent.cancelled_runs == 0  # the run there goes on
    a.agent.gate.set()
    assert states(await reader.rest())[-1] == "TASK_STATE_COMPLETED"


async def _now(value: Any) -> Any:
    return value


async def test_a_lease_ended_elsewhere_stops_the_run_and_records_nothing(
    cluster: Cluster,
) -> None:
    a, b = await cluster(), await cluster()
    blocked, task_id = await blocked_wait(a)
    failed = TaskStatusUpdateEvent(status=TaskStatus(state=TaskState.FAILED))
    done = await b.store.append(task_id, [failed])  # another process ends the task
    await poll(lambda: _now(a.agent.cancelled_runs), lambda n: n == 1)
    answer = await blocked
    assert answer["task"]["status"]["state"] == "TASK_STATE_FAILED"
    log = await b.store.read_events(task_id, 0)
    assert log is not None and log.events[-1].seq == done.events[-1].seq  # nothing after it


async def test_a_follow_up_runs_on_the_server_it_reaches(cluster: Cluster) -> None:
    a, b = await cluster(), await cluster()
    asked = (await result(a.client, "SendMessage", send_params("input")))["task"]
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    follow = send_params("more", taskId=asked["id"], contextId=asked["contextId"])
    answer = (await result(b.client, "SendMessage", follow))["task"]
    assert answer["status"]["state"] == "TASK_STATE_COMPLETED"
    assert answer["artifacts"][0]["parts"] == [{"text": "got more"}]
    assert len(a.agent.contexts) == 1 and len(b.agent.contexts) == 1  # b ran the follow-up
    assert await a.store.lease_holder(asked["id"]) is None  # the finished run left no lease


class RefusingAppends(PostgresTaskStore):
    """The PostgreSQL store, refusing appends once :attr:`refusing` is set, as a database that
    went away does; giving back a lease waits at :attr:`release_gate` (a stalled statement)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refusing = False
        self.releasing = asyncio.Event()
        self.release_gate = asyncio.Event()

    async def append(self, *args: Any, **kwargs: Any) -> Any:
        if self.refusing:
            raise StoreUnavailableError("gone", retry_after=1.0)
        return await super().append(*args, **kwargs)

    async def release(self, task_id: str) -> bool:
        self.releasing.set()
        await self.release_gate.wait()
        return await super().release(task_id)


async def test_a_follow_up_the_store_refuses_is_answered_before_its_lease_is_given_back(
    cluster: Cluster,
) -> None:
    a = await cluster()
    b = await cluster(store_type=RefusingAppends)
    store = b.store
    assert isinstance(store, RefusingAppends)
    asked = (await result(a.client, "SendMessage", send_params("input")))["task"]
    store.refusing = True
    follow = send_params("more", taskId=asked["id"])
    # Answered while the lease's release still waits at its gate (it would wait for ever).
    response = await asyncio.wait_for(post(b.client, envelope("SendMessage", follow)), PATIENCE)
    assert response.status == 503 and response.headers["Retry-After"] == "1"
    assert (await response.json())["error"]["code"] == -32000
    await store.releasing.wait()  # given back meanwhile, in the background
    store.refusing = False
    store.release_gate.set()
    await poll(lambda: a.store.lease_holder(asked["id"]), lambda holder: holder is None)
    answer = (await result(a.client, "SendMessage", follow))["task"]
    assert answer["status"]["state"] == "TASK_STATE_COMPLETED"  # the follow-up, sent again


async def test_a_follow_up_to_a_task_running_elsewhere_is_refused_as_busy(
    cluster: Cluster,
) -> None:
    a, b = await cluster(), await cluster()
    reader, task_id = await started(a, "wait")
    follow = send_params("more", taskId=task_id)
    err = await error(b.client, "SendMessage", follow)
    assert err["code"] == -32004
    assert await b.store.lease_holder(task_id) == a.store.process_id
    assert b.agent.contexts == []
    a.agent.gate.set()
    assert states(await reader.rest())[-1] == "TASK_STATE_COMPLETED"
