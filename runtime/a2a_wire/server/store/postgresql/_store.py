"""The PostgreSQL task store: :class:`PostgresTaskStore`, shared by any number of processes.

The tables are the truth; several stores (processes, hosts) may share one schema. Recovery on
open is the takeover scan of the leases, so ``open`` never fails the running tasks of a live
process. Its parts and how they fit: docs/internals/store.md, "PostgreSQL: the store and its parts".
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import TYPE_CHECKING

from a2a_wire._protocol.tasks import InvalidTransitionError, now_timestamp
from a2a_wire.errors import TaskNotFoundError
from a2a_wire.server.store._contract.errors import StoreUnavailableError, describe
from a2a_wire.server.store._contract.log import (
    PURGE_BATCH,
    READ_LIMIT,
    Appended,
    EventLogStore,
    EventRange,
    LogInput,
    Snapshot,
)
from a2a_wire.server.store._contract.push import Delivery, LaneKey, PushClaims
from a2a_wire.server.store._contract.tasks import TaskPage, TaskQuery
from a2a_wire.server.store._fold.create import first_turn, new_task
from a2a_wire.server.store._fold.events import Prepared, prepare, remember, should_fold
from a2a_wire.server.store._fold.keys import state_key, status_key
from a2a_wire.server.store._fold.outage import OutageLog
from a2a_wire.server.store._fold.paging import PageTokens
from a2a_wire.server.store.postgresql import _rows as rows
from a2a_wire.server.store.postgresql._cancels import PostgresCancels
from a2a_wire.server.store.postgresql._connection import (
    ACQUIRE_TIMEOUT,
    CONNECT_TIMEOUT,
    MIGRATION_LOCK_TIMEOUT,
    STATEMENT_TIMEOUT,
    Deadlines,
    GuardedPool,
    close_within,
    load_driver,
    open_pool,
    start_hint,
    translated,
)
from a2a_wire.server.store.postgresql._leases import HEARTBEAT_SECONDS, LEASE_SECONDS
from a2a_wire.server.store.postgresql._listen import GapWaiters, Listener
from a2a_wire.server.store.postgresql._push import PostgresPushStore
from a2a_wire.server.store.postgresql._reads import PostgresReads
from a2a_wire.server.store.postgresql._retention import PostgresRetention
from a2a_wire.server.store.postgresql._rows import Head
from a2a_wire.server.store.postgresql._schema import (
    DEFAULT_SCHEMA,
    check_schema_name,
    migrate_schema,
)
from a2a_wire.server.store.postgresql._text import setup_connection
from a2a_wire.server.store.postgresql._writes import (
    DROP,
    TAKE,
    Target,
    TaskLocks,
    Written,
    fold_snapshot,
    insert_task,
    lease_change,
    write_batch,
)
from a2a_wire.types import Task, TaskPushNotificationConfig, TaskState

if TYPE_CHECKING:
    from a2a_wire.server.store.postgresql._connection import Queryable

__all__ = ["HEAD_CACHE", "POLL_INTERVAL", "POOL_SIZE", "PostgresTaskStore"]

HEAD_CACHE = 4096
"""Most task heads a store remembers; a forgotten one costs the locked path once."""

POLL_INTERVAL = 1.0
"""Default seconds between a waiting reader's checks of the table when no notification came."""

POOL_SIZE = 10
"""Default most connections in a store's pool (its listening connection comes on top)."""


