"""Push deliveries: a CLIENT span per attempt in the task's trace, the webhook's request carrying
it (``traceparent``) to the receiver's SERVER span, and the attempt, duration and lag metrics,
failures by reason."""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import SpanKind, StatusCode
from push_support import AUTH, TOKEN, Hook, local_settings, wait_until
from server_support import ScriptedAgent, make_card, result, send_params
from telemetry_support import Recorded

from a2a_wire.server import ServerSettings, create_app


def _inline(url: str) -> dict[str, Any]:
    config = {"url": url, "token": TOKEN, "authentication": AUTH.to_dict()}
    return {"taskPushNotificationConfig": config}


async def _served(aiohttp_client: Any, otel: Recorded) -> Any:
    settings = ServerSettings(push=local_settings())
    app = create_app(
        make_card(push=True), ScriptedAgent(), settings=settings, telemetry=otel.telemetry
    )
    return await aiohttp_client(app)


async def test_each_delivery_is_a_span_in_the_tasks_trace(
    aiohttp_client: Any, aiohttp_server: Any, otel: Recorded
) -> None:
    hook = Hook()
    hook.receiver.telemetry = otel.telemetry  # the webhook records into the same providers
    webhook = await aiohttp_server(hook.app)
    client = await _served(aiohttp_client, otel)
    url = str(webhook.make_url("/webhook"))
    task = (await result(client, "SendMessage", send_params("echo", _inline(url))))["task"]
    await wait_until(lambda: len(hook.events) == 4)
    await wait_until(lambda: len(otel.spans("SendPushNotification")) == 8)
    [run] = otel.spans("invoke_agent scripted")
    deliveries = [s for s in otel.spans("SendPushNotification") if s.kind is SpanKind.CLIENT]
    received = {
        s.parent.span_id: s
        for s in otel.spans("SendPushNotification")
        if s.kind is SpanKind.SERVER and s.parent is not None
    }
    for span, (headers, _) in zip(deliveries, hook.requests, strict=True):
        webhook_span = received[span.context.span_id]  # the receiver's span: its child
        assert webhook_span.attributes["a2a.task.id"] == task["id"]
        assert span.kind is SpanKind.CLIENT
        assert span.context.trace_id == run.context.trace_id  # the task's trace
        assert span.parent is not None and span.parent.span_id == run.context.span_id
        assert span.attributes["a2a.task.id"] == task["id"]
        assert span.attributes["a2a.push.attempt"] == 1
        assert span.attributes["a2a.push.outcome"] == "delivered"
        assert span.attributes["server.address"] == "127.0.0.1"
        trace_id, span_id = headers["traceparent"].split("-")[1:3]
        assert (trace_id, span_id) == (
            f"{run.context.trace_id:032x}",
            f"{span.context.span_id:016x}",
        )
    assert otel.total("a2a.server.push.attempts", **{"a2a.push.outcome": "delivered"}) == 4
    [lag] = otel.points("a2a.server.push.lag")
    assert lag.count == 4 and 0 <= lag.sum < 60
    [duration] = otel.points("a2a.server.push.duration")
    assert duration.count == 4 and "a2a.method.name" not in duration.attributes


async def test_failed_attempts_are_counted_by_reason(
    aiohttp_client: Any, aiohttp_server: Any, otel: Recorded
) -> None:
    hook = Hook(script=[503, 503])  # the first two attempts of the first event fail
    webhook = await aiohttp_server(hook.app)
    client = await _served(aiohttp_client, otel)
    url = str(webhook.make_url("/webhook"))
    await result(client, "SendMessage", send_params("echo", _inline(url)))
    await wait_until(lambda: len(hook.events) == 4)
    await wait_until(lambda: len(otel.spans("SendPushNotification")) == 6)
    retried = {"a2a.push.outcome": "retry", "error.type": "503"}
    assert otel.total("a2a.server.push.attempts", **retried) == 2
    assert otel.total("a2a.server.push.attempts", **{"a2a.push.outcome": "delivered"}) == 4
    failed = [
        s for s in otel.spans("SendPushNotification") if s.status.status_code is StatusCode.ERROR
    ]
    assert [s.attributes["a2a.push.attempt"] for s in failed] == [1, 2]
    assert all(s.attributes["error.type"] == "503" for s in failed)
