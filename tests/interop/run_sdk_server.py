"""Interop scenario, run in a subprocess: the a2a-wire client against the a2a-sdk 1.3.0 server.

Usage: ``python tests/interop/run_sdk_server.py OUT.json``. pytest never imports this file (see
``run_sdk_client.py``); ``test_sdk_server.py`` runs it and compares what it wrote.

The SDK's server is its own JSON-RPC Starlette routes (``create_agent_card_routes`` and
``create_jsonrpc_routes`` over ``DefaultRequestHandler``) under uvicorn on 127.0.0.1, with
:class:`SdkAgent`, an executor of the SDK's kind that follows the script of
:mod:`interop_agents`. Our :class:`~a2a_wire.client.A2AClient` connects through the served card
and runs every operation; for each, the output holds what our client parsed (``to_dict``) next
to what the SDK's stores hold (``MessageToDict``). It also sends two raw requests without
``A2A-Version`` and records the SDK server's answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryPushNotificationConfigStore, InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2 as pb2
from google.protobuf.json_format import MessageToDict
from interop_support import error_name, write_result
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import Response

from a2a_wire.client import A2AClient, ClientCredentials, ClientSettings, EventStream
from a2a_wire.types import (
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    SendMessageResponse,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
)

ALLOW = ClientSettings(allow=("127.0.0.1",))
LIST_CONTEXT = "interop-list-context"
SDK_CONTEXT = ServerCallContext()  # the unauthenticated caller every request here is


def pb(message: Any) -> dict[str, Any]:
    """ProtoJSON of an SDK message, as the SDK writes it."""
    return MessageToDict(message)  # type: ignore[no-any-return]


class SdkAgent(AgentExecutor):
    """The interop script (see interop_agents.py), written against the SDK's executor API.

    It starts every task with a SUBMITTED Task event, as the SDK expects, and adds one script:
    ``pause`` stays SUBMITTED until the gate opens, then goes on like ``complete``.
    """

    def __init__(self) -> None:
        self.gate = asyncio.Event()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        assert context.task_id is not None and context.context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if context.current_task is not None:  # a follow-up to an interrupted task
            await updater.start_work()
            await updater.add_artifact([pb2.Part(text=f"result of {text}")], name="answer")
            await updater.complete(updater.new_agent_message([pb2.Part(text="done")]))
            return
        if text == "reply":
            await event_queue.enqueue_event(
                new_text_message(f"reply to {text}", context_id=context.context_id)
            )
            return
        assert context.message is not None
        await event_queue.enqueue_event(new_task_from_user_message(context.message))
        if text == "pause":  # SUBMITTED until the gate opens, so the stored task stays put
            await self.gate.wait()
        if text == "input":
            await updater.requires_input(updater.new_agent_message([pb2.Part(text="need more")]))
            return
        await updater.start_work()
        if text == "gate":
            await self.gate.wait()
        elif text == "hold":
            await asyncio.Event().wait()  # until canceled
        if text == "chunks":
            await updater.add_artifact(
                [pb2.Part(text="chunk-1 ")], artifact_id="a1", name="chunked"
            )
            await updater.add_artifact(
                [pb2.Part(text="chunk-2")], artifact_id="a1", append=True, last_chunk=True
            )
        else:
            await updater.add_artifact([pb2.Part(text=f"result of {text}")], name="answer")
        await updater.complete(updater.new_agent_message([pb2.Part(text="done")]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel(updater.new_agent_message([pb2.Part(text="canceled on request")]))


def sdk_card(base: str, *, name: str = "a2a-sdk interop agent") -> pb2.AgentCard:
    return pb2.AgentCard(
        name=name,
        description="Runs the interop scenarios",
        version="1.0.0",
        supported_interfaces=[
            pb2.AgentInterface(url=base + "/", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=pb2.AgentCapabilities(
            streaming=True, push_notifications=True, extended_agent_card=True
        ),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[pb2.AgentSkill(id="script", name="Script", description="Scripted", tags=["t"])],
    )


@contextlib.asynccontextmanager
async def sdk_server(
    agent: SdkAgent,
    *,
    secure: Callable[[pb2.AgentCard], None] | None = None,
    middleware: Sequence[Middleware] = (),
) -> AsyncIterator[tuple[str, DefaultRequestHandler]]:
    """Run the SDK's JSON-RPC app under uvicorn on 127.0.0.1; yield its base URL and handler.

    ``secure`` adds security declarations to the card; ``middleware`` wraps the app.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    card = sdk_card(base)
    if secure is not None:
        secure(card)
    handler = DefaultRequestHandler(
        agent_executor=agent,
        task_store=InMemoryTaskStore(),
        agent_card=card,
        push_config_store=InMemoryPushNotificationConfigStore(),
        extended_agent_card=sdk_card(base, name="a2a-sdk interop agent (extended)"),
    )
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")]
    app = Starlette(routes=routes, middleware=list(middleware))
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if serving.done():
                serving.result()
            await asyncio.sleep(0.01)
        yield base, handler
    finally:
        server.should_exit = True
        await serving
        await handler.aclose()
        sock.close()


