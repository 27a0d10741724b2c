"""The mixed load of the database fault suite (tests/functional/test_database_faults.py).

:class:`FaultLoad` sends, streams, cancels, continues and reads on the three processes of a
:class:`~soak_support.Cluster` the way a careful client does (a 503 is retried after its
``Retry-After``, a stream that ends with an error event is resumed with ``Last-Event-ID``), and
records every answer: HTTP status, JSON-RPC code, seconds, and the fault's phase it came in.
:func:`findings` checks what was recorded against the schema's tables at the end.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from patience import PATIENCE
from soak_checks import logged, stream_problems
from soak_support import (
    HEADERS,
    SETTLED,
    TERMINAL,
    Cluster,
    StreamRecord,
    follow,
    message,
    rpc,
    state_of,
)

INTERNAL_ERROR = -32603
UNAVAILABLE = -32000
NOT_CANCELABLE = -32002
STILL_WORKING = -32004


@dataclass(frozen=True)
class Answer:
    """One request and what came back.

    Attributes:
        method: The JSON-RPC method, or ``GET /readyz``.
        process: The index of the process asked.
        phase: ``before``, ``fault`` or ``after`` (the test's phase when the request was sent).
        status: The HTTP status; 0 when no answer came (refused, reset, killed process).
        code: The JSON-RPC error code, ``None`` for a result.
        seconds: From sending to the whole answer.
        retry_after: The ``Retry-After`` header, if any.
        started: ``time.monotonic()`` when it was sent.
        error: The JSON-RPC error's message, ``""`` for a result.
        said: The text of the message sent, if any (which worker asked: ``plain blocking``,
            ``hold``, ``ask something``, ``answer``...).
    """

    method: str
    process: int
    phase: str
    status: int
    code: int | None
    seconds: float
    retry_after: str | None
    started: float
    error: str = ""
    said: str = ""


@dataclass
class FaultLoad:
    """The load on a cluster during one fault, and everything it recorded."""

    cluster: Cluster
    session: aiohttp.ClientSession
    phase: str = "before"
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    rng: random.Random = field(default_factory=lambda: random.Random(23))
    answers: list[Answer] = field(default_factory=list)
    acked: dict[str, str] = field(default_factory=dict)  # task id -> state acknowledged
    streams: list[StreamRecord] = field(default_factory=list)
    canceled: set[str] = field(default_factory=set)
    follow_ups: dict[str, str] = field(default_factory=dict)  # task id -> outcome
    findings: list[str] = field(default_factory=list)
    stream_errors: Counter[int] = field(default_factory=Counter)  # error events, by code

    def pick(self, other_than: int = -1) -> int:
        return self.rng.choice([i for i in range(len(self.cluster.servers)) if i != other_than])

    def ack(self, task: dict[str, Any]) -> str:
        task_id = str(task["id"])
        self.acked.setdefault(task_id, state_of(task))
        return task_id

    async def call(
        self, index: int, method: str, params: dict[str, Any]
    ) -> tuple[Answer, dict[str, Any]]:
        """One JSON-RPC request to process ``index``; its answer is recorded.

        Returns:
            The record, and the JSON-RPC body (``{}`` when none came).
        """
        started, phase = time.monotonic(), self.phase
        status, body, retry_after = 0, {}, None
        timeout = aiohttp.ClientTimeout(total=PATIENCE, sock_connect=5)
        url = self.cluster.urls[index]
        try:
            async with self.session.post(
                url, json=rpc(method, params), headers=HEADERS, timeout=timeout
            ) as response:
                status, retry_after = response.status, response.headers.get("Retry-After")
                body = await response.json(content_type=None) or {}
        except (aiohttp.ClientError, ConnectionError, TimeoutError, ValueError):
            pass  # no answer: the process is down, was killed, or cut the connection
        error = body.get("error") or {} if isinstance(body, dict) else {}
        said = str(params.get("message", {}).get("parts", [{}])[0].get("text", ""))
        return self._note(method, index, phase, status, started, retry_after, error, said), body

    def _note(
        self,
        method: str,
        index: int,
        phase: str,
        status: int,
        started: float,
        retry_after: str | None = None,
        error: dict[str, Any] | None = None,
        said: str = "",
    ) -> Answer:
        """Record an answer that came now to a request sent at ``started``."""
        error = error or {}
        seconds = time.monotonic() - started
        code, text = error.get("code"), str(error.get("message", ""))
        answer = Answer(
            method, index, phase, status, code, seconds, retry_after, started, text, said
        )
        self.answers.append(answer)
        return answer

    async def until_answered(
        self, index: int, method: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        """:meth:`call` until an answer other than a 503 or none: the next process after no
        answer, the same one after its ``Retry-After``; gives up after PATIENCE seconds."""
        async with asyncio.timeout(PATIENCE * 2):
            while True:
                answer, body = await self.call(index, method, params)
                if answer.status == 0:
                    index = (index + 1) % len(self.cluster.servers)
                    await asyncio.sleep(0.1)
                elif answer.code == UNAVAILABLE:
                    await asyncio.sleep(float(answer.retry_after or "1"))
                else:
                    return body

    async def readiness(self, index: int) -> Answer:
        """``GET /readyz`` of process ``index``, recorded."""
        started, phase, status = time.monotonic(), self.phase, 0
        url = self.cluster.servers[index].url + "/readyz"
        try:
            timeout = aiohttp.ClientTimeout(total=PATIENCE, sock_connect=5)
            async with self.session.get(url, timeout=timeout) as response:
                status = response.status
                await response.read()
        except (aiohttp.ClientError, ConnectionError, TimeoutError):
            pass
        return self._note("GET /readyz", index, phase, status, started)

    async def stream(self, label: str, index: int, body: dict[str, Any]) -> StreamRecord:
        """Follow a stream to its task's end: resumed with ``Last-Event-ID`` after a drop (on
        the next process), after an error event, or after a 503 (once its Retry-After passed).
        """
        record = StreamRecord(label, errors_end=True)
        self.streams.append(record)
        urls = self.cluster.urls
        loop = asyncio.get_running_loop()
        deadline = loop.time() + PATIENCE * 2
        while True:
            started, phase = time.monotonic(), self.phase
            await follow(self.session, urls, index, record, body, PATIENCE)
            error = record.error or record.refused or {}
            code = error.get("code")
            if record.error is not None:
                self.stream_errors[int(code or 0)] += 1
            elif record.refused is not None:  # the stream's request was answered, not streamed
                asked = record.connections[-1] if record.connections else index
                status, retry_after = record.refused_status, record.refused_retry_after
                self._note(body["method"], asked, phase, status, started, retry_after, error)
            if record.finished or record.problems or not record.task_id:
                return record
            if code != UNAVAILABLE or loop.time() > deadline:
                return record  # an answer that is not "try again": the checks judge it
            await asyncio.sleep(float(record.refused_retry_after or "1"))
            record.error = record.refused = None
            body = rpc("SubscribeToTask", {"id": record.task_id})
            index = (index + 1) % len(urls)


async def blocking_sends(load: FaultLoad) -> None:
    """SendMessage that blocks until the task settles."""
    while not load.stop.is_set():
        answer, body = await load.call(load.pick(), "SendMessage", message("plain blocking"))
        if "result" in body:
            load.ack(body["result"]["task"])
        else:  # no answer, or a 503: try again soon (sooner than Retry-After: a pushy client)
            await asyncio.sleep(0.1)


async def streamed_sends(load: FaultLoad) -> None:
    """SendStreamingMessage, followed to the task's end."""
    while not load.stop.is_set():
        body = rpc("SendStreamingMessage", message("plain streamed"))
        record = await load.stream("SendStreamingMessage", load.pick(), body)
        if record.task_id:
            load.ack({"id": record.task_id, **(record.bodies[0].get("task") or {})})
        else:
            await asyncio.sleep(0.1)


