"""Task storage: the :class:`TaskStore` protocol, its in-memory implementation and shared helpers.

The server keeps every task (spec 4.1.1) in a store and answers GetTask (spec 3.1.3) and
ListTasks (spec 3.1.4) from it. The SQLite implementation lives in :mod:`a2a_wire.server.store._sqlite`;
both keep the rules below, and ``tests/runtime/test_store.py`` runs one suite against both.

Rules kept
----------
* **No aliasing.** A store keeps the task's JSON encoding (:func:`a2a_wire.codec.encode`), never
  the live object: ``create``/``update`` encode at once and ``get``/``list`` decode fresh copies,
  so neither the caller nor the store can change the other's data by mutating an object.
* **Owner scoping (spec 3.1.4, 13.1).** Every task is stored with the owner string the server
  derived from the caller's authentication. ``get`` and ``list`` only see the caller's own tasks;
  another owner's task looks exactly like a missing one.
* **Order (spec 3.1.4).** ``list`` sorts by status timestamp, newest first, and then by task id
  so that ties have a stable order for the cursor. Only a status change moves a task; an
  artifact-only update does not (docs/prose-and-proto.md row 12). A task without a status
  timestamp sorts as the epoch.
* **Filters.** ``context_id`` exact, ``state`` exact (``None`` or UNSPECIFIED: no filter), and
  ``status_after`` inclusive (status timestamp ``>=`` it).
* **Cursor pagination (spec 3.1.4).** A page token names the last task of the previous page
  (its status timestamp and id). It is signed with an HMAC key held by the store instance
  (:class:`PageTokens`) together with the owner and the filters, so a client can neither forge a
  position nor reuse a token with other filters; a token that fails the check raises
  :class:`~a2a_wire.errors.InvalidParamsError` with a ``pageToken`` violation. Tokens die with
  the store instance unless the same key is passed to the next one. ``next_page_token`` is
  ``""`` on the last page and ``total_size`` counts every match before paging.
* **Page size.** The handler validates ``pageSize`` (1 to :data:`MAX_PAGE_SIZE`, default
  :data:`DEFAULT_PAGE_SIZE`, -32602 otherwise); a store treats anything else as a bug.
* **Recovery on open.** A task left SUBMITTED or WORKING by a previous process has lost its
  executor, so ``open`` moves it to FAILED with an agent status message explaining that the
  server restarted (the move goes through :func:`a2a_wire._protocol.tasks.apply`), and puts that status
  in the push outbox for the task's webhooks. INPUT_REQUIRED and AUTH_REQUIRED tasks wait for
  the client and are kept as they are.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import builtins
import hashlib
import hmac
import secrets
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from a2a_wire import codec
from a2a_wire._protocol.tasks import apply
from a2a_wire.errors import InvalidParamsError, TaskNotFoundError
from a2a_wire.server.store._push import InMemoryPushStore, PushStore, status_event
from a2a_wire.types import (
    Message,
    Part,
    Role,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    Timestamp,
)

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "MAX_PAGE_TOKEN_LENGTH",
    "PAGE_TOKEN_KEY_BYTES",
    "RECOVERED_STATES",
    "RESTART_MESSAGE",
    "InMemoryTaskStore",
    "PageTokens",
    "TaskPage",
    "TaskQuery",
    "TaskStore",
    "now_timestamp",
]

DEFAULT_PAGE_SIZE = 50
"""ListTasks page size when the request sets none (proto ``ListTasksRequest.page_size``)."""

MAX_PAGE_SIZE = 100
"""Largest ListTasks page size (proto ``ListTasksRequest.page_size``)."""

MAX_PAGE_TOKEN_LENGTH = 4096
"""Longest page token read; anything longer is rejected without decoding it."""

PAGE_TOKEN_KEY_BYTES = 32
"""Length of the random HMAC key a store makes when none is given."""

_MAC_BYTES = 16

RESTART_MESSAGE = (
    "The server restarted while this task was in progress, so its work was lost. "
    "Send the request again to start a new task."
)
"""Text of the agent status message put on tasks failed by recovery."""

RECOVERED_STATES: frozenset[TaskState] = frozenset({TaskState.SUBMITTED, TaskState.WORKING})
"""States whose tasks ``open`` fails: their executor died with the previous process."""

Instant = tuple[int, int]
"""A status timestamp as (seconds, nanoseconds): the sort and filter key, exact at any date."""


@dataclass(frozen=True)
class TaskQuery:
    """What ListTasks asks for (spec 3.1.4), already validated by the handler.

    Attributes:
        context_id: Only tasks of this context; ``""`` for all.
        state: Only tasks in this state; ``None`` (or UNSPECIFIED) for all.
        status_after: Only tasks whose status timestamp is at or after this instant.
        page_size: Tasks per page, 1 to :data:`MAX_PAGE_SIZE`.
        page_token: ``next_page_token`` of the previous page; ``""`` for the first page.
    """

    context_id: str = ""
    state: TaskState | None = None
    status_after: Timestamp | None = None
    page_size: int = DEFAULT_PAGE_SIZE
    page_token: str = ""


@dataclass(frozen=True)
class TaskPage:
    """One page of ListTasks results.

    Attributes:
        tasks: The tasks, newest status first; fresh copies owned by the caller.
        next_page_token: Token for the next page; ``""`` when this is the last page.
        total_size: Number of tasks matching the query, over all pages.
    """

    tasks: list[Task]
    next_page_token: str
    total_size: int


class TaskStore(PushStore, Protocol):
    """Durable storage of tasks, scoped by owner. See the module docstring for the rules.

    It also holds the task's push configs and delivery outbox (:mod:`a2a_wire.server.store._push`).
    """

    async def open(self) -> builtins.list[str]:
        """Prepare the store and recover tasks interrupted by a restart.

        Returns:
            Ids of the tasks moved from SUBMITTED or WORKING to FAILED.
        """
        ...

    async def close(self) -> None:
        """Release the store's resources; the data stays for the next ``open``."""
        ...

    async def create(
        self,
        task: Task,
        *,
        owner: str = "",
        push_configs: Sequence[TaskPushNotificationConfig] = (),
        push: bytes | None = None,
    ) -> int:
        """Store a new task (with its first push configs); it is durable when this returns.

        Args:
            task: The task.
            owner: The caller owning it.
            push_configs: Push configs to store with it, in the same write.
            push: An event to put in the outbox for each of the task's configs, in the same
                write (see :mod:`a2a_wire.server.store._push`).

        Returns:
            The number of outbox rows added.

        Raises:
            ValueError: the task has no id, or a task with that id exists.
        """
        ...

    async def update(self, task: Task, *, push: bytes | None = None) -> int:
        """Replace a stored task (its owner stays); durable when this returns.

        Args:
            task: The task.
            push: An event to put in the outbox for each of the task's configs, in the same
                write (see :mod:`a2a_wire.server.store._push`).

        Returns:
            The number of outbox rows added.

        Raises:
            TaskNotFoundError: no task with that id is stored.
        """
        ...

    async def get(self, task_id: str, *, owner: str = "") -> Task | None:
        """The task with ``task_id`` if ``owner`` owns it, else ``None``."""
        ...

    async def list(self, query: TaskQuery, *, owner: str = "") -> TaskPage:
        """One page of ``owner``'s tasks matching ``query``.

        Raises:
            InvalidParamsError: the page token is not one this store issued for this query.
        """
        ...