async def collect(stream: EventStream) -> list[dict[str, Any]]:
    async with stream:
        return [event.to_dict() async for event in stream]


def sent(response: SendMessageResponse) -> dict[str, Any]:
    return response.to_dict()


class Scenario:
    """Runs the operations; ``out`` maps each cell to what both sides hold."""

    def __init__(self, base: str, handler: DefaultRequestHandler, agent: SdkAgent) -> None:
        self.base = base
        self.handler = handler
        self.agent = agent
        self.out: dict[str, Any] = {}

    async def stored(self, task_id: str) -> dict[str, Any]:
        task = await self.handler.task_store.get(task_id, SDK_CONTEXT)  # type: ignore[call-arg]
        assert task is not None, task_id
        return pb(task)

    async def count(self) -> int:
        page = await self.handler.task_store.list(  # type: ignore[call-arg]
            pb2.ListTasksRequest(page_size=100), SDK_CONTEXT
        )
        return int(page.total_size)

    async def settled(self, client: A2AClient, task_id: str) -> None:
        await client.wait(task_id, poll_interval=0.01, max_interval=0.05, timeout=10)

    async def run(self) -> dict[str, Any]:
        async with await A2AClient.connect(self.base, settings=ALLOW) as client:
            assert client.card is not None
            async with aiohttp.ClientSession() as http:
                async with http.get(self.base + "/.well-known/agent-card.json") as response:
                    served = await response.json()
                await self.no_version(http)
            self.out["card"] = {"ours": client.card.to_dict(), "served": served, "url": client.url}
            await self.send(client)
            await self.stream(client)
            await self.get_task(client)
            await self.list_tasks(client)
            await self.cancel(client)
            await self.subscribe(client)
            await self.errors(client)
            await self.push_configs(client)
            await self.extended_card(client)
        return self.out

    async def no_version(self, http: aiohttp.ClientSession) -> None:
        answers = {}
        for method in ("GetTask", "SendStreamingMessage"):
            params: dict[str, Any] = {"id": "no-such-task"}
            if method == "SendStreamingMessage":
                msg = {"messageId": "m-no-version", "role": "ROLE_USER", "parts": [{"text": "x"}]}
                params = {"message": msg}
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            async with http.post(self.base + "/", json=body) as response:
                answers[method] = {
                    "status": response.status,
                    "contentType": response.content_type,
                    "body": await response.text(),
                }
        self.out["no_version"] = answers

    async def send(self, client: A2AClient) -> None:
        result = await client.send_text("complete")
        assert result.task is not None
        self.out["send_blocking"] = {
            "ours": sent(result),
            "stored": await self.stored(result.task.id),
        }

        result = await client.send_text("pause", return_immediately=True)
        assert result.task is not None
        task_id = result.task.id
        self.out["send_return_immediately"] = {
            "ours": sent(result),
            "stored": await self.stored(task_id),
        }
        self.agent.gate.set()
        await self.settled(client, task_id)
        self.agent.gate.clear()

        before = await self.count()
        result = await client.send_text("reply")
        after = await self.count()
        self.out["send_message_reply"] = {"ours": sent(result), "tasks_created": after - before}

    async def stream(self, client: A2AClient) -> None:
        events = await collect(client.send_streaming_message(client.text_request("chunks")))
        task_id = events[0]["task"]["id"]
        self.out["send_streaming"] = {"ours": events, "stored": await self.stored(task_id)}

    async def get_task(self, client: A2AClient) -> None:
        first = await client.send_text("input")
        assert first.task is not None
        task_id = first.task.id
        await client.send_text("more", task_id=task_id)
        views = {}
        for length in (None, 0, 1, 2, 3, 10):
            task = await client.get_task(GetTaskRequest(id=task_id, history_length=length))
            views[str(length)] = task.to_dict()
        self.out["get_task_history"] = {"ours": views, "stored": await self.stored(task_id)}

    async def list_tasks(self, client: A2AClient) -> None:
        for _ in range(5):
            await client.send_text("complete", context_id=LIST_CONTEXT)
        pages = []
        token = ""
        while True:
            page = await client.list_tasks(
                ListTasksRequest(context_id=LIST_CONTEXT, page_size=2, page_token=token)
            )
            pages.append(page.to_dict())
            token = page.next_page_token
            if not token or len(pages) > 5:
                break
        full = await client.list_tasks(
            ListTasksRequest(
                context_id=LIST_CONTEXT, page_size=5, include_artifacts=True, history_length=1
            )
        )
        stored = await self.handler.task_store.list(  # type: ignore[call-arg]
            pb2.ListTasksRequest(context_id=LIST_CONTEXT, page_size=100), SDK_CONTEXT
        )
        self.out["list_tasks_paging"] = {
            "ours": pages,
            "ours_with_artifacts": full.to_dict(),
            "stored": [pb(task) for task in stored.tasks],
        }

    async def cancel(self, client: A2AClient) -> None:
        result = await client.send_text("hold", return_immediately=True)
        assert result.task is not None
        task_id = result.task.id
        canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
        again = await error_name(client.cancel_task(CancelTaskRequest(id=task_id)))
        self.out["cancel_task"] = {
            "ours": canceled.to_dict(),
            "stored": await self.stored(task_id),
            "cancel_again": again,
        }

    async def subscribe(self, client: A2AClient) -> None:
        result = await client.send_text("gate", return_immediately=True)
        assert result.task is not None
        task_id = result.task.id
        events = []
        async with client.subscribe_to_task(SubscribeToTaskRequest(id=task_id)) as stream:
            events.append((await anext(stream)).to_dict())
            self.agent.gate.set()
            events += [event.to_dict() async for event in stream]
        self.agent.gate.clear()
        self.out["subscribe_to_task"] = {"ours": events, "stored": await self.stored(task_id)}

    async def errors(self, client: A2AClient) -> None:
        missing = await error_name(client.get_task(GetTaskRequest(id="no-such-task")))
        self.out["error_task_not_found"] = {"ours": missing}

    async def push_configs(self, client: A2AClient) -> None:
        result = await client.send_text("complete")
        assert result.task is not None
        task_id = result.task.id
        config = TaskPushNotificationConfig(
            task_id=task_id,
            url="https://webhook.example.com/a2a",
            token="tok-1",
            authentication=AuthenticationInfo(scheme="Bearer", credentials="secret"),
        )
        created = await client.create_task_push_notification_config(config)
        store = self.handler._push_config_store  # noqa: SLF001 - the SDK keeps no public getter
        assert store is not None
        stored = [pb(c) for c in await store.get_info(task_id, SDK_CONTEXT)]
        got = await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task_id, id=created.id)
        )
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task_id)
        )
        await client.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=task_id, id=created.id)
        )
        after = [pb(c) for c in await store.get_info(task_id, SDK_CONTEXT)]
        self.out["push_configs"] = {
            "ours": {
                "created": created.to_dict(),
                "got": got.to_dict(),
                "listed": listed.to_dict(),
            },
            "stored": stored,
            "stored_after_delete": after,
        }

    async def extended_card(self, client: A2AClient) -> None:
        card = await client.get_extended_agent_card()
        expected = self.handler.extended_agent_card
        assert expected is not None
        self.out["extended_card"] = {"ours": card.to_dict(), "stored": pb(expected)}


