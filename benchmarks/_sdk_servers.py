"""The official SDK's servers of the benchmarks (a2a-sdk 1.3.0), for benchmarks/_servers.py.

:func:`run_sdk` serves ``DefaultRequestHandler`` behind the SDK's JSON-RPC Starlette routes
under uvicorn, one worker, on one of three stores:

* in memory (``InMemoryTaskStore``, the default);
* SQLite (``DatabaseTaskStore`` on SQLAlchemy + aiosqlite, the ``a2a-sdk[sqlite]`` extra);
* PostgreSQL in the SDK's *cluster mode* (the ``a2a-sdk[postgresql]`` extra): a
  ``VersionedDatabaseTaskStore``, which writes each event to a ``task_events`` table in the
  transaction that saves the task, and a ``DatabaseTaskEventStream`` over the same table. A
  replica asked to SubscribeToTask for a task it does not run answers the stored task, then
  polls that table for newer events every ``poll_interval_s`` (0.5 s by default, kept here);
  the replica that runs the task streams from memory. Any number of replicas may share one
  database; here the tables live in one PostgreSQL schema (``search_path``), created by the
  first replica at start-up (start the others after it is ready: the SDK's ``create_all`` is
  not safe against a concurrent one).

The agents mirror benchmarks/_agents.py: ``done`` (one text artifact, then COMPLETED), ``chunks``
(one artifact of N chunks) and ``ticks`` (benchmarks/_ticks.py, gated by files in a folder).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from _servers import ARTIFACT_TEXT, HOST, chunk_text
from _ticks import TICKS_ARTIFACT, parse_ticks, sleep_until, tick_schedule, tick_text, wait_gate


def _agent(agent: str, gate_dir: str | None) -> Any:
    from a2a.helpers import new_task_from_user_message, new_text_part
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.tasks import TaskUpdater

    async def chunks(updater: TaskUpdater, text: str) -> None:
        n = int(text)
        for i in range(n):
            await updater.add_artifact(
                [new_text_part(chunk_text(i))],
                artifact_id="out",
                append=i > 0,
                last_chunk=i == n - 1,
            )
            await asyncio.sleep(0)  # as an agent awaiting its model's next token would
        await updater.complete()

    async def ticks(updater: TaskUpdater, text: str) -> None:
        count, interval = parse_ticks(text)
        await updater.start_work()
        if not await wait_gate(Path(gate_dir or ".") / updater.task_id):
            await updater.failed()
            return
        for i, instant in enumerate(tick_schedule(count, interval)):
            await sleep_until(instant)
            await updater.add_artifact(
                [new_text_part(tick_text(i))],
                artifact_id=TICKS_ARTIFACT,
                append=i > 0,
                last_chunk=i == count - 1,
            )
        await updater.complete()

    async def done(updater: TaskUpdater, text: str) -> None:
        await updater.add_artifact([new_text_part(ARTIFACT_TEXT)])
        await updater.complete()

    run = {"done": done, "chunks": chunks, "ticks": ticks}[agent]

    class BenchAgent(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            assert context.message is not None
            task = context.current_task
            if task is None:
                task = new_task_from_user_message(context.message)
                await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            await run(updater, context.message.parts[0].text)

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            raise NotImplementedError

    return BenchAgent()


def _stores(
    db: str | None, dsn: str | None, schema: str | None
) -> tuple[Any, Any, Callable[[], Awaitable[None]] | None]:
    """The task store, the cluster event stream (or ``None``) and a start-up hook (or ``None``)."""
    from a2a.server.tasks import InMemoryTaskStore

    if db:
        from a2a.server.tasks import DatabaseTaskStore
        from sqlalchemy.ext.asyncio import create_async_engine

        return DatabaseTaskStore(create_async_engine(f"sqlite+aiosqlite:///{db}")), None, None
    if not dsn:
        return InMemoryTaskStore(), None, None
    from a2a.server.cluster import DatabaseTaskEventStream, VersionedDatabaseTaskStore
    from sqlalchemy.ext.asyncio import create_async_engine

    url = dsn.replace("postgresql://", "postgresql+asyncpg://", 1).split("?", 1)[0]
    settings = {"search_path": schema or "public", "application_name": f"a2a-bench-{schema}"}
    engine = create_async_engine(url, connect_args={"server_settings": settings})
    store = VersionedDatabaseTaskStore(engine)
    stream = DatabaseTaskEventStream(engine)

    async def initialize() -> None:
        await store.initialize()
        await stream.initialize()

    return store, stream, initialize


def run_sdk(
    port: int,
    agent: str,
    *,
    db: str | None = None,
    dsn: str | None = None,
    schema: str | None = None,
    gate_dir: str | None = None,
) -> None:
    """Serve the SDK on 127.0.0.1:``port`` until SIGTERM (see the module docstring).

    Args:
        port: The port.
        agent: ``done``, ``chunks`` or ``ticks``.
        db: SQLite file of the SDK's ``DatabaseTaskStore``.
        dsn: PostgreSQL of the cluster mode (``postgresql://...``); its schema is ``schema``.
        schema: An existing PostgreSQL schema for the SDK's tables.
        gate_dir: The gate files of the ``ticks`` agent.
    """
    import uvicorn
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
    from starlette.applications import Starlette

    card = AgentCard(
        name="bench",
        description="benchmark agent",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=f"http://{HOST}:{port}/", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="done", name="done", description="answers done", tags=["bench"])],
    )
    store, stream, initialize = _stores(db, dsn, schema)
    handler = DefaultRequestHandler(
        agent_executor=_agent(agent, gate_dir),
        task_store=store,
        agent_card=card,
        event_stream=stream,
    )
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if initialize is not None:  # the tables exist before the first request
            await initialize()
        yield

    app = Starlette(routes=routes, lifespan=lifespan)
    uvicorn.run(app, host=HOST, port=port, workers=1, access_log=False, log_level="warning")
