"""Content stays out: no message text, part, metadata or credential in any exported span or
metric attribute, whatever the calls carried."""

from __future__ import annotations

from typing import Any

from patience import poll
from telemetry_support import Recorded

from a2a_wire import codec
from a2a_wire.client import A2AClient, ClientSettings, StaticCredentials

LOCAL = ClientSettings(allow=["127.0.0.1"])
SECRET = "s3cr3t-7f1c9a"


def exported_text(otel: Recorded) -> str:
    """Every name, attribute, event, link and status text the providers hold, as one string."""
    seen: list[str] = []
    for span in otel.spans():
        seen.append(span.name)
        seen.append(repr(dict(span.attributes or {})))
        seen.extend(repr(dict(e.attributes or {})) + e.name for e in span.events)
        seen.extend(repr(dict(link.attributes or {})) for link in span.links)
        seen.append(span.status.description or "")
    data = otel.reader.get_metrics_data()
    assert data is not None
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                seen.extend(repr(dict(p.attributes)) for p in metric.data.data_points)
    return "\n".join(seen)


async def test_no_secret_reaches_an_attribute(client: Any, otel: Recorded) -> None:
    credentials = StaticCredentials(f"Bearer-{SECRET}")
    async with A2AClient(
        str(client.make_url("/")), settings=LOCAL, credentials=credentials, telemetry=otel.telemetry
    ) as a2a:
        answer = await a2a.send_text(f"echo {SECRET}", metadata={"note": SECRET})
        assert answer.task is not None
        task = await a2a.get_task(answer.task.id)
        assert (
            SECRET in codec.encode(task).decode()
        )  # the secret went through, in history and artifacts
        async with a2a.send_streaming_message(A2AClient.text_request(SECRET)) as events:
            [event async for event in events]

    async def fetch() -> list[Any]:
        return otel.spans("invoke_agent scripted")

    await poll(fetch, lambda runs: len(runs) == 2)
    text = exported_text(otel)
    assert "SendStreamingMessage" in text and "a2a.task.id" in text  # the search saw them
    assert SECRET not in text


async def test_sizes_when_asked_for_and_still_no_content(client: Any, otel: Recorded) -> None:
    otel.telemetry.record_sizes = True
    async with A2AClient(
        str(client.make_url("/")), settings=LOCAL, telemetry=otel.telemetry
    ) as a2a:
        sent = A2AClient.text_request(f"echo {SECRET}")
        await a2a.send_message(sent)
    size = len(codec.encode(sent.message))
    for span in otel.spans("SendMessage"):  # the client's and the server's
        assert span.attributes["a2a.message.part.count"] == 1
        assert span.attributes["a2a.message.size"] == size
    assert SECRET not in exported_text(otel)


async def test_no_sizes_by_default(client: Any, otel: Recorded) -> None:
    async with A2AClient(
        str(client.make_url("/")), settings=LOCAL, telemetry=otel.telemetry
    ) as a2a:
        await a2a.send_message(A2AClient.text_request("echo"))
    assert all("a2a.message.size" not in s.attributes for s in otel.spans("SendMessage"))