class BearerCheck(BaseHTTPMiddleware):
    """The SDK server behind a bearer check: only tokens the provider issued and not revoked."""

    def __init__(self, app: Any, issued: list[dict[str, Any]], revoked: set[str]) -> None:
        super().__init__(app)
        self.issued = issued
        self.revoked = revoked
        self.refusals = 0

    async def dispatch(self, request: Request, call_next: Any) -> Response:
        if request.url.path.startswith("/.well-known/"):
            return await call_next(request)  # type: ignore[no-any-return]
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        known = {t["access_token"] for t in self.issued} - self.revoked
        if scheme.lower() != "bearer" or token not in known:
            self.refusals += 1
            challenge = 'Bearer realm="sdk", error="invalid_token"'
            return Response(status_code=401, headers={"WWW-Authenticate": challenge})
        return await call_next(request)  # type: ignore[no-any-return]


def oauth2_card(token_url: str) -> Callable[[pb2.AgentCard], None]:
    def secure(card: pb2.AgentCard) -> None:
        flow = pb2.ClientCredentialsOAuthFlow(token_url=token_url, scopes={"a2a": "call the agent"})
        scheme = pb2.OAuth2SecurityScheme(flows=pb2.OAuthFlows(client_credentials=flow))
        card.security_schemes["oauth2"].CopyFrom(pb2.SecurityScheme(oauth2_security_scheme=scheme))
        card.security_requirements.append(
            pb2.SecurityRequirement(schemes={"oauth2": pb2.StringList(list=["a2a"])})
        )

    return secure