async def cancels(load: FaultLoad) -> None:
    """A held task (``returnImmediately``) on one process, canceled through another."""
    while not load.stop.is_set():
        runner = load.pick()
        params = message("hold", returnImmediately=True)
        _, body = await load.call(runner, "SendMessage", params)
        if "result" not in body:
            await asyncio.sleep(0.1)
            continue
        task_id = load.ack(body["result"]["task"])
        await asyncio.sleep(0.2)  # the agent holds the task meanwhile
        canceller = load.pick(other_than=runner)
        outcome = await load.until_answered(canceller, "CancelTask", {"id": task_id})
        if "result" in outcome and state_of(outcome["result"]) == "TASK_STATE_CANCELED":
            load.canceled.add(task_id)
        elif outcome.get("error", {}).get("code") != NOT_CANCELABLE:
            load.findings.append(f"CancelTask of {task_id} answered {outcome}")


async def multi_turn(load: FaultLoad) -> None:
    """INPUT_REQUIRED on one process, the follow-up at once on another."""
    while not load.stop.is_set():
        first = load.pick()
        _, body = await load.call(first, "SendMessage", message("ask something"))
        if "result" not in body:
            await asyncio.sleep(0.1)
            continue
        task = body["result"]["task"]
        task_id = load.ack(task)
        if state_of(task) != "TASK_STATE_INPUT_REQUIRED":
            continue  # e.g. FAILED: the store was lost under the run
        follow_up = message("answer", task_id=task_id)
        reply = await load.until_answered(load.pick(other_than=first), "SendMessage", follow_up)
        if "result" in reply:
            load.follow_ups[task_id] = state_of(reply["result"]["task"])
        else:
            load.follow_ups[task_id] = f"refused: {reply.get('error')}"


async def reads(load: FaultLoad) -> None:
    """GetTask of acknowledged tasks, and ListTasks."""
    while not load.stop.is_set():
        await asyncio.sleep(0.05)
        if load.acked and load.rng.random() < 0.7:
            params: dict[str, Any] = {"id": load.rng.choice(list(load.acked))}
            await load.call(load.pick(), "GetTask", params)
        else:
            await load.call(load.pick(), "ListTasks", {"pageSize": 20})