class PageTokens:
    """Issues and checks the signed page tokens of ListTasks.

    A token is the URL-safe base64 of the JSON ``[seconds, nanos, task_id]`` (the status
    timestamp and id of the last task shown) followed by an HMAC-SHA256 tag, truncated to 16
    bytes, over that position and the query's scope (owner and filters).

    Args:
        key: The HMAC key; a random :data:`PAGE_TOKEN_KEY_BYTES`-byte key when ``None``. Pass the
            same key to a new store to keep tokens valid across restarts.
    """

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key if key is not None else secrets.token_bytes(PAGE_TOKEN_KEY_BYTES)

    def _tag(self, scope: bytes, payload: bytes) -> bytes:
        signed = len(scope).to_bytes(4, "big") + scope + payload
        return hmac.new(self._key, signed, hashlib.sha256).digest()[:_MAC_BYTES]

    def issue(self, position: tuple[int, int, str], scope: bytes) -> str:
        """The token for the page after ``position`` (status seconds, nanoseconds, task id)."""
        payload = codec.dumps(list(position))
        raw = payload + self._tag(scope, payload)
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    def read(self, token: str, scope: bytes) -> tuple[int, int, str]:
        """The position a token names.

        Raises:
            InvalidParamsError: the token is malformed, was not issued by this key, or was
                issued for another owner or other filters.
        """
        invalid = InvalidParamsError(
            "Invalid page token",
            violations=[("pageToken", "not a token issued for this query by this server")],
        )
        if len(token) > MAX_PAGE_TOKEN_LENGTH or not token.isascii():
            raise invalid
        try:
            raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True)
        except (binascii.Error, ValueError):
            raise invalid from None
        payload, tag = raw[:-_MAC_BYTES], raw[-_MAC_BYTES:]
        if not payload or not hmac.compare_digest(tag, self._tag(scope, payload)):
            raise invalid
        seconds, nanos, task_id = codec.loads(payload)  # our own JSON: the tag matched
        return int(seconds), int(nanos), str(task_id)


