"""The :class:`~a2a_wire.server.store.PushStore` and :class:`~a2a_wire.server.store.PushClaims` parts of the PostgreSQL store.

Outbox rows commit with the event that causes them, and a lane commits in order because each
write holds its task's head row; any process may claim due lane heads. See docs/internals/store.md,
"PostgreSQL: outbox order and claims".
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from a2a_wire import codec
from a2a_wire.server.store._contract.push import Delivery, LaneKey, PushClaims, PushStore
from a2a_wire.server.store._fold.reads import delivery_of
from a2a_wire.server.store.postgresql._schema import lock_key
from a2a_wire.server.store.postgresql._statements import NOW
from a2a_wire.types import TaskPushNotificationConfig

if TYPE_CHECKING:
    from a2a_wire.server.store.postgresql._connection import Conn, GuardedPool

__all__ = ["PostgresPushStore", "put_configs"]

_COLUMNS = (
    "o.seq, o.delivery_id, o.body, o.created_at, o.attempts, o.next_attempt_at, o.last_error,"
    " o.failed, c.body"
)


_CLAIM = f"""
WITH RECURSIVE now AS (SELECT {NOW.replace("{n}", "2")} AS t), fresh AS (
  (SELECT o.task_id, o.config_id, o.seq FROM {{s}}.push_outbox o
  WHERE o.attempts = 0 AND NOT o.failed ORDER BY o.task_id, o.config_id, o.seq LIMIT 1)
  UNION ALL
  SELECT n.task_id, n.config_id, n.seq FROM fresh f, LATERAL (
    SELECT o.task_id, o.config_id, o.seq FROM {{s}}.push_outbox o
    WHERE o.attempts = 0 AND NOT o.failed AND (o.task_id, o.config_id) > (f.task_id, f.config_id)
    ORDER BY o.task_id, o.config_id, o.seq LIMIT 1) n
), candidates AS (
  SELECT seq FROM fresh
  UNION SELECT o.seq FROM {{s}}.push_outbox o, now
  WHERE o.attempts > 0 AND NOT o.failed AND o.next_attempt_at <= now.t
), picked AS (
  SELECT o.seq FROM {{s}}.push_outbox o, now
  WHERE o.seq = ANY(ARRAY(SELECT seq FROM candidates)) AND NOT o.failed AND o.next_attempt_at <= now.t
  AND (o.claimed_by IS NULL OR o.claim_until < now.t
    OR (o.claimed_by = $1 AND NOT o.seq = ANY(COALESCE($5::bigint[], ARRAY[o.seq]))))
  AND o.seq = (SELECT e.seq FROM {{s}}.push_outbox e
    WHERE (e.task_id, e.config_id) >= (o.task_id, o.config_id) AND NOT e.failed
    ORDER BY e.task_id, e.config_id, e.seq LIMIT 1)
  AND EXISTS (SELECT 1 FROM {{s}}.push_configs c WHERE c.task_id = o.task_id AND c.id = o.config_id)
  ORDER BY o.seq LIMIT $3 FOR UPDATE OF o SKIP LOCKED
), claimed AS (
  UPDATE {{s}}.push_outbox o SET claimed_by = $1, claim_until = now.t + $4 FROM picked, now
  WHERE o.seq = picked.seq
  RETURNING o.*
)
SELECT {_COLUMNS} FROM claimed o
JOIN {{s}}.push_configs c ON c.task_id = o.task_id AND c.id = o.config_id ORDER BY o.seq
"""
"""Claim due lane heads (see "Claims"). The candidates are found without walking the rows that
wait behind a head: the first never-attempted row of each lane that has one (one index descent
per lane, ``fresh``), and the attempted rows due now (``push_outbox_retried``); every candidate
is then read by its number (an array, so that the planner cannot choose to scan the table
for a join) and claimed only if it is its lane's first row not given up: the first row at or
after the lane in the lane index's order (asked by lane and number, the planner may walk the
numbers instead, every row below the candidate's)."""

_MINE = "(claimed_by IS NULL OR claimed_by = $2)"
"""A row this process may record an attempt on: unclaimed, or claimed by it."""


async def put_configs(
    conn: Conn, schema: str, configs: Sequence[TaskPushNotificationConfig]
) -> None:
    """Insert or replace configs on ``conn`` (inside the caller's transaction, if any)."""
    statement = (
        f"INSERT INTO {schema}.push_configs (task_id, id, body) VALUES ($1, $2, $3)"
        " ON CONFLICT (task_id, id) DO UPDATE SET body = excluded.body"
    )
    await conn.executemany(statement, [(c.task_id, c.id, codec.encode(c)) for c in configs])


