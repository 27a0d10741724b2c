"""One trace across agents: a client calls server A, whose ``delegate`` skill calls server B.

Every span of the chain (the caller's call, A's call and run, the delegate's call, B's call and
run) has the caller's trace id, each the child of the one before it.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import SpanKind
from patience import poll
from server_support import ScriptedAgent, make_card
from telemetry_support import Recorded

from a2a_wire.cli._relay import RemoteAgent
from a2a_wire.cli._skills import DelegateSkill
from a2a_wire.client import A2AClient, ClientSettings
from a2a_wire.server import create_app

LOCAL = ClientSettings(allow=["127.0.0.1"])


async def test_client_a_delegate_b_is_one_trace(aiohttp_server: Any, otel: Recorded) -> None:
    b = await aiohttp_server(create_app(make_card(), ScriptedAgent(), telemetry=otel.telemetry))
    remote = RemoteAgent("b", str(b.make_url("")), settings=LOCAL)

    async def connect(agent: RemoteAgent) -> A2AClient:
        return await A2AClient.connect(agent.url, settings=agent.settings, telemetry=otel.telemetry)

    delegate = DelegateSkill({"b": remote}, connect=connect)
    a = await aiohttp_server(create_app(make_card(), delegate, telemetry=otel.telemetry))
    async with A2AClient(str(a.make_url("/")), settings=LOCAL, telemetry=otel.telemetry) as client:
        answer = await client.send_message(A2AClient.text_request("echo"))
    assert answer.task is not None

    async def runs() -> list[Any]:
        return otel.spans("invoke_agent scripted")

    await poll(runs, lambda found: len(found) == 2)  # A's run and B's
    spans = otel.spans()
    by_id = {span.context.span_id: span for span in spans}
    calls = otel.spans("SendMessage")
    [caller] = [s for s in calls if s.kind is SpanKind.CLIENT and s.parent is None]
    assert {s.context.trace_id for s in spans} == {caller.context.trace_id}

    def parent(span: Any) -> Any:
        assert span.parent is not None
        return by_id[span.parent.span_id]

    def chain(span: Any) -> list[Any]:
        """``span`` and its ancestors, up to the root."""
        found = [span]
        while found[-1].parent is not None:
            found.append(parent(found[-1]))
        return found

    [a_run] = [s for s in otel.spans("invoke_agent scripted") if len(chain(s)) == 3]
    [b_run] = [s for s in otel.spans("invoke_agent scripted") if s is not a_run]
    # B's run, B's call, the delegate's call (it streams), A's run, A's call, the caller's call.
    assert [(s.name, s.kind) for s in chain(b_run)] == [
        ("invoke_agent scripted", SpanKind.INTERNAL),
        ("SendStreamingMessage", SpanKind.SERVER),
        ("SendStreamingMessage", SpanKind.CLIENT),
        ("invoke_agent scripted", SpanKind.INTERNAL),
        ("SendMessage", SpanKind.SERVER),
        ("SendMessage", SpanKind.CLIENT),
    ]
    assert chain(b_run)[3] is a_run and chain(b_run)[-1] is caller
