"""Shared pieces of the server tests: a scripted agent, cards, and raw JSON-RPC/SSE helpers.

The tests talk to the server over real HTTP on 127.0.0.1 (pytest-aiohttp's ``aiohttp_client``)
with hand-built bodies, so that they check the wire format itself.

:class:`ScriptedAgent` picks its behaviour from the text of the message's first part:

========== ================================================================================
``echo``   (default) WORKING, an artifact echoing the text, COMPLETED
``reply``  a direct Message reply, no task
``task``   puts its own Task (WORKING) first, then COMPLETED
``input``  INPUT_REQUIRED; a follow-up message completes the task with an artifact
``linger`` as ``input``, but ``execute`` returns only after :attr:`ScriptedAgent.gate`
``wait``   WORKING, then waits on :attr:`ScriptedAgent.gate`, then COMPLETED
``chunks`` WORKING, three chunks of one artifact (each after the gate), COMPLETED
``raise``  WORKING, then raises
``silent`` returns without any event
``early``  WORKING, then returns
``reject`` REJECTED
========== ================================================================================
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from aiohttp import web

from a2a_wire import codec
from a2a_wire._protocol.sse import SSEDecoder
from a2a_wire.server import AgentExecutor, EventQueue, RequestContext, TaskUpdater
from a2a_wire.types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentSkill,
    Task,
    TaskState,
    TaskStatus,
)

V1 = {"A2A-Version": "1.0"}


class ScriptedAgent(AgentExecutor):
    """A test agent; see the module docstring for its script."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started = asyncio.Event()
        self.contexts: list[RequestContext] = []
        self.cancels: list[RequestContext] = []
        self.cancelled_runs = 0
        self.cancel_emits = True

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        self.contexts.append(context)
        assert context.message is not None
        text = context.message.parts[0].text or ""
        updater = TaskUpdater(events, context)
        if context.task is not None:  # a follow-up
            await updater.start_work()
            await updater.add_artifact(f"got {text}")
            await updater.complete()
            return
        try:
            await self._script(text, context, updater, events)
        except asyncio.CancelledError:
            self.cancelled_runs += 1
            raise

    async def _script(
        self, text: str, context: RequestContext, updater: TaskUpdater, events: EventQueue
    ) -> None:
        if text == "reply":
            await events.enqueue_event(updater.new_message(f"reply to {context.context_id}"))
            return
        if text == "task":
            status = TaskStatus(state=TaskState.WORKING)
            await events.enqueue_event(Task(id=context.task_id, status=status))
            await updater.complete()
            return
        if text in ("input", "linger"):
            await updater.require_input("need more")
            if text == "linger":
                await self.gate.wait()
            return
        if text == "reject":
            await updater.reject("no")
            return
        if text == "silent":
            return
        await updater.start_work()
        if text == "early":
            return
        if text == "raise":
            raise RuntimeError("secret detail of the agent failure")
        if text in ("wait", "chunks"):
            self.started.set()
        if text == "wait":
            await self.gate.wait()
        if text == "chunks":
            artifact_id = ""
            for i in range(3):
                await self.gate.wait()
                self.gate.clear()
                artifact_id = await updater.add_artifact(
                    f"c{i}", artifact_id=artifact_id, append=i > 0, last_chunk=i == 2
                )
        else:
            await updater.add_artifact(text)
        await updater.complete("done")

    async def cancel(self, context: RequestContext, events: EventQueue) -> None:
        self.cancels.append(context)
        if self.cancel_emits:
            await TaskUpdater(events, context).cancel("stopped on request")


def make_card(
    *,
    streaming: bool = True,
    push: bool | None = None,
    extended: bool | None = None,
    required_extension: str = "",
) -> AgentCard:
    """A small card with the given capabilities."""
    extensions = (
        [AgentExtension(uri=required_extension, required=True)] if required_extension else []
    )
    caps = AgentCapabilities(
        streaming=streaming,
        push_notifications=push,
        extended_agent_card=extended,
        extensions=extensions,
    )
    return AgentCard(
        name="scripted",
        description="test agent",
        version="1.2.3",
        capabilities=caps,
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="echoes", tags=["test"])],
    )