class PostgresTaskStore(PostgresCancels, EventLogStore, PushClaims):
    """Event logs of tasks in a PostgreSQL schema, shared by any number of stores (processes).

    Args:
        dsn: Where PostgreSQL is (a ``postgresql://`` URL or a libpq key/value string).
        schema: The PostgreSQL schema of the tables; created on the first ``open``.
        pool_size: Most connections of the pool.
        poll_interval: Seconds between a waiting reader's checks when no notification came, and
            between the keeper's checks for cancel requests.
        recover: Run the takeover scan on ``open`` (failing the running tasks of dead
            processes); the keeper runs it later either way.
        page_token_key: HMAC key for page tokens (give every process the same one); random
            when ``None``.
        history_limit: Most messages a task keeps (``ServerSettings.max_history_per_task``).
        clock: Seconds since the epoch, for the state-change times retention reads.
        process_id: This store's process id in leases and claims; random when ``None``.
        lease_seconds: How long a lease or delivery claim lasts after its last renewal.
        heartbeat_seconds: Seconds between the keeper's heartbeats and takeover scans; ``None``
            leaves both to the caller.
        lease_clock: Seconds since the epoch for leases and claims; ``None`` for the database
            server's clock.
        connect_timeout: Seconds a new connection may take (the pool's and the listener's).
        statement_timeout: Seconds one store call may take, waiting for a connection included;
            twice this is the outage log's quiet period (:mod:`a2a_wire.server.store._fold.outage`).
        acquire_timeout: Seconds a call waits for a connection of the pool.
        migration_lock_timeout: Seconds ``open`` waits for each lock of the schema check (see
            :func:`~._schema.migrate_schema`).

    Every method that reaches the database raises ``StoreUnavailableError`` for a fault of it
    (down, restarting, stalled past a deadline); see :mod:`._connection`.

    Raises:
        ValueError: ``schema`` is not a plain lower-case identifier, or a number is out of range
            (``heartbeat_seconds`` must be below ``lease_seconds``, timeouts above 0).
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        pool_size: int = POOL_SIZE,
        poll_interval: float = POLL_INTERVAL,
        recover: bool = True,
        page_token_key: bytes | None = None,
        history_limit: int | None = None,
        clock: Callable[[], float] = time.time,
        process_id: str | None = None,
        lease_seconds: float = LEASE_SECONDS,
        heartbeat_seconds: float | None = HEARTBEAT_SECONDS,
        lease_clock: Callable[[], float] | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
        statement_timeout: float = STATEMENT_TIMEOUT,
        acquire_timeout: float = ACQUIRE_TIMEOUT,
        migration_lock_timeout: float = MIGRATION_LOCK_TIMEOUT,
    ) -> None:
        if pool_size < 1 or not poll_interval > 0:
            raise ValueError("pool_size must be at least 1 and poll_interval above 0")
        beat = lease_seconds / 2 if heartbeat_seconds is None else heartbeat_seconds
        if not 0 < beat < lease_seconds:
            raise ValueError("heartbeat_seconds must be above 0 and below lease_seconds")
        self._dsn = dsn
        self._deadlines = Deadlines(
            connect_timeout, statement_timeout, acquire_timeout, migration_lock_timeout
        )
        # A call that is going to fail does so within the statement deadline of its start.
        self._outage = OutageLog("PostgreSQL", quiet_seconds=2 * statement_timeout)
        self._schema = check_schema_name(schema)
        self._target = target = Target.for_schema(schema)
        self._sql = target.sql
        self._pool_size = pool_size
        self._poll = poll_interval
        self._recover_on_open = recover
        self.page_tokens = PageTokens(page_token_key)
        self._history_limit = history_limit
        self._clock = clock
        self._db: GuardedPool | None = None
        self._listener: Listener | None = None
        self._heads: OrderedDict[str, Head] = OrderedDict()
        self._locks = TaskLocks()
        self._waiters = GapWaiters()
        # The heartbeat's deadline is also the fence's margin (:mod:`._fence`):
        # short enough that the next beat can come back before the fence fires.
        beat_deadline = min(statement_timeout, beat, (lease_seconds - beat) / 3)
        self._init_leases(schema, process_id, lease_seconds, lease_clock, beat_deadline)
        self._init_cancels(heartbeat_seconds)
        self._init_parts()

    def _init_parts(self) -> None:
        """The collaborators, on the state ``__init__`` set (named in :mod:`._state`)."""
        limit, heads, waiters = self._history_limit, self._heads, self._waiters
        self._reads = PostgresReads(
            self._pooled, self._sql, limit, heads, waiters, self._poll, self.page_tokens
        )
        self._retention = PostgresRetention(
            self._pooled, self._target, self._schema, limit, heads, self._held, waiters
        )
        self._push = PostgresPushStore(
            self._pooled, self._schema, self.process_id, self._lease_seconds, self._lease_clock
        )

    def _pooled(self) -> GuardedPool:
        if self._db is None:
            raise RuntimeError("the task store is not open; call open() first")
        return self._db

    @property
    def _pool(self) -> GuardedPool:
        return self._pooled()

    async def open(self) -> builtins.list[str]:
        """Connect, create or upgrade the schema, listen, beat, take over, start the keeper.

        Every step is bounded: the connections by the connect timeout, the schema check's lock
        waits by the migration lock timeout, every statement (but an upgrade's DDL) by the
        statement timeout.

        Returns:
            Ids of the tasks the takeover scan failed (none unless ``recover``).

        Raises:
            RuntimeError: the store is already open, or the schema has a newer version.
            StoreUnavailableError: the database cannot be reached, or a lock not had, in time;
                the message names the step, the deadline and what to do.
        """
        if self._db is not None:
            raise RuntimeError("the task store is already open")
        deadlines, outage = self._deadlines, self._outage
        with self._opening("connect", "connect_timeout_seconds"), translated(outage):
            conn = await load_driver().connect(self._dsn, timeout=deadlines.connect)
        try:
            step = (
                "check or migrate the schema",
                "migration_lock_timeout_seconds",
                "statement_timeout_seconds",
            )
            with self._opening(*step), translated(outage):
                await migrate_schema(
                    conn,
                    self._schema,
                    lock_timeout=deadlines.migration_lock,
                    statement_timeout=deadlines.statement,
                )
        finally:
            await close_within(conn, deadlines.statement)
        raw = await open_pool(
            self._dsn, self._pool_size, init=setup_connection, options=deadlines.connect_options()
        )  # it connects on demand: nothing here waits
        self._db = GuardedPool(raw, deadlines, outage)
        try:
            self._listener = Listener(
                self._dsn,
                self._target.channel,
                on_event=self._waiters.notified,
                on_gap=self._gap,
                retry=self._poll,
                extra={self._target.cancel_channel: self._cancel_notified},
                options=deadlines.connect_options(),
            )
            with self._opening("listen", "connect_timeout_seconds"), translated(outage):
                await self._listener.start()
            failed = await self._register()
            self._start_keeper()
            return failed
        except BaseException:
            await self.close()
            raise

    async def _register(self) -> builtins.list[str]:
        """The last step of ``open``: this process's row, then the takeover scan's failed ids."""
        with self._opening(
            "register and take over", "statement_timeout_seconds", per_statement=True
        ):
            await self._end_process()  # leases under this id are a previous incarnation's
            await self.heartbeat()
            return await self.take_over() if self._recover_on_open else []

    @contextlib.contextmanager
    def _opening(self, step: str, *deadlines: str, per_statement: bool = False) -> Iterator[None]:
        """Raise a fault in a step of ``open`` as ``StoreUnavailableError`` saying what to do.

        ``deadlines``: the ``[postgresql]`` settings that bound the step, added up (each of its
        statements, with ``per_statement``).
        """
        try:
            yield
        except StoreUnavailableError as exc:
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            seconds = {
                "connect_timeout_seconds": self._deadlines.connect,
                "statement_timeout_seconds": self._deadlines.statement,
                "migration_lock_timeout_seconds": self._deadlines.migration_lock,
            }
            waited = " + ".join(f"{name} ({seconds[name]:g} s)" for name in deadlines)
            if per_statement:
                waited += " for each of its statements"
            raise StoreUnavailableError(
                f"PostgreSQL: could not {step} ({describe(cause)}); "
                f"{start_hint(cause, f'[postgresql] {waited}', self._schema, self._deadlines)}",
                retry_after=exc.retry_after,
            ) from cause

    async def close(self) -> None:
        """Stop the keeper and listening, expire leases and claims, close the pool; twice is fine.

        Others take the expired leases over at once; the data stays. Bounded by the deadlines
        when the database is gone (the leases then expire on their own).
        """
        await self._stop_keeper()
        listener, self._listener = self._listener, None
        pool = self._db
        if pool is not None:
            with contextlib.suppress(Exception):  # a lost database: the leases expire anyway
                await self._end_process()
        self._db = None
        self._heads.clear()
        if listener is not None:
            await listener.close()
        if pool is not None:
            await pool.close()

    async def ping(self) -> None:
        """One indexed read of the tables requests need, within the statement deadline.

        It reads, by primary key, a key no row has in ``tasks``, ``task_snapshots``,
        ``task_events`` and ``task_leases``: a table locked by another session makes it fail
        as the requests on that table would (see ``EventLogStore.ping``).

        Raises:
            StoreUnavailableError: no answer in time, or the database is unreachable.
        """
        await self._pool.fetchrow(self._sql.ping, timeout=self._deadlines.statement)

    async def create(
        self,
        task: Task,
        *,
        owner: str = "",
        push_configs: Sequence[TaskPushNotificationConfig] = (),
        push: bool = False,
        events: Sequence[LogInput] = (),
    ) -> Appended:
        """Store a new task as event 1 of its log, then append ``events`` (see the protocol).

        A task created SUBMITTED or WORKING is leased to this process in the same statement:
        the creating process runs its executor (see :mod:`._leases`).

        Raises:
            ValueError: the task has no id, or its id is taken (also by a deleted task that is
                not purged yet).
            InvalidTransitionError: an event of ``events`` is illegal; nothing was stored.
        """
        new = new_task(task, self._history_limit)
        stored, state, body, first = new.stored, new.state, new.body, new.first
        if events:  # checked before anything is stored; appended after the create
            prepare(task.id, stored.context_id, state, events, now_timestamp())
        listing = (task.id, owner, stored.context_id, state_key(state), *status_key(stored))
        row = (*listing, self._clock(), body, first.body)
        lease = self._lease(lease_change(TaskState.UNSPECIFIED, state))
        started = asyncio.get_running_loop().time()
        outbox = await insert_task(
            self._pool, self._target, row, first.body, push_configs, push, lease
        )
        if lease.op == TAKE:
            self._took(task.id, started)
        remember(self._heads, task.id, Head(owner, stored.context_id, state, 1), HEAD_CACHE)
        self._waiters.wake(task.id)
        return await first_turn(self, Appended([first], outbox, state), task.id, events, push)

    async def append(
        self, task_id: str, events: Sequence[LogInput], *, push: bool = False
    ) -> Appended:
        """Check and commit one turn's events (see the protocol and "Writes"); hand a fold over.

        Raises:
            TaskNotFoundError: no such task.
            InvalidTransitionError: an event is illegal; nothing was stored.
            ValueError: ``events`` is empty.
        """
        if not events:
            raise ValueError("an append needs at least one event")
        async with self._locks.hold(task_id):
            head, written = await self._append(task_id, events, push)
        self._waiters.wake(task_id)
        task, seq, limit = None, written.events[-1].seq, self._history_limit
        if should_fold(written.tail_bytes, written.snap_bytes, head.state):
            read = await fold_snapshot(self._pool, self._sql, task_id, head.owner, limit)
            task = read.task if read is not None and read.seq == seq else None  # nothing after
        return Appended(written.events, written.outbox, head.state, task)

    async def _append(
        self, task_id: str, events: Sequence[LogInput], push: bool
    ) -> tuple[Head, Written]:
        head = self._heads.get(task_id)
        if head is not None:
            try:
                prepared: Prepared | None = prepare(
                    task_id, head.context_id, head.state, events, now_timestamp()
                )
            except InvalidTransitionError:
                prepared = None  # the remembered state may be stale: ask the table
            if prepared is not None:
                written = await self._write(self._pool, task_id, head, prepared, push)
                if written is not None:
                    return head, written
        async with self._pool.acquire() as conn, conn.transaction():
            head = await rows.load_head(conn, self._sql.lock_head, task_id)
            if head is None:
                self._heads.pop(task_id, None)
                raise TaskNotFoundError(metadata={"taskId": task_id})
            prepared = prepare(task_id, head.context_id, head.state, events, now_timestamp())
            written = await self._write(conn, task_id, head, prepared, push)
        assert written is not None  # the head row was locked: the number cannot have moved
        return head, written

    async def _write(
        self, conn: Queryable, task_id: str, head: Head, prepared: Prepared, push: bool
    ) -> Written | None:
        """Write a checked batch after ``head``; then remember the new head (forget it if not)."""
        after = prepared.status.state if prepared.status is not None else None
        changed_at, lease = self._clock(), self._lease(lease_change(head.state, after))
        started = asyncio.get_running_loop().time()
        written = await write_batch(
            conn,
            self._target,
            task_id,
            head.seq,
            prepared,
            push=push,
            changed_at=changed_at,
            lease=lease,
        )
        if written is None:
            self._heads.pop(task_id, None)
            return None
        if lease.op == TAKE:
            self._took(task_id, started)
        elif lease.op == DROP:
            self._held.discard(task_id)
        head.seq = written.events[-1].seq
        head.state = prepared.status.state if prepared.status is not None else head.state
        remember(self._heads, task_id, head, HEAD_CACHE)
        return written

    # Reads and retention: their parts, on the state passed to them in __init__.

    async def get(self, task_id: str, *, owner: str = "") -> Task | None:
        """A fresh copy of ``owner``'s task, or ``None``."""
        return await self._reads.get(task_id, owner=owner)

    async def snapshot(self, task_id: str, *, owner: str = "") -> Snapshot | None:
        """``owner``'s task with the number of its last event, or ``None``."""
        return await self._reads.snapshot(task_id, owner=owner)

    async def list(self, query: TaskQuery, *, owner: str = "") -> TaskPage:
        """One page of ``owner``'s tasks matching ``query``, newest status first.

        Raises:
            InvalidParamsError: the page token is not valid for this query.
        """
        return await self._reads.list(query, owner=owner)

    async def read_events(
        self, task_id: str, after_seq: int, *, owner: str = "", limit: int = READ_LIMIT
    ) -> EventRange | None:
        """Events numbered above ``after_seq`` (see the protocol).

        Raises:
            ValueError: ``after_seq`` is negative or ``limit`` below 1.
        """
        return await self._reads.read_events(task_id, after_seq, owner=owner, limit=limit)

    async def wait_events(self, task_id: str, after_seq: int, *, timeout: float) -> bool:
        """Wait for an event above ``after_seq``: woken by a notification, or polling."""
        return await self._reads.wait_events(task_id, after_seq, timeout=timeout)

    async def compact(self, task_id: str, through_seq: int, *, batch: int = PURGE_BATCH) -> int:
        """Drop up to ``batch`` events numbered ``through_seq`` or lower (see the protocol)."""
        return await self._retention.compact(task_id, through_seq, batch=batch)

    async def expired(
        self, states: Collection[TaskState], before: float, *, limit: int, logged: bool = False
    ) -> builtins.list[str]:
        """Tasks in ``states`` unchanged since ``before``, oldest first, leased ones left out."""
        return await self._retention.expired(states, before, limit=limit, logged=logged)

    async def delete_task(self, task_id: str) -> bool:
        """Make a task unknown with its push configs, lease and cancel request, in one statement."""
        return await self._retention.delete_task(task_id)

    async def purge(self, *, batch: int = PURGE_BATCH) -> int:
        """Delete up to ``batch`` event and outbox rows of a deleted task (see the protocol)."""
        return await self._retention.purge(batch=batch)

    # Push configs, outbox and claims: their part, on the state passed to it in __init__.

    async def put_push_config(
        self, config: TaskPushNotificationConfig, *, limit: int | None = None
    ) -> bool:
        """Store a config, replacing one with the same task and id, within ``limit``."""
        return await self._push.put_push_config(config, limit=limit)

    async def get_push_config(
        self, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None:
        """The config, or ``None``."""
        return await self._push.get_push_config(task_id, config_id)

    async def list_push_configs(
        self, task_id: str
    ) -> builtins.list[tuple[int, TaskPushNotificationConfig]]:
        """The task's configs with their positions, in creation order."""
        return await self._push.list_push_configs(task_id)

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        """Remove a config and all its outbox rows, in one transaction."""
        return await self._push.delete_push_config(task_id, config_id)

    async def pending_lanes(self, after_seq: int) -> tuple[builtins.list[LaneKey], int]:
        """Every lane with undelivered rows and a config, whatever ``after_seq`` is (see above)."""
        return await self._push.pending_lanes(after_seq)

    async def claim_deliveries(
        self, limit: int, *, holding: Collection[int] | None = None
    ) -> builtins.list[Delivery]:
        """Claim up to ``limit`` due lane heads for this process (see "Claims")."""
        return await self._push.claim_deliveries(limit, holding=holding)

    async def release_delivery(self, seq: int) -> None:
        """Give back this process's claim on a row without recording an attempt."""
        await self._push.release_delivery(seq)

    async def next_delivery(self, task_id: str, config_id: str) -> Delivery | None:
        """The lane's first undelivered row."""
        return await self._push.next_delivery(task_id, config_id)

    async def delivery_done(self, seq: int) -> None:
        """Remove a delivered row."""
        await self._push.delivery_done(seq)

    async def delivery_retry(
        self, seq: int, *, attempts: int, next_attempt_at: float, error: str
    ) -> None:
        """Record a failed attempt and end this process's claim (see "Claims")."""
        await self._push.delivery_retry(
            seq, attempts=attempts, next_attempt_at=next_attempt_at, error=error
        )

    async def delivery_retry_in(self, seq: int, *, attempts: int, delay: float, error: str) -> None:
        """Record a failed attempt due again ``delay`` seconds from now by the lease clock."""
        await self._push.delivery_retry_in(seq, attempts=attempts, delay=delay, error=error)

    async def delivery_failed(self, seq: int, *, attempts: int, error: str) -> None:
        """Mark a row given up, ending this process's claim (see "Claims")."""
        await self._push.delivery_failed(seq, attempts=attempts, error=error)

    async def failed_deliveries(self, task_id: str) -> builtins.list[Delivery]:
        """The task's given-up rows."""
        return await self._push.failed_deliveries(task_id)

    async def outbox_backlog(self) -> tuple[int, float | None]:
        """Rows not delivered nor given up (by every process), and the oldest one's time."""
        return await self._push.outbox_backlog()
