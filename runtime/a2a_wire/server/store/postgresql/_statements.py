"""The PostgreSQL store's statements, with the schema's name filled in once per store.

Constant texts let asyncpg's per-connection cache keep them prepared; a write that touches
several tables is one statement of data-modifying ``WITH`` parts where it can be, to spare
round trips. See docs/internals/store.md, "PostgreSQL: migration lock and statements".
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["NOW", "Statements"]

NOW = "COALESCE(${n}::float8, extract(epoch FROM clock_timestamp())::float8)"
"""The lease clock in SQL (:mod:`._leases`): ``$n``, or the server's clock if null."""

_APPEND = """
WITH head AS (
  UPDATE {s}.tasks SET last_seq = $2 + cardinality($3::int2[]), tail_bytes = tail_bytes + $9,
    state = COALESCE($5, state),
    status_s = CASE WHEN $5 IS NULL THEN status_s ELSE $6 END,
    status_ns = CASE WHEN $5 IS NULL THEN status_ns ELSE $7 END,
    changed_at = CASE WHEN $5 IS NULL THEN changed_at ELSE $8 END
  WHERE id = $1 AND last_seq = $2 AND NOT deleted
  RETURNING tail_bytes, snap_bytes
), logged AS (
  INSERT INTO {s}.task_events (task_id, seq, kind, body)
  SELECT $1, $2 + e.n, e.kind, e.body
  FROM head, unnest($3::int2[], $4::bytea[]) WITH ORDINALITY AS e(kind, body, n)
), box AS (
  INSERT INTO {s}.push_outbox (delivery_id, task_id, config_id, body, created_at)
  SELECT replace(gen_random_uuid()::text, '-', ''), c.task_id, c.id, p.body, $11
  FROM head, unnest($10::bytea[]) WITH ORDINALITY AS p(body, n)
  JOIN {s}.push_configs c ON c.task_id = $1
  ORDER BY p.n, c.position FOR SHARE OF c
  RETURNING 1
), dropped AS (
  DELETE FROM {s}.task_leases WHERE task_id = $1 AND $14::int2 = 2 AND EXISTS (SELECT 1 FROM head)
), taken AS (
  INSERT INTO {s}.task_leases (task_id, process_id, expires_at)
  SELECT $1, $15::text, COALESCE($16::float8, extract(epoch FROM clock_timestamp())::float8) + $17
  FROM head WHERE $14::int2 = 1
  ON CONFLICT (task_id) DO NOTHING
), woken AS (
  SELECT pg_notify($12, $13) FROM head WHERE $13 IS NOT NULL
)
SELECT tail_bytes, snap_bytes, (SELECT count(*) FROM box), (SELECT count(*) FROM woken) FROM head
"""

_CREATE = """
WITH t AS (
  INSERT INTO {s}.tasks (id, owner, context_id, state, status_s, status_ns, changed_at,
    first_seq, last_seq, snap_bytes, tail_bytes)
  VALUES ($1, $2, $3, $4, $5, $6, $7, 1, 1, octet_length($8::bytea), 0) RETURNING id
), snap AS (
  INSERT INTO {s}.task_snapshots (task_id, seq, body) SELECT id, 1, $8 FROM t
), first AS (
  INSERT INTO {s}.task_events (task_id, seq, kind, body) SELECT id, 1, 1, $9 FROM t
), box AS (
  INSERT INTO {s}.push_outbox (delivery_id, task_id, config_id, body, created_at)
  SELECT replace(gen_random_uuid()::text, '-', ''), c.task_id, c.id, $9::bytea, $13
  FROM t, {s}.push_configs c WHERE $12 AND c.task_id = $1 ORDER BY c.position FOR SHARE OF c
  RETURNING 1
), leased AS (
  INSERT INTO {s}.task_leases (task_id, process_id, expires_at)
  SELECT id, $14::text, COALESCE($15::float8, extract(epoch FROM clock_timestamp())::float8) + $16
  FROM t WHERE $14::text IS NOT NULL
  ON CONFLICT (task_id) DO UPDATE SET process_id = excluded.process_id,
    expires_at = excluded.expires_at
), woken AS (
  SELECT pg_notify($10, $11) FROM t WHERE $11 IS NOT NULL
)
SELECT (SELECT count(*) FROM box), (SELECT count(*) FROM woken)
"""

_ENQUEUE = """
INSERT INTO {s}.push_outbox (delivery_id, task_id, config_id, body, created_at)
SELECT replace(gen_random_uuid()::text, '-', ''), c.task_id, c.id, $2::bytea, $3
FROM {s}.push_configs c WHERE c.task_id = $1 ORDER BY c.position FOR SHARE OF c
RETURNING seq
"""

_READ = """
SELECT s.seq, 0::int2, s.body FROM {s}.tasks t JOIN {s}.task_snapshots s ON s.task_id = t.id
WHERE t.id = $1 AND t.owner = $2 AND NOT t.deleted
UNION ALL SELECT seq, kind, body FROM {s}.task_events WHERE task_id = $1
AND seq > (SELECT seq FROM {s}.task_snapshots WHERE task_id = $1) ORDER BY 1
"""

_FOLD = """
WITH snap AS (
  UPDATE {s}.task_snapshots SET seq = $2, body = $3::bytea WHERE task_id = $1 AND seq = $4
  RETURNING task_id
)
UPDATE {s}.tasks t SET snap_bytes = octet_length($3), tail_bytes = greatest(0, tail_bytes - $5)
FROM snap WHERE t.id = snap.task_id RETURNING t.tail_bytes
"""

