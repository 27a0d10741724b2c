"""The run and the final checks of the scale-out soak (tests/functional/test_scale_out_soak.py).

:class:`Load` is what the soak's coroutines share and record. :func:`check` compares it, at the
end, with the API (GetTask on every process, ListTasks with each page token carried to another
process) and with the schema's tables (the events log, the tasks' states), and returns every
problem found with a one-line summary of the run.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import asyncpg
from patience import PATIENCE
from soak_support import RUNNING, TERMINAL, Cluster, StreamRecord, follow, state_of

from a2a_wire import codec
from a2a_wire.client import A2AClient
from a2a_wire.server.store import PROCESS_LOST_MESSAGE, EventKind
from a2a_wire.types import GetTaskRequest, ListTasksRequest, Task


@dataclass
class Load:
    """The running soak: the processes, the clients, and what every coroutine recorded."""

    cluster: Cluster
    session: aiohttp.ClientSession
    clients: list[A2AClient]
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    rng: random.Random = field(default_factory=lambda: random.Random(14))
    acked: dict[str, str] = field(default_factory=dict)  # task id -> state acknowledged
    streams: list[StreamRecord] = field(default_factory=list)
    client_streams: list[StreamRecord] = field(default_factory=list)
    followers: list[asyncio.Task[StreamRecord]] = field(default_factory=list)
    victims: list[tuple[list[StreamRecord], float]] = field(default_factory=list)
    canceled: set[str] = field(default_factory=set)  # CancelTask answered CANCELED
    follow_ups: dict[str, str] = field(default_factory=dict)  # task id -> outcome
    findings: list[str] = field(default_factory=list)

    def pick(self, other_than: int = -1) -> int:
        choices = [i for i in range(len(self.clients)) if i != other_than]
        return self.rng.choice(choices)

    def ack(self, task: dict[str, Any] | Task) -> str:
        data = task if isinstance(task, dict) else task.to_dict()
        task_id = str(data["id"])
        self.acked.setdefault(task_id, state_of(data))
        return task_id

    def stream(
        self, label: str, start: int, body: dict[str, Any], task_id: str = ""
    ) -> StreamRecord:
        """Follow a raw stream in the background (awaited at the end)."""
        record = StreamRecord(label, task_id=task_id)
        self.streams.append(record)
        urls = self.cluster.urls
        coroutine = follow(self.session, urls, start, record, body, PATIENCE)
        self.followers.append(asyncio.ensure_future(coroutine))
        return record


async def _running(dsn: str, schema: str) -> list[str]:
    """Tasks SUBMITTED or WORKING, as the tasks table says."""
    conn = await asyncpg.connect(dsn)
    try:
        query = f"SELECT id FROM {schema}.tasks WHERE state = ANY($1) AND NOT deleted"
        return [row["id"] for row in await conn.fetch(query, list(RUNNING))]
    finally:
        await conn.close()


async def logged(dsn: str, schema: str) -> dict[str, dict[int, tuple[int, Any]]]:
    """Every logged event: task id -> seq -> (kind, StreamResponse JSON)."""
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(f"SELECT task_id, seq, kind, body FROM {schema}.task_events")
    finally:
        await conn.close()
    log: dict[str, dict[int, tuple[int, Any]]] = {}
    for row in rows:
        log.setdefault(row["task_id"], {})[row["seq"]] = (row["kind"], codec.loads(row["body"]))
    return log


def stream_problems(
    record: StreamRecord, log: dict[int, tuple[int, Any]], final: str, raw: bool
) -> list[str]:
    """What is wrong with one stream, against its task's log and final state."""
    ids, problems = record.ids, list(record.problems)
    if any(b <= a for a, b in zip(ids, ids[1:], strict=False)):
        problems.append(f"ids do not rise: {ids}")
    for position, (seq, body) in enumerate(zip(ids, record.bodies, strict=True)):
        if seq not in log:
            problems.append(f"id {seq} is not logged")
        elif position not in record.snapshots:
            kind, logged = log[seq]
            if kind == EventKind.MESSAGE:
                problems.append(f"id {seq}: a history message was streamed")
            elif raw and logged != body:
                problems.append(f"id {seq} is not the logged event: {body} != {logged}")
    for a, b in zip(ids, ids[1:], strict=False):
        skipped = [s for s in range(a + 1, b) if log.get(s, (0, None))[0] != EventKind.MESSAGE]
        if skipped:
            problems.append(f"gap: ids {skipped} between {a} and {b} were not received")
    if record.refused is not None:
        if ids or final not in TERMINAL:
            problems.append(f"refused {record.refused} after ids {ids}, task {final}")
    elif not record.finished:
        problems.append(f"did not end (ids {ids})")
    elif (last := state_of(record.bodies[-1])) in TERMINAL and last != final:
        problems.append(f"ended with {last}, but the task is {final}")
    return [f"{record.label} of {record.task_id}: {p}" for p in problems]


async def _listed(load: Load) -> dict[str, Task]:
    """Every task, through ListTasks, each next page asked of the next process."""
    tasks: dict[str, Task] = {}
    token, index = "", 0
    while True:
        request = ListTasksRequest(page_size=100, page_token=token, include_artifacts=True)
        page = await load.clients[index % len(load.clients)].list_tasks(request)
        tasks.update((task.id, task) for task in page.tasks)
        token, index = page.next_page_token, index + 1
        if not token:
            return tasks


def _text(task: Task) -> str:
    status = task.status
    if status is None or status.message is None:
        return ""
    return "".join(part.text or "" for part in status.message.parts)