class PostgresPushStore(PushStore, PushClaims):
    """Push configs and outbox of :class:`~._store.PostgresTaskStore`, on the state it passes in.

    Args:
        pool: The store's guarded pool, or ``RuntimeError`` while it is closed.
        schema: The store's schema.
        process_id: The store's process id, which claims rows.
        lease_seconds: How long a claim lasts after its renewal (the heartbeat's).
        lease_clock: The lease clock; ``None`` for the database server's.
    """

    def __init__(
        self,
        pool: Callable[[], GuardedPool],
        schema: str,
        process_id: str,
        lease_seconds: float,
        lease_clock: Callable[[], float] | None,
    ) -> None:
        self._pooled = pool
        self._schema = schema
        self.process_id = process_id
        self._lease_seconds = lease_seconds
        self._lease_clock = lease_clock

    @property
    def _pool(self) -> GuardedPool:
        return self._pooled()

    def _table(self, name: str) -> str:
        return f"{self._schema}.{name}"

    async def put_push_config(
        self, config: TaskPushNotificationConfig, *, limit: int | None = None
    ) -> bool:
        """Store a config, replacing one with the same task and id, within ``limit``.

        With a limit, one transaction first takes a transaction-level advisory lock on the
        task's configs, then counts them on a snapshot taken after the lock and inserts: two
        processes adding configs to one task take turns, so the limit holds across them.
        """
        if limit is None:
            async with self._pool.acquire() as conn:
                await put_configs(conn, self._schema, [config])
            return True
        count = (
            f"SELECT count(*) FROM {self._table('push_configs')} WHERE task_id = $1 AND id <> $2"
        )
        async with self._pool.acquire() as conn, conn.transaction():
            key = lock_key(self._schema, "push-configs")
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended($1, $2))", config.task_id, key
            )
            if await conn.fetchval(count, config.task_id, config.id) >= limit:
                return False
            await put_configs(conn, self._schema, [config])
        return True

    async def get_push_config(
        self, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None:
        """The config, or ``None``."""
        body = await self._pool.fetchval(
            f"SELECT body FROM {self._table('push_configs')} WHERE task_id = $1 AND id = $2",
            task_id,
            config_id,
        )
        return None if body is None else codec.decode(TaskPushNotificationConfig, body)

    async def list_push_configs(
        self, task_id: str
    ) -> builtins.list[tuple[int, TaskPushNotificationConfig]]:
        """The task's configs with their positions, in creation order."""
        rows = await self._pool.fetch(
            f"SELECT position, body FROM {self._table('push_configs')} WHERE task_id = $1"
            " ORDER BY position",
            task_id,
        )
        return [(pos, codec.decode(TaskPushNotificationConfig, body)) for pos, body in rows]

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        """Remove a config and all its outbox rows, in one transaction.

        Two statements: the first waits for appends that read the config (``FOR SHARE``) to
        commit, and the second, on a newer snapshot, sees the rows they added.
        """
        async with self._pool.acquire() as conn, conn.transaction():
            gone = await conn.fetch(
                f"DELETE FROM {self._table('push_configs')} WHERE task_id = $1 AND id = $2"
                " RETURNING 1",
                task_id,
                config_id,
            )
            await conn.execute(
                f"DELETE FROM {self._table('push_outbox')} WHERE task_id = $1 AND config_id = $2",
                task_id,
                config_id,
            )
        return bool(gone)

    async def pending_lanes(self, after_seq: int) -> tuple[builtins.list[LaneKey], int]:
        """Every lane with undelivered rows and a config, whatever ``after_seq`` is (see above).

        Returns:
            The lanes, and the highest row number seen (at least ``after_seq``).
        """
        rows = await self._pool.fetch(
            f"SELECT o.task_id, o.config_id, max(o.seq) FROM {self._table('push_outbox')} o"
            " WHERE NOT o.failed AND EXISTS (SELECT 1 FROM"
            f" {self._table('push_configs')} c WHERE c.task_id = o.task_id AND c.id = o.config_id)"
            " GROUP BY o.task_id, o.config_id",
        )
        lanes = [(task_id, config_id) for task_id, config_id, _ in rows]
        return lanes, max([after_seq, *(row[2] for row in rows)])

    async def claim_deliveries(
        self, limit: int, *, holding: Collection[int] | None = None
    ) -> builtins.list[Delivery]:
        """Claim up to ``limit`` due lane heads for this process (see "Claims").

        Args:
            limit: Most rows to claim.
            holding: When given, the rows this process is delivering: a row claimed by this
                process and not among them is claimed again (its claim's answer was lost).
                When ``None``, rows claimed by this process are not claimed again.

        Returns:
            The claimed rows, lowest number first; each stays claimed until it is done, retried,
            given up or released, or until the claim expires (the heartbeat renews it).

        Raises:
            ValueError: ``limit`` is below 1.
        """
        if limit < 1:
            raise ValueError("limit must be at least 1")
        statement, clock = _CLAIM.strip().format(s=self._schema), self._lease_clock
        rows = await self._pool.fetch(
            statement,
            self.process_id,
            clock and clock(),
            limit,
            self._lease_seconds,
            None if holding is None else [*holding],
        )
        return [delivery_of(row) for row in rows]

    async def release_delivery(self, seq: int) -> None:
        """Give back this process's claim on a row without recording an attempt."""
        await self._pool.execute(
            f"UPDATE {self._table('push_outbox')} SET claimed_by = NULL, claim_until = 0"
            " WHERE seq = $1 AND claimed_by = $2",
            seq,
            self.process_id,
        )

    async def next_delivery(self, task_id: str, config_id: str) -> Delivery | None:
        """The lane's first undelivered row."""
        row = await self._pool.fetchrow(
            f"SELECT {_COLUMNS} FROM {self._table('push_outbox')} o"
            f" JOIN {self._table('push_configs')} c ON c.task_id = o.task_id AND c.id = o.config_id"
            " WHERE o.task_id = $1 AND o.config_id = $2 AND NOT o.failed ORDER BY o.seq LIMIT 1",
            task_id,
            config_id,
        )
        return None if row is None else delivery_of(row)

    async def delivery_done(self, seq: int) -> None:
        """Remove a delivered row."""
        await self._pool.execute(f"DELETE FROM {self._table('push_outbox')} WHERE seq = $1", seq)

    async def delivery_retry(
        self, seq: int, *, attempts: int, next_attempt_at: float, error: str
    ) -> None:
        """Record a failed attempt and end this process's claim (see "Claims")."""
        await self._pool.execute(
            f"UPDATE {self._table('push_outbox')} SET attempts = $3, next_attempt_at = $4,"
            f" last_error = $5, claimed_by = NULL, claim_until = 0 WHERE seq = $1 AND {_MINE}",
            seq,
            self.process_id,
            attempts,
            next_attempt_at,
            error,
        )

    async def delivery_retry_in(self, seq: int, *, attempts: int, delay: float, error: str) -> None:
        """Record a failed attempt due again ``delay`` seconds from now by the lease clock.

        Ends this process's claim, as :meth:`delivery_retry` does (see "Claims").
        """
        clock = self._lease_clock
        await self._pool.execute(
            f"UPDATE {self._table('push_outbox')} SET attempts = $3,"
            f" next_attempt_at = {NOW.replace('{n}', '4')} + $5, last_error = $6,"
            f" claimed_by = NULL, claim_until = 0 WHERE seq = $1 AND {_MINE}",
            seq,
            self.process_id,
            attempts,
            clock and clock(),
            delay,
            error,
        )

    async def delivery_failed(self, seq: int, *, attempts: int, error: str) -> None:
        """Mark a row given up, ending this process's claim (see "Claims")."""
        await self._pool.execute(
            f"UPDATE {self._table('push_outbox')} SET failed = true, attempts = $3,"
            f" last_error = $4, claimed_by = NULL, claim_until = 0 WHERE seq = $1 AND {_MINE}",
            seq,
            self.process_id,
            attempts,
            error,
        )

    async def failed_deliveries(self, task_id: str) -> builtins.list[Delivery]:
        """The task's given-up rows."""
        rows = await self._pool.fetch(
            f"SELECT {_COLUMNS} FROM {self._table('push_outbox')} o"
            f" JOIN {self._table('push_configs')} c ON c.task_id = o.task_id AND c.id = o.config_id"
            " WHERE o.task_id = $1 AND o.failed ORDER BY o.seq",
            task_id,
        )
        return [delivery_of(row) for row in rows]

    async def outbox_backlog(self) -> tuple[int, float | None]:
        """Rows not delivered nor given up (by every process), and the oldest one's time."""
        row = await self._pool.fetchrow(
            f"SELECT count(*), min(created_at) FROM {self._table('push_outbox')} WHERE NOT failed"
        )
        assert row is not None  # an aggregate has one row
        return int(row[0]), row[1]