def query_scope(query: TaskQuery, owner: str) -> bytes:
    """What a page token is bound to besides its position: the owner and the filters."""
    after = timestamp_key(query.status_after) if query.status_after is not None else None
    return codec.dumps([owner, query.context_id, state_filter(query), after])


def timestamp_key(timestamp: Timestamp) -> Instant:
    """An instant as (seconds, nanoseconds): integers that fit SQLite for years 1 to 9999."""
    return timestamp.seconds, timestamp.nanos


def status_key(task: Task) -> Instant:
    """The task's status timestamp; the epoch when it has none."""
    status = task.status
    if status is None or status.timestamp is None:
        return 0, 0
    return timestamp_key(status.timestamp)


def state_key(state: TaskState) -> str:
    """How a state is stored and filtered: its wire value as text (unknown values included)."""
    return str(state.value)


def task_state(task: Task) -> TaskState:
    """The task's state; UNSPECIFIED when it has no status."""
    return task.status.state if task.status is not None else TaskState.UNSPECIFIED


def state_filter(query: TaskQuery) -> str | None:
    """The stored state the query filters on, or ``None`` for no state filter."""
    if query.state is None or query.state == TaskState.UNSPECIFIED:
        return None
    return state_key(query.state)


def check_page_size(query: TaskQuery) -> None:
    """Reject a page size the handler should have refused.

    Raises:
        ValueError: ``page_size`` is outside 1 to :data:`MAX_PAGE_SIZE`.
    """
    if not 1 <= query.page_size <= MAX_PAGE_SIZE:
        raise ValueError(f"page_size must be within 1..{MAX_PAGE_SIZE}, not {query.page_size}")


def now_timestamp() -> Timestamp:
    """The current time with millisecond precision (spec 5.6.1)."""
    millis = time.time_ns() // 1_000_000
    return Timestamp(seconds=millis // 1000, nanos=(millis % 1000) * 1_000_000)


def fail_after_restart(task: Task, now: Timestamp) -> None:
    """Move a task whose executor died with the process to FAILED, explaining why."""
    note = Message(
        message_id=uuid.uuid4().hex,
        role=Role.AGENT,
        parts=[Part(text=RESTART_MESSAGE)],
    )
    status = TaskStatus(state=TaskState.FAILED, message=note, timestamp=now)
    event = TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=status)
    apply(task, event, now=now)


def _order(match: tuple[int, int, str, _Row]) -> tuple[int, int, str]:
    return match[0], match[1], match[2]


@dataclass(slots=True)
class _Row:
    owner: str
    context_id: str
    state: str
    status: Instant
    body: bytes