def message(text: str, **fields: Any) -> dict[str, Any]:
    """A user message as JSON."""
    msg: dict[str, Any] = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    msg.update(fields)
    return msg


def send_params(
    text: str, configuration: dict[str, Any] | None = None, **fields: Any
) -> dict[str, Any]:
    """SendMessage params for a user text message."""
    params: dict[str, Any] = {"message": message(text, **fields)}
    if configuration is not None:
        params["configuration"] = configuration
    return params


def envelope(method: str, params: Any = None, rid: Any = 1) -> dict[str, Any]:
    """A JSON-RPC request object."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        body["params"] = params
    return body


async def post(
    client: Any, body: Any, *, headers: dict[str, str] | None = None, path: str = "/"
) -> aiohttp.ClientResponse:
    """POST a JSON body (bytes are sent as they are) with the 1.0 version header."""
    data = body if isinstance(body, bytes) else codec.dumps(body)
    sent = {"Content-Type": "application/json", **V1, **(headers or {})}
    response: aiohttp.ClientResponse = await client.post(path, data=data, headers=sent)
    return response


async def rpc(client: Any, method: str, params: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Call a method; return the response object (HTTP 200 JSON is asserted)."""
    response = await post(client, envelope(method, params), **kwargs)
    assert response.status == 200, await response.text()
    assert response.content_type == "application/json"
    answer: dict[str, Any] = await response.json()
    assert answer["jsonrpc"] == "2.0"
    return answer


async def result(client: Any, method: str, params: Any = None, **kwargs: Any) -> Any:
    """Call a method and return its result (asserting there is no error)."""
    answer = await rpc(client, method, params, **kwargs)
    assert "error" not in answer, answer
    return answer["result"]


