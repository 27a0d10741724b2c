"""``a2a-wire send --stream`` and ``a2a-wire subscribe`` after the server's -32000: the stream
that an outage of the store ended is resumed with SubscribeToTask from its last event id, one
line on stderr saying so each time, and the command ends as the task does.

The server is a real a2a-wire app over :class:`fault_store.FaultyStore` on 127.0.0.1, in the
test's event loop; the CLI runs as a subprocess whose output the test reads line by line. The
store fails the stream's reads once the task is WORKING (the stream ends with the error event
after ``stream_outage_seconds``); it is still down for the first re-subscription (HTTP 503),
and a middleware brings it back, and lets the agent finish, as the second one arrives.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.typedefs import Handler
from e2e_support import PYTHON, environment
from fault_store import FaultyStore
from patience import PATIENCE
from server_support import ScriptedAgent, make_card, result, send_params, serve_like_the_cli

from a2a_wire.server import ServerSettings, create_app

READS = frozenset({"read_events", "snapshot"})


@dataclass
class Served:
    agent: ScriptedAgent
    store: FaultyStore
    url: str
    resumed: list[str | None] = field(default_factory=list)  # Last-Event-ID of each re-subscription


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    agent, store = ScriptedAgent(), FaultyStore()
    settings = ServerSettings(
        keepalive_seconds=0.1, stream_outage_seconds=0.2, store_retry_after_seconds=1
    )
    app = create_app(make_card(), agent, store=store, settings=settings)
    served = Served(agent, store, "")

    @web.middleware
    async def back_on_the_second_resume(request: web.Request, handler: Handler) -> Any:
        if "Last-Event-ID" in request.headers:
            served.resumed.append(request.headers["Last-Event-ID"])
            if len(served.resumed) == 2:
                store.failing = frozenset()
                agent.gate.set()
        return await handler(request)

    app.middlewares.append(back_on_the_second_resume)
    async with serve_like_the_cli(app) as (host, port):
        served.url = f"http://{host}:{port}/"
        yield served
    agent.gate.set()


async def _run(served: Served, *args: str, lines_before_outage: int) -> tuple[int, str, str]:
    """Run ``a2a-wire ARGS``; after that many lines of its stdout, the store fails its reads."""
    proc = await asyncio.create_subprocess_exec(
        PYTHON,
        "-m",
        "a2a_wire",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=environment(PYTHONUNBUFFERED="1"),
    )
    assert proc.stdout is not None
    try:
        head = [await asyncio.wait_for(proc.stdout.readline(), PATIENCE)]
        while len(head) < lines_before_outage:
            head.append(await asyncio.wait_for(proc.stdout.readline(), PATIENCE))
        served.store.failing = READS
        out, err = await asyncio.wait_for(proc.communicate(), PATIENCE)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, b"".join(head).decode() + out.decode(), err.decode()


def _resume_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "re-subscribing" in line]


async def test_send_stream_resumes_after_the_outage_ended_its_stream(served: Served) -> None:
    code, out, err = await _run(
        served, "send", served.url, "wait", "--stream", lines_before_outage=2
    )
    assert code == 0, (out, err)
    events = out.splitlines()[:4]
    assert [e.split()[0] for e in events] == ["task", "working", "artifact", "completed"], out
    ended, refused = _resume_lines(err)  # one line per re-subscription, nothing else
    assert "-32000 STORE_UNAVAILABLE" in ended and "(1/12) after event id '2'" in ended, err
    assert "could not be opened" in refused and "(2/12) after event id '2'" in refused
    assert "error" not in err, err
    assert served.resumed == ["2", "2"]
    assert out.count("working") == 1, out  # no event twice


async def _working_task(served: Served) -> str:
    """A ``wait`` task, WORKING at the agent's gate (SendMessage returning at once)."""
    async with aiohttp.ClientSession(base_url=served.url) as session:
        params = send_params("wait", {"returnImmediately": True})
        task = await result(session, "SendMessage", params)
    async with asyncio.timeout(PATIENCE):
        await served.agent.started.wait()  # after WORKING is stored
    return str(task["task"]["id"])


async def test_subscribe_resumes_after_the_outage_ended_its_stream(served: Served) -> None:
    task_id = await _working_task(served)
    code, out, err = await _run(
        served, "subscribe", served.url, task_id, "--json", lines_before_outage=1
    )
    assert code == 0, (out, err)
    events = [json.loads(line) for line in out.splitlines()]
    assert [next(iter(e)) for e in events] == ["task", "artifactUpdate", "statusUpdate"], out
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    notes = [json.loads(line)["resubscribing"] for line in err.splitlines()]
    assert [(n["taskId"], n["attempt"], n["limit"]) for n in notes] == [
        (task_id, 1, 12),  # the default resume_attempts
        (task_id, 2, 12),
    ], err
    assert "-32000 STORE_UNAVAILABLE" in notes[0]["line"]
    assert served.resumed == [notes[0]["lastEventId"]] * 2