class InMemoryTaskStore(InMemoryPushStore, TaskStore):
    """A :class:`TaskStore` in process memory, holding each task as its encoded JSON.

    Data survives ``close`` and a later ``open`` of the same instance (which runs recovery), but
    not the process. Listing sorts all of an owner's matching tasks, which suits tests and
    small deployments.

    Args:
        page_token_key: HMAC key for page tokens; random when ``None`` (see :class:`PageTokens`).
    """

    def __init__(self, *, page_token_key: bytes | None = None) -> None:
        self._rows: dict[str, _Row] = {}
        self._tokens = PageTokens(page_token_key)
        self._open = False
        self._init_push()

    def _require_open(self) -> None:
        if not self._open:
            raise RuntimeError("the task store is not open; call open() first")

    async def open(self) -> builtins.list[str]:
        """Mark the store open and fail the tasks a restart interrupted.

        Returns:
            Ids of the tasks moved to FAILED.

        Raises:
            RuntimeError: the store is already open (recovery would fail its live tasks).
        """
        if self._open:
            raise RuntimeError("the task store is already open")
        failed: builtins.list[str] = []
        now = now_timestamp()
        recovered = {state_key(s) for s in RECOVERED_STATES}
        for task_id, row in self._rows.items():
            if row.state in recovered:
                task = codec.decode(Task, row.body)
                fail_after_restart(task, now)
                self._rows[task_id] = self._row(task, row.owner)
                self._enqueue_push(task_id, status_event(task))
                failed.append(task_id)
        self._open = True
        return failed

    async def close(self) -> None:
        """Mark the store closed; the tasks stay for the next ``open``."""
        self._open = False

    @staticmethod
    def _row(task: Task, owner: str) -> _Row:
        body = codec.encode(task)
        return _Row(owner, task.context_id, state_key(task_state(task)), status_key(task), body)

    async def create(
        self,
        task: Task,
        *,
        owner: str = "",
        push_configs: Sequence[TaskPushNotificationConfig] = (),
        push: bytes | None = None,
    ) -> int:
        """Store a new task, its push configs and its outbox rows in one step.

        Returns:
            The number of outbox rows added.

        Raises:
            ValueError: the task has no id, or a task with that id exists.
        """
        self._require_open()
        if not task.id:
            raise ValueError("a task needs an id to be stored")
        if task.id in self._rows:
            raise ValueError(f"task {task.id!r} is already stored")
        self._rows[task.id] = self._row(task, owner)
        self._put_configs(push_configs)
        return self._enqueue_push(task.id, push)

    async def update(self, task: Task, *, push: bytes | None = None) -> int:
        """Replace a stored task, keeping its owner, and add its outbox rows in one step.

        Returns:
            The number of outbox rows added.

        Raises:
            TaskNotFoundError: no task with that id is stored.
        """
        self._require_open()
        row = self._rows.get(task.id)
        if row is None:
            raise TaskNotFoundError(metadata={"taskId": task.id})
        self._rows[task.id] = self._row(task, row.owner)
        return self._enqueue_push(task.id, push)

    async def get(self, task_id: str, *, owner: str = "") -> Task | None:
        """A fresh copy of ``owner``'s task ``task_id``, or ``None``."""
        self._require_open()
        row = self._rows.get(task_id)
        if row is None or row.owner != owner:
            return None
        return codec.decode(Task, row.body)

    async def list(self, query: TaskQuery, *, owner: str = "") -> TaskPage:
        """One page of ``owner``'s tasks matching ``query``, newest status first.

        Raises:
            InvalidParamsError: the page token is not valid for this query.
        """
        self._require_open()
        check_page_size(query)
        scope = query_scope(query, owner)
        after = self._tokens.read(query.page_token, scope) if query.page_token else None
        state = state_filter(query)
        since = timestamp_key(query.status_after) if query.status_after is not None else None
        matches = sorted(
            (
                (-row.status[0], -row.status[1], task_id, row)
                for task_id, row in self._rows.items()
                if row.owner == owner
                and (not query.context_id or row.context_id == query.context_id)
                and (state is None or row.state == state)
                and (since is None or row.status >= since)
            ),
            key=_order,
        )
        start = 0
        if after is not None:
            start = bisect.bisect_right(matches, (-after[0], -after[1], after[2]), key=_order)
        page = matches[start : start + query.page_size]
        token = ""
        if start + query.page_size < len(matches):
            seconds, nanos, last_id, _ = page[-1]
            token = self._tokens.issue((-seconds, -nanos, last_id), scope)
        tasks = [codec.decode(Task, m[3].body) for m in page]
        return TaskPage(tasks=tasks, next_page_token=token, total_size=len(matches))
