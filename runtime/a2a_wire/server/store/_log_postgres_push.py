"""The :class:`~a2a_wire.server.store._push.PushStore` part of the PostgreSQL event log store.

Tables: ``push_configs`` and ``push_outbox`` (:mod:`._log_postgres_sql`). The outbox rows of an
event are inserted by the statement that logs the event (``create``, ``append``), so they commit
together. Two rules make the SQLite design's lane reading hold with many writers:

* **Numbers in commit order.** :meth:`PushStore.pending_lanes` asks for rows numbered above the
  last number seen, which is only safe if no row with a lower number can commit later. Identity
  numbers are handed out when a row is inserted, not when it commits, so every transaction that
  inserts outbox rows first takes one transaction-level advisory lock (per schema) and holds it
  to its commit. Writes without outbox rows never take it.
* **A config and its rows go together.** The insert reads the task's configs ``FOR SHARE``, so a
  concurrent :meth:`delete_push_config` waits for it (and then deletes its rows too), or has
  deleted the config first (and the insert skips it).

Several processes may read the same lanes; claiming a row for one deliverer (``FOR UPDATE SKIP
LOCKED``) is the scale-out step's, not this store's.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from a2a_wire import codec
from a2a_wire.server.store._push import Delivery, LaneKey, PushStore
from a2a_wire.types import TaskPushNotificationConfig

if TYPE_CHECKING:
    import asyncpg

    from a2a_wire.server.store._log_postgres_sql import Conn

__all__ = ["PostgresPushStore", "put_configs"]

_COLUMNS = (
    "o.seq, o.delivery_id, o.body, o.created_at, o.attempts, o.next_attempt_at, o.last_error,"
    " o.failed, c.body"
)


def _delivery(row: Any) -> Delivery:
    seq, delivery_id, body, created, attempts, next_at, error, failed, config = row
    return Delivery(
        seq=seq,
        delivery_id=delivery_id,
        config=codec.decode(TaskPushNotificationConfig, config),
        body=body,
        created_at=created,
        attempts=attempts,
        next_attempt_at=next_at,
        last_error=error,
        failed=failed,
    )


async def put_configs(
    conn: Conn, schema: str, configs: Sequence[TaskPushNotificationConfig]
) -> None:
    """Insert or replace configs on ``conn`` (inside the caller's transaction, if any)."""
    statement = (
        f"INSERT INTO {schema}.push_configs (task_id, id, body) VALUES ($1, $2, $3)"
        " ON CONFLICT (task_id, id) DO UPDATE SET body = excluded.body"
    )
    await conn.executemany(statement, [(c.task_id, c.id, codec.encode(c)) for c in configs])


class PostgresPushStore(PushStore):
    """Push configs and outbox in the PostgreSQL store's schema, through its pool.

    :class:`~._log_postgres.PostgresEventLog` provides ``_pool`` and ``_schema``.
    """

    _schema: str

    @property
    def _pool(self) -> asyncpg.Pool:
        raise NotImplementedError  # pragma: no cover - provided by the task store

    def _table(self, name: str) -> str:
        return f"{self._schema}.{name}"

    async def put_push_config(self, config: TaskPushNotificationConfig) -> None:
        """Store a config, replacing one with the same task and id."""
        async with self._pool.acquire() as conn:
            await put_configs(conn, self._schema, [config])

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
        """Lanes with rows above ``after_seq`` (numbers follow commit order; see above)."""
        rows = await self._pool.fetch(
            f"SELECT task_id, config_id, max(seq) FROM {self._table('push_outbox')}"
            " WHERE seq > $1 AND NOT failed GROUP BY task_id, config_id",
            after_seq,
        )
        lanes = [(task_id, config_id) for task_id, config_id, _ in rows]
        return lanes, max([after_seq, *(row[2] for row in rows)])

    async def next_delivery(self, task_id: str, config_id: str) -> Delivery | None:
        """The lane's first undelivered row."""
        row = await self._pool.fetchrow(
            f"SELECT {_COLUMNS} FROM {self._table('push_outbox')} o"
            f" JOIN {self._table('push_configs')} c ON c.task_id = o.task_id AND c.id = o.config_id"
            " WHERE o.task_id = $1 AND o.config_id = $2 AND NOT o.failed ORDER BY o.seq LIMIT 1",
            task_id,
            config_id,
        )
        return None if row is None else _delivery(row)

    async def delivery_done(self, seq: int) -> None:
        """Remove a delivered row."""
        await self._pool.execute(f"DELETE FROM {self._table('push_outbox')} WHERE seq = $1", seq)

    async def delivery_retry(
        self, seq: int, *, attempts: int, next_attempt_at: float, error: str
    ) -> None:
        """Record a failed attempt."""
        await self._pool.execute(
            f"UPDATE {self._table('push_outbox')} SET attempts = $2, next_attempt_at = $3,"
            " last_error = $4 WHERE seq = $1",
            seq,
            attempts,
            next_attempt_at,
            error,
        )

    async def delivery_failed(self, seq: int, *, attempts: int, error: str) -> None:
        """Mark a row given up."""
        await self._pool.execute(
            f"UPDATE {self._table('push_outbox')} SET failed = true, attempts = $2,"
            " last_error = $3 WHERE seq = $1",
            seq,
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
        return [_delivery(row) for row in rows]