_EVENTS = """
SELECT t.first_seq, t.last_seq, e.seq, e.kind, e.body FROM {s}.tasks t
LEFT JOIN LATERAL (SELECT seq, kind, body FROM {s}.task_events
  WHERE task_id = t.id AND seq > $3 ORDER BY seq LIMIT $4) e ON true
WHERE t.id = $1 AND t.owner = $2 AND NOT t.deleted ORDER BY e.seq
"""

_COMPACT = """
WITH t AS (
  SELECT id, least($2, first_seq + $3 - 1) AS upto FROM {s}.tasks
  WHERE id = $1 AND NOT deleted FOR UPDATE
), dropped AS (
  DELETE FROM {s}.task_events e USING t WHERE e.task_id = t.id AND e.seq <= t.upto RETURNING 1
), moved AS (
  UPDATE {s}.tasks SET first_seq = t.upto + 1 FROM t
  WHERE tasks.id = t.id AND EXISTS (SELECT 1 FROM dropped)
), woken AS (
  SELECT pg_notify($4, $5) WHERE EXISTS (SELECT 1 FROM dropped)
)
SELECT (SELECT count(*) FROM dropped), (SELECT count(*) FROM woken)
"""

_DELETE = """
WITH t AS (
  UPDATE {s}.tasks SET deleted = true WHERE id = $1 AND NOT deleted RETURNING id
), snap AS (
  DELETE FROM {s}.task_snapshots WHERE task_id IN (SELECT id FROM t)
), configs AS (
  DELETE FROM {s}.push_configs WHERE task_id IN (SELECT id FROM t)
), leases AS (
  DELETE FROM {s}.task_leases WHERE task_id IN (SELECT id FROM t)
), cancels AS (
  DELETE FROM {s}.cancel_requests WHERE task_id IN (SELECT id FROM t)
), replies AS (
  DELETE FROM {s}.cancel_replies WHERE task_id IN (SELECT id FROM t)
)
SELECT count(pg_notify($2, $3)) FROM t
"""

_LIST = (
    "SELECT t.status_s, t.status_ns, t.id, s.seq, s.body, t.last_seq"
    " FROM {s}.tasks t JOIN {s}.task_snapshots s ON s.task_id = t.id"
)


@dataclass(frozen=True, slots=True)
class Statements:
    """The store's statements with its schema's name filled in (see "Statements")."""

    append: str
    create: str
    enqueue: str
    read: str
    fold: str
    events: str
    compact: str
    delete: str
    list: str
    lock_head: str
    bounds: str
    bounds_seq: str
    last_seq: str
    count: str
    expired: str
    ping: str

    @classmethod
    def for_schema(cls, schema: str) -> Statements:
        """The statements on the tables of ``schema`` (a name :func:`check_schema_name` passed)."""
        texts = {
            "append": _APPEND,
            "create": _CREATE,
            "enqueue": _ENQUEUE,
            "read": _READ,
            "fold": _FOLD,
            "events": _EVENTS,
            "compact": _COMPACT,
            "delete": _DELETE,
            "list": _LIST,
            "lock_head": "SELECT owner, context_id, state, last_seq FROM {s}.tasks"
            " WHERE id = $1 AND NOT deleted FOR UPDATE",
            "bounds": "SELECT t.owner, s.seq, t.last_seq FROM {s}.tasks t"
            " JOIN {s}.task_snapshots s ON s.task_id = t.id WHERE t.id = $1 AND NOT t.deleted",
            "bounds_seq": "SELECT seq FROM {s}.task_snapshots WHERE task_id = $1",
            "last_seq": "SELECT last_seq FROM {s}.tasks WHERE id = $1 AND NOT deleted",
            "count": "SELECT count(*) FROM {s}.tasks t",
            # A lease on a task that is not running (a follow-up resuming an interrupted
            # task, on any process) makes it busy for every process's sweeper. One index walk
            # per state, each stopping at the limit, merged: a filter on all the states at
            # once would sort every match (all the finished tasks) before the limit.
            "expired": "SELECT x.id FROM unnest($1::text[]) AS k(state), LATERAL"
            " (SELECT t.id, t.changed_at FROM {s}.tasks t WHERE t.state = k.state"
            " AND t.changed_at < $2 AND NOT t.deleted AND (NOT $4 OR t.first_seq <= t.last_seq)"
            " AND (t.state IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING') OR NOT EXISTS"
            " (SELECT 1 FROM {s}.task_leases l"
            " WHERE l.task_id = t.id AND l.expires_at > '-infinity'))"
            " ORDER BY t.changed_at, t.id LIMIT $3) x ORDER BY x.changed_at, x.id LIMIT $3",
            # Readiness: one primary-key read of each table a request needs, for a key no
            # row has, so a table another session locked makes the ping wait (and fail).
            "ping": "SELECT (SELECT 1 FROM {s}.tasks WHERE id = '')"
            " , (SELECT 1 FROM {s}.task_snapshots WHERE task_id = '')"
            " , (SELECT 1 FROM {s}.task_events WHERE task_id = '' AND seq = 0)"
            " , (SELECT 1 FROM {s}.task_leases WHERE task_id = '')",
        }
        assert set(texts) == {f.name for f in fields(cls)}
        return cls(**{name: text.strip().format(s=schema) for name, text in texts.items()})