async def _task_problems(load: Load, tasks: dict[str, Task]) -> list[str]:
    """Acknowledged tasks kept, failures explained, cancels and follow-ups kept."""
    problems = [f"acknowledged task {t} is not listed" for t in load.acked if t not in tasks]
    for task_id, acked in load.acked.items():
        for client in load.clients:
            got = await client.get_task(GetTaskRequest(id=task_id))  # raises if unknown
            state = got.status.state.value if got.status is not None else ""
            if acked in TERMINAL and state != acked:
                problems.append(f"{task_id} was acknowledged {acked}, is now {state}")
    states = {task_id: task.status.state.value for task_id, task in tasks.items() if task.status}
    alive = load.cluster.pids()
    for task_id, state in states.items():
        if state != "TASK_STATE_FAILED":
            continue
        if _text(tasks[task_id]) != PROCESS_LOST_MESSAGE:
            problems.append(f"{task_id} FAILED without the process-lost message")
        got = await load.clients[0].get_task(GetTaskRequest(id=task_id))
        turn = sum(1 for m in got.history if m.role.value == "ROLE_USER")  # the turn that failed
        if (runner := load.cluster.runner(task_id, turn)) in alive:
            problems.append(
                f"{task_id} FAILED as lost in turn {turn}, but process {runner} that ran it"
                f" lives: {got.to_dict()}"
            )
    for records, _ in load.victims:
        for held in records[::2]:  # the tasks run by the victim (the watcher's is the first's)
            if states.get(held.task_id) != "TASK_STATE_FAILED":
                problems.append(f"{held.task_id}, held on a killed process, is not FAILED")
    problems += [
        f"{t}: canceled, now {states.get(t)}"
        for t in load.canceled
        if states.get(t) != "TASK_STATE_CANCELED"
    ]
    for task_id, outcome in load.follow_ups.items():
        names = {a.name for a in tasks[task_id].artifacts}
        if outcome == "TASK_STATE_COMPLETED":
            if states.get(task_id) != outcome or "turn-2" not in names:
                problems.append(
                    f"{task_id}: follow-up answered {outcome}, task {states.get(task_id)}"
                )
        elif outcome.startswith("refused after 1 attempts") or not outcome.startswith(
            ("refused", "settled")
        ):
            problems.append(f"{task_id}: follow-up {outcome}")
    return problems


def _victim_problems(load: Load) -> tuple[list[str], list[float]]:
    """The streams of the tasks held on each victim end FAILED, those on the victim after a
    resume elsewhere; and the seconds from each kill to the FAILED event on a survivor."""
    problems, takeovers = [], []
    for (held, watcher, by_client), killed_at in load.victims:
        for record in (held, watcher, by_client):
            if not record.finished or state_of(record.bodies[-1]) != "TASK_STATE_FAILED":
                problems.append(f"{record.label} of {record.task_id} did not end FAILED")
        for record in (held, by_client):
            if record.resumes < 1:
                problems.append(f"{record.label} of {record.task_id} did not resume")
        if watcher.finished:
            takeovers.append(watcher.received_at[-1] - killed_at)
    return problems, takeovers


async def cancel_problems(load: Load, bound: float) -> list[str]:
    """Each held run whose task a CancelTask answered CANCELED, on a process still running, has
    stopped (:class:`~soak_support.SoakAgent` notes it) within ``bound`` seconds from now: the
    cancel request reaches it at once, and its heartbeat finds its lease ended in any case."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bound
    runs = load.cluster.runs
    while True:
        alive = load.cluster.pids()
        running = []
        for task_id in sorted(load.canceled):
            if load.cluster.runner(task_id) in alive:
                if not (runs / f"{task_id}.1.stopped").exists():
                    running.append(task_id)
        if not running or loop.time() > deadline:
            break
        await asyncio.sleep(0.1)
    return [f"{t}: canceled (CANCELED answered), but its run goes on" for t in running]


async def settle(dsn: str, schema: str, bound: float) -> float:
    """Wait until no task is SUBMITTED or WORKING; the seconds that took (at most ``bound``).

    Raises:
        AssertionError: Some still are after ``bound`` seconds; names them.
    """
    loop = asyncio.get_running_loop()
    began = loop.time()
    while running := await _running(dsn, schema):
        if loop.time() - began > bound:
            raise AssertionError(f"{len(running)} tasks still running after {bound} s: {running}")
        await asyncio.sleep(0.1)
    return loop.time() - began


async def check(load: Load, dsn: str, schema: str) -> tuple[list[str], str]:
    """Every problem the end of the soak shows, and a summary of the run."""
    log = await logged(dsn, schema)
    tasks = await _listed(load)
    finals = {t: task.status.state.value for t, task in tasks.items() if task.status is not None}
    problems = list(load.findings)
    for raw, records in ((True, load.streams), (False, load.client_streams)):
        for record in records:
            if record.task_id:
                task_log, final = log.get(record.task_id, {}), finals.get(record.task_id, "")
                problems += stream_problems(record, task_log, final, raw)
    problems += await _task_problems(load, tasks)
    victims, takeovers = _victim_problems(load)
    problems += victims
    counts: dict[str, int] = {}
    for state in finals.values():
        short = state.removeprefix("TASK_STATE_").lower()
        counts[short] = counts.get(short, 0) + 1
    resumed = sum(1 for r in load.streams + load.client_streams if r.resumes)
    summary = (
        f"{load.cluster.kills} kills; {len(tasks)} tasks {counts}, {len(load.acked)} acknowledged;"
        f" {len(load.streams)} raw and {len(load.client_streams)} client streams,"
        f" {resumed} resumed on another process; {len(load.canceled)} canceled;"
        f" {len(load.follow_ups)} follow-ups; kill to FAILED seen on a survivor:"
        f" max {max(takeovers, default=0.0):.2f} s"
    )
    return problems, summary
