"""Interop scenario, run in a subprocess: the a2a-sdk 1.3.0 client against an a2a-wire server.

Usage: ``python tests/interop/run_sdk_client.py OUT.json``. pytest never imports this file (the
SDK registers the same a2a.proto as the codec oracle, which fails in one process); the tests in
``test_sdk_client.py`` run it and compare what it wrote.

It starts :func:`a2a_wire.server.create_app` with :class:`interop_agents.InteropAgent` on
127.0.0.1, builds the SDK's JSON-RPC client from the served card (``A2ACardResolver``, then
``ClientFactory``), runs every operation, and writes for each one what the SDK parsed (as
ProtoJSON, ``MessageToDict``) next to what our server stored (``Task.to_dict``).
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
)
from google.protobuf.json_format import MessageToDict
from interop_agents import InteropAgent, interop_card
from interop_support import error_name, serve, write_result

from a2a_wire.netguard import AddressPolicy
from a2a_wire.server import (
    RegisteredClient,
    SecurityConfig,
    ServerSettings,
    TokenIssuer,
    TokenSettings,
    create_app,
    hash_secret,
)
from a2a_wire.server.push import PushSettings
from a2a_wire.server.store import InMemoryTaskStore, TaskQuery
from a2a_wire.types import TaskState

LIST_CONTEXT = "interop-list-context"
WEBHOOK = "http://127.0.0.1:9/webhook"  # never called: the task gets no event while it is set
TOKEN = "interop-bearer-token"


def pb(message: Any) -> dict[str, Any]:
    """ProtoJSON of an SDK message, as the SDK writes it."""
    return MessageToDict(message)  # type: ignore[no-any-return]


def request(
    text: str,
    *,
    task_id: str = "",
    context_id: str = "",
    return_immediately: bool = False,
    history_length: int | None = None,
) -> SendMessageRequest:
    message = Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )
    req = SendMessageRequest(message=message)
    if return_immediately:
        req.configuration.return_immediately = True
    if history_length is not None:
        req.configuration.history_length = history_length
    return req


async def collect(events: AsyncIterator[StreamResponse]) -> list[dict[str, Any]]:
    return [pb(event) async for event in events]


class Scenario:
    """Runs the operations; ``out`` maps each cell to what both sides hold."""

    def __init__(self, base: str, store: InMemoryTaskStore, agent: InteropAgent) -> None:
        self.base = base
        self.store = store
        self.agent = agent
        self.out: dict[str, Any] = {}

    async def stored(self, task_id: str) -> dict[str, Any]:
        task = await self.store.get(task_id)
        assert task is not None, task_id
        return task.to_dict()

    async def settled(self, task_id: str) -> None:
        deadline = time.monotonic() + 50  # within the scenario's 60 s; the machine may be busy
        while time.monotonic() < deadline:
            task = await self.store.get(task_id)
            if task is not None and task.status is not None:
                if task.status.state == TaskState.COMPLETED:
                    return
            await asyncio.sleep(0.01)
        raise AssertionError(f"task {task_id} did not complete")

    async def run(self) -> dict[str, Any]:
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, self.base).get_agent_card()
            served = (await http.get(self.base + "/.well-known/agent-card.json")).json()
        self.out["card"] = {"sdk": pb(card), "served": served}
        blocking = ClientFactory(ClientConfig(streaming=False)).create(card)
        streaming = ClientFactory(ClientConfig(streaming=True)).create(card)
        try:
            await self.send(blocking)
            await self.stream(streaming)
            await self.get_task(blocking)
            await self.list_tasks(blocking)
            await self.cancel(blocking)
            await self.subscribe(blocking, streaming)
            await self.errors(blocking)
            await self.push_configs(blocking)
        finally:
            await blocking.close()
            await streaming.close()
        return self.out

    async def send(self, client: Client) -> None:
        [event] = await collect(client.send_message(request("complete")))
        task_id = event["task"]["id"]
        self.out["send_blocking"] = {"sdk": event, "stored": await self.stored(task_id)}

        [event] = await collect(client.send_message(request("gate", return_immediately=True)))
        task_id = event["task"]["id"]
        self.out["send_return_immediately"] = {"sdk": event, "stored": await self.stored(task_id)}
        self.agent.gate.set()
        await self.settled(task_id)
        self.agent.gate.clear()

        before = (await self.store.list(TaskQuery(page_size=100))).total_size
        [event] = await collect(client.send_message(request("reply")))
        after = (await self.store.list(TaskQuery(page_size=100))).total_size
        self.out["send_message_reply"] = {"sdk": event, "tasks_created": after - before}

    async def stream(self, client: Client) -> None:
        events = await collect(client.send_message(request("chunks")))
        task_id = events[0]["task"]["id"]
        self.out["send_streaming"] = {"sdk": events, "stored": await self.stored(task_id)}

    async def get_task(self, client: Client) -> None:
        [first] = await collect(client.send_message(request("input")))
        task_id = first["task"]["id"]
        await collect(client.send_message(request("more", task_id=task_id)))
        views: dict[str, Any] = {}
        for length in (None, 0, 1, 2, 3, 10):
            req = GetTaskRequest(id=task_id)
            if length is not None:
                req.history_length = length
            views[str(length)] = pb(await client.get_task(req))
        self.out["get_task_history"] = {"sdk": views, "stored": await self.stored(task_id)}

    async def list_tasks(self, client: Client) -> None:
        for _ in range(5):
            await collect(client.send_message(request("complete", context_id=LIST_CONTEXT)))
        pages = []
        token = ""
        while True:
            req = ListTasksRequest(context_id=LIST_CONTEXT, page_size=2, page_token=token)
            page = await client.list_tasks(req)
            pages.append(pb(page))
            token = page.next_page_token
            if not token or len(pages) > 5:
                break
        req = ListTasksRequest(
            context_id=LIST_CONTEXT, page_size=5, include_artifacts=True, history_length=1
        )
        full = pb(await client.list_tasks(req))
        stored = await self.store.list(TaskQuery(context_id=LIST_CONTEXT, page_size=100))
        self.out["list_tasks_paging"] = {
            "sdk": pages,
            "sdk_with_artifacts": full,
            "stored": [task.to_dict() for task in stored.tasks],
        }

    async def cancel(self, client: Client) -> None:
        [event] = await collect(client.send_message(request("hold", return_immediately=True)))
        task_id = event["task"]["id"]
        canceled = pb(await client.cancel_task(CancelTaskRequest(id=task_id)))
        again = await error_name(client.cancel_task(CancelTaskRequest(id=task_id)))
        self.out["cancel_task"] = {
            "sdk": canceled,
            "stored": await self.stored(task_id),
            "cancel_again": again,
        }

    async def subscribe(self, blocking: Client, streaming: Client) -> None:
        [event] = await collect(blocking.send_message(request("gate", return_immediately=True)))
        task_id = event["task"]["id"]
        stream = streaming.subscribe(SubscribeToTaskRequest(id=task_id))
        first = pb(await anext(stream))
        self.agent.gate.set()
        rest = await collect(stream)
        self.agent.gate.clear()
        self.out["subscribe_to_task"] = {
            "sdk": [first, *rest],
            "stored": await self.stored(task_id),
        }

    async def errors(self, client: Client) -> None:
        missing = await error_name(client.get_task(GetTaskRequest(id="no-such-task")))
        self.out["error_task_not_found"] = {"sdk": missing}

    async def push_configs(self, client: Client) -> None:
        [first] = await collect(client.send_message(request("input")))
        task_id = first["task"]["id"]
        config = TaskPushNotificationConfig(
            task_id=task_id,
            url=WEBHOOK,
            token="tok-1",
            authentication=AuthenticationInfo(scheme="Bearer", credentials="secret"),
        )
        created = await client.create_task_push_notification_config(config)
        stored = await self.store.get_push_config(task_id, created.id)
        assert stored is not None
        got = await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task_id, id=created.id)
        )
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task_id)
        )
        await client.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=task_id, id=created.id)
        )
        after = await self.store.list_push_configs(task_id)
        self.out["push_configs"] = {
            "sdk": {"created": pb(created), "got": pb(got), "listed": pb(listed)},
            "stored": stored.to_dict(),
            "stored_after_delete": [c.to_dict() for _, c in after],
        }


async def extended_card_cell() -> dict[str, Any]:
    """GetExtendedAgentCard from a server with a registered client (spec 3.1.11, 13.3)."""
    security = SecurityConfig(
        clients=[RegisteredClient(id="sdk", token_hash=hash_secret(TOKEN, log2_n=4))],
        extended_card=True,
    )
    app = create_app(interop_card(extended=True), InteropAgent(), security=security)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with serve(app) as base, httpx.AsyncClient(headers=headers) as http:
        card = await A2ACardResolver(http, base).get_agent_card()
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        extended = await client.get_extended_agent_card(GetExtendedAgentCardRequest())
        body = {"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}}
        sent = await http.post(card.supported_interfaces[0].url, json=body)
        anonymous = await http.post(
            card.supported_interfaces[0].url, json=body, headers={"Authorization": ""}
        )
    return {
        "sdk": pb(extended),
        "served": sent.json()["result"],
        "public": pb(card),
        "anonymous_status": anonymous.status_code,
    }


async def oauth_cell() -> dict[str, Any]:
    """The SDK client with a client-credentials token of the loopback provider (issue 27)."""
    sys.path.append(str(Path(__file__).resolve().parents[1]))  # tests/, for the provider
    from oauth_provider import AUDIENCE, Provider

    provider = await Provider().start()
    provider.add_client("sdk-client", "sdk-secret", "a2a")
    trusted = TokenIssuer(
        provider.issuer, AUDIENCE, required_scopes=("a2a",), token_url=provider.token_url
    )
    tokens = TokenSettings(allow_http=True, allowlist=AddressPolicy.from_strings(["127.0.0.1"]))
    security = SecurityConfig(oauth2=[trusted], tokens=tokens)
    app = create_app(interop_card(), InteropAgent(), security=security)
    try:
        async with httpx.AsyncClient() as plain:
            answer = await plain.post(
                provider.token_url,
                data={"grant_type": "client_credentials", "scope": "a2a"},
                auth=("sdk-client", "sdk-secret"),
            )
            token = answer.json()["access_token"]
        headers = {"Authorization": f"Bearer {token}"}
        async with serve(app) as base, httpx.AsyncClient(headers=headers) as http:
            card = await A2ACardResolver(http, base).get_agent_card()
            client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
            events = [pb(event) async for event in client.send_message(request("hello"))]
            await client.close()
            body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
            anonymous = await http.post(
                card.supported_interfaces[0].url, json=body, headers={"Authorization": ""}
            )
    finally:
        await provider.stop()
    return {
        "card": pb(card),
        "events": events,
        "anonymous_status": anonymous.status_code,
        "challenge": anonymous.headers.get("WWW-Authenticate", ""),
    }


async def main(out: Path) -> None:
    agent = InteropAgent()
    store = InMemoryTaskStore()
    push = PushSettings(allow_http=True, allowlist=AddressPolicy.from_strings(["127.0.0.1"]))
    settings = ServerSettings(push=push)
    app = create_app(interop_card(push=True), agent, store=store, settings=settings)
    async with serve(app) as base:
        result = await Scenario(base, store, agent).run()
    result["extended_card"] = await extended_card_cell()
    result["oauth"] = await oauth_cell()
    write_result(out, result)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