async def error(client: Any, method: str, params: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Call a method and return its error object (asserting there is one)."""
    answer = await rpc(client, method, params, **kwargs)
    assert "result" not in answer, answer
    err: dict[str, Any] = answer["error"]
    return err


def reason(err: dict[str, Any]) -> str:
    """The ErrorInfo reason of an error object."""
    infos = [d for d in err.get("data", []) if d["@type"].endswith("google.rpc.ErrorInfo")]
    assert len(infos) == 1, err
    assert infos[0]["domain"] == "a2a-protocol.org"
    return str(infos[0]["reason"])


def violations(err: dict[str, Any]) -> list[str]:
    """The field paths of an error's BadRequest detail."""
    bad = [d for d in err.get("data", []) if d["@type"].endswith("google.rpc.BadRequest")]
    assert len(bad) == 1, err
    return [v["field"] for v in bad[0]["fieldViolations"]]


class EventReader:
    """Reads JSON-RPC responses from an SSE response, one at a time.

    :attr:`ids` holds the SSE ``id`` of every event handed out so far (``None``: it had none).
    """

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        assert response.status == 200
        assert response.content_type == "text/event-stream"
        self.response = response
        self.decoder = SSEDecoder()
        self.pending: list[tuple[str | None, dict[str, Any]]] = []
        self.ids: list[str | None] = []
        self.ended = False

    async def next(self) -> dict[str, Any] | None:
        """The next event's JSON-RPC object, or ``None`` once the stream ended."""
        while not self.pending and not self.ended:
            chunk = await self.response.content.readany()
            if not chunk:
                self.ended = True
                self.decoder.close()
                break
            # The decoder's id is the last one in effect (SSE): exact for our streams, whose
            # events all carry one, except a Message reply, which is alone on its stream.
            self.pending.extend((e.id, codec.loads(e.data)) for e in self.decoder.feed(chunk))
        if not self.pending:
            return None
        event_id, obj = self.pending.pop(0)
        self.ids.append(event_id)
        return obj

    async def comments(self, count: int) -> None:
        """Read on until ``count`` comments (keep-alives) arrived; events read meanwhile wait."""
        while self.decoder.comments_seen < count:
            chunk = await self.response.content.readany()
            assert chunk, f"the stream ended after {self.decoder.comments_seen} comments"
            self.pending.extend(codec.loads(e.data) for e in self.decoder.feed(chunk))

    async def rest(self) -> list[dict[str, Any]]:
        """Every remaining event until the stream ends."""
        out = []
        while (event := await self.next()) is not None:
            out.append(event)
        return out


async def open_stream(
    client: Any, method: str, params: Any, rid: Any = 1, **kwargs: Any
) -> EventReader:
    """POST a streaming call and return its reader."""
    return EventReader(await post(client, envelope(method, params, rid), **kwargs))


async def stream(
    client: Any, method: str, params: Any, rid: Any = 1, **kwargs: Any
) -> list[dict[str, Any]]:
    """Every event of a streaming call."""
    return await (await open_stream(client, method, params, rid, **kwargs)).rest()


async def plain_error(
    client: Any, method: str, params: Any, rid: Any = 1, **kwargs: Any
) -> dict[str, Any]:
    """The error of a streaming call refused before its first event: a plain JSON-RPC answer."""
    response = await post(client, envelope(method, params, rid), **kwargs)
    assert response.status == 200
    assert response.content_type == "application/json"
    answer: dict[str, Any] = await response.json()
    assert answer["id"] == rid and "result" not in answer
    return answer["error"]


def kinds(events: list[dict[str, Any]]) -> list[str]:
    """The StreamResponse member of each event (or ``error``)."""
    return [next(iter(e["result"])) if "result" in e else "error" for e in events]


def states(events: list[dict[str, Any]]) -> list[str]:
    """The task state each event carries, where it carries one."""
    out = []
    for event in events:
        res = event.get("result", {})
        if "task" in res:
            out.append(res["task"]["status"]["state"])
        elif "statusUpdate" in res:
            out.append(res["statusUpdate"]["status"]["state"])
    return out


@contextlib.asynccontextmanager
async def serve_like_the_cli(app: Any) -> AsyncIterator[tuple[str, int]]:
    """Serve ``app`` on 127.0.0.1 as ``a2a-wire serve`` does; yield its address.

    aiohttp's test server cancels a handler whose client leaves (``handler_cancellation``);
    ``serve``'s runner, like aiohttp's default, lets it run on, which is what these tests need.
    """
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        yield str(host), int(port)
    finally:
        await runner.cleanup()


class RawConnection:
    """One TCP connection to a test server, for requests an HTTP client would not send.

    Every read has a generous deadline, so a test waits for the server, never for the clock.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, address: tuple[str, int]) -> RawConnection:
        """Connect to ``(host, port)``, e.g. from :func:`serve_like_the_cli`."""
        reader, writer = await asyncio.open_connection(*address)
        return cls(reader, writer)

    async def __aenter__(self) -> RawConnection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def interim(self, status: int, deadline: float = 10.0) -> None:
        """Read an interim response (``100 Continue``) with that status."""
        async with asyncio.timeout(deadline):
            head = await self.reader.readuntil(b"\r\n\r\n")
        assert head.split()[1] == str(status).encode(), head

    async def response(self, deadline: float = 10.0) -> tuple[int, dict[str, str], bytes]:
        """Read one HTTP response with a ``Content-Length``: status, headers (lower-case), body."""
        async with asyncio.timeout(deadline):
            head = await self.reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split()[1])
            headers = dict(
                (name.strip().lower(), value.strip())
                for name, _, value in (line.partition(":") for line in lines[1:] if line)
            )
            body = await self.reader.readexactly(int(headers.get("content-length", "0")))
        return status, headers, body

    async def closed_by_server(self, deadline: float = 10.0) -> bool:
        """Whether the server closes the connection (nothing more arrives before EOF)."""
        async with asyncio.timeout(deadline):
            return await self.reader.read() == b""

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except ConnectionError:
            pass


def post_head(length: int, **headers: str) -> bytes:
    """The head of a JSON-RPC POST declaring a body of ``length`` bytes."""
    fields = {
        "Host": "127.0.0.1",
        "Content-Type": "application/json",
        "A2A-Version": "1.0",
        "Content-Length": str(length),
        **{name.replace("_", "-"): value for name, value in headers.items()},
    }
    lines = "".join(f"{name}: {value}\r\n" for name, value in fields.items())
    return f"POST / HTTP/1.1\r\n{lines}\r\n".encode("latin-1")