async def probes(load: FaultLoad) -> None:
    """``GET /readyz`` of every process, as a load balancer would."""
    while not load.stop.is_set():
        await asyncio.gather(*(load.readiness(i) for i in range(len(load.cluster.servers))))
        await asyncio.sleep(0.2)


WORKERS = (blocking_sends, streamed_sends, streamed_sends, cancels, multi_turn, reads, probes)


def answer_problems(load: FaultLoad, held_bound: float, cancel_bound: float) -> list[str]:
    """No -32603, no HTTP 500, a 503 only as -32000 with Retry-After, nothing held too long:
    ``held_bound`` seconds at most, a CancelTask ``cancel_bound`` (it may wait for the process
    running the task to stop its agent, then overrule it)."""
    problems = []
    for a in load.answers:
        bound = cancel_bound if a.method == "CancelTask" else held_bound
        asked = f" {a.said!r}" if a.said else ""
        where = f"{a.method}{asked} to process {a.process} ({a.phase})"
        if a.status >= 500 and a.status != 503:
            problems.append(f"{where}: HTTP {a.status}")
        if a.code == INTERNAL_ERROR:
            problems.append(f"{where}: -32603 {a.error}")
        if a.status == 503 and a.method != "GET /readyz":
            if a.code != UNAVAILABLE or not a.retry_after:
                problems.append(f"{where}: 503 with code {a.code}, Retry-After {a.retry_after}")
        if a.code == STILL_WORKING:
            problems.append(f"{where}: -32004 (a follow-up refused)")
        if a.seconds > bound:
            answered = f"HTTP {a.status}, code {a.code}"
            problems.append(f"{where}: held {a.seconds:.1f} s (bound {bound:.1f} s; {answered})")
    return problems


def follow_up_problems(load: FaultLoad) -> list[str]:
    """Every follow-up to an INPUT_REQUIRED task was accepted."""
    return [
        f"{task_id}: follow-up {outcome}"
        for task_id, outcome in load.follow_ups.items()
        if outcome not in SETTLED
    ]


async def findings(
    load: FaultLoad, dsn: str, schema: str, held_bound: float, cancel_bound: float
) -> list[str]:
    """Everything wrong in what the load recorded, checked against the schema's tables."""
    problems = list(load.findings)
    problems += answer_problems(load, held_bound, cancel_bound)
    problems += follow_up_problems(load)
    log = await logged(dsn, schema)
    finals: dict[str, str] = {}
    for task_id in load.acked:  # every acknowledged task is kept, on every process
        for index in range(len(load.cluster.servers)):
            body = await load.until_answered(index, "GetTask", {"id": task_id})
            if "result" not in body:
                problems.append(f"acknowledged {task_id}: GetTask on {index} answered {body}")
                continue
            finals[task_id] = state_of(body["result"])
        acked = load.acked[task_id]
        if acked in TERMINAL and finals.get(task_id) != acked:
            problems.append(f"{task_id} was acknowledged {acked}, is now {finals.get(task_id)}")
    problems += [
        f"{task_id}: canceled, now {finals.get(task_id)}"
        for task_id in load.canceled
        if finals.get(task_id) != "TASK_STATE_CANCELED"
    ]
    for record in load.streams:
        if record.task_id:
            final = finals.get(record.task_id, "")
            problems += stream_problems(record, log.get(record.task_id, {}), final, raw=True)
    for task_id, events in log.items():  # nothing written after the task's end
        ends = [seq for seq, (_, body) in events.items() if state_of(body) in TERMINAL]
        if ends and max(events) > min(ends):
            problems.append(f"{task_id}: events {sorted(events)} logged after its end {ends}")
    return problems


def figures(load: FaultLoad) -> str:
    """One line of what the load saw during and after the fault."""
    calls = [a for a in load.answers if a.method != "GET /readyz"]
    during = [a for a in calls if a.phase == "fault"]
    statuses = Counter(a.status for a in during)
    slowest = max((a.seconds for a in calls), default=0.0)
    return (
        f"{len(calls)} requests ({len(during)} during the fault: HTTP {dict(statuses)});"
        f" slowest {slowest:.2f} s; {len(load.acked)} acknowledged; {len(load.streams)} streams,"
        f" error events {dict(load.stream_errors)}; {len(load.canceled)} canceled;"
        f" {len(load.follow_ups)} follow-ups"
    )


async def unended_runs(cluster: Cluster, bound: float) -> list[str]:
    """Runs that began on a process still alive and have not ended within ``bound`` seconds:
    an agent that goes on working after its task ended or was taken over."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bound
    while True:
        alive = {str(pid) for pid in cluster.pids()}
        going = [
            started.name.removesuffix(".started")
            for started in cluster.runs.glob("*.started")
            if started.read_text() in alive
            and not started.with_name(started.name.replace(".started", ".ended")).exists()
        ]
        if not going or loop.time() > deadline:
            return [f"run {run} goes on" for run in sorted(going)]
        await asyncio.sleep(0.1)