async def oauth_cell() -> dict[str, Any]:
    """Our client with ClientCredentials against the SDK's server behind a bearer check."""
    sys.path.append(str(Path(__file__).resolve().parents[1]))  # tests/, for the provider
    from oauth_provider import Provider

    provider = await Provider().start()
    provider.add_client("wire-client", "wire-secret", "a2a")
    revoked: set[str] = set()
    checks: list[BearerCheck] = []

    class Checked(BearerCheck):
        def __init__(self, app: Any) -> None:
            super().__init__(app, provider.issued, revoked)
            checks.append(self)

    agent = SdkAgent()
    credentials = ClientCredentials("wire-client", "wire-secret", settings=ALLOW)
    try:
        async with (
            sdk_server(
                agent, secure=oauth2_card(provider.token_url), middleware=[Middleware(Checked)]
            ) as (base, _),
            await A2AClient.connect(base, settings=ALLOW, credentials=credentials) as client,
        ):
            first = await client.send_text("complete")
            revoked.add(provider.issued[-1]["access_token"])  # the agent's side revokes it
            second = await client.send_text("complete")
    finally:
        await provider.stop()
    return {
        "states": [answer.to_dict()["task"]["status"]["state"] for answer in (first, second)],
        "token_requests": provider.token_hits,
        "refusals": sum(check.refusals for check in checks),
    }


async def main(out: Path) -> None:
    agent = SdkAgent()
    async with sdk_server(agent) as (base, handler):
        result = await Scenario(base, handler, agent).run()
    result["oauth"] = await oauth_cell()
    write_result(out, result)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
