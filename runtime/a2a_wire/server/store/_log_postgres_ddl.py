"""The layout of the PostgreSQL event log store's schema, and the steps that migrate it.

Layout (in one PostgreSQL schema, ``a2a_wire`` unless configured; version :data:`SCHEMA_VERSION`)
-------------------------------------------------------------------------------------------------
* ``tasks``: the listing row and the task's *head*. ``id``, ``owner``, ``context_id``, ``state``,
  ``status_s``/``status_ns`` and ``changed_at`` as in the SQLite layout (:mod:`._log_sql`);
  ``first_seq`` (the lowest number still logged), ``last_seq`` (the last number committed),
  ``snap_bytes`` and ``tail_bytes`` (the sizes the fold rule reads) and ``deleted``. Every append
  updates this row, and that update is what serialises appends to one task across processes
  (see "Writes" in :mod:`._log_postgres`). An artifact chunk changes no indexed column, so with
  the table's fill factor its update stays a heap-only (HOT) one. The indexes exclude deleted
  rows: a deleted task keeps its row (and so its id stays taken) until :meth:`purge` has
  removed its events and outbox rows, then the row goes too.
* ``task_snapshots``: ``task_id``, ``seq`` and ``body`` (the task's JSON), written by ``create``
  and by a fold only, so that the head's frequent updates never copy a snapshot.
* ``task_events``: primary key ``(task_id, seq)``, ``kind`` and ``body`` (the StreamResponse
  JSON, kept byte for byte as ``bytea``). Inserted, then deleted by compaction and purge only.
* ``push_configs`` and ``push_outbox``: as in the SQLite layout (:mod:`._push_sqlite`); the
  numbers (``position``, ``seq``) are identity columns, which are never reused. Since version 2
  an outbox row also has ``claimed_by`` (the process delivering it, or null) and
  ``claim_until`` (when that claim ends unless renewed); see :mod:`._log_postgres_push`.
* ``processes`` (version 2): one row per store instance that has beaten its heartbeat: its
  ``id``, ``started_at``, ``beat_at`` and ``expires_at``.
* ``task_leases`` (version 2): ``task_id``, ``process_id`` (the process running the task's
  executor) and ``expires_at``; see :mod:`._log_postgres_lease`.
* ``cancel_requests`` (version 2): ``task_id``, ``process_id`` (the lease holder asked) and
  ``requested_at``; since version 3 also ``id`` (the request's id, the primary key, so that
  two processes asking at once each get an answer), ``asker`` (the asking process, ``''`` for
  none) and ``metadata`` (the CancelTask's, ``jsonb`` or null); see :mod:`._log_postgres_cancel`.
* ``cancel_replies`` (version 3): ``request_id``, ``task_id``, ``asker``, ``outcome`` (``done``,
  ``error`` or ``absent``), ``error`` (the JSON-RPC error object, ``jsonb`` or null) and
  ``replied_at``: the holder's answer, taken by the asker.
* ``schema_version``: one row, the layout's version.

Times in the version 2 tables are seconds since the epoch by the lease clock (the database
server's clock unless a store is given another).

Upgrading version 1 gives every SUBMITTED or WORKING task an expired lease, so the first
takeover scan fails it as recovery on open did: its executor ran in a process of the older
version, which held no leases. Upgrading version 2 keeps the cancel requests waiting, with
their task id as their id and no asker (no reply is sent). Upgrade every process of a schema
together.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS", "SCHEMA_VERSION"]

_RUNNING = "('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING')"

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        "CREATE TABLE {s}.tasks ("
        " id text PRIMARY KEY,"
        " owner text NOT NULL,"
        " context_id text NOT NULL,"
        " state text NOT NULL,"
        " status_s bigint NOT NULL,"
        " status_ns integer NOT NULL,"
        " changed_at double precision NOT NULL,"
        " first_seq bigint NOT NULL,"
        " last_seq bigint NOT NULL,"
        " snap_bytes bigint NOT NULL,"
        " tail_bytes bigint NOT NULL,"
        " deleted boolean NOT NULL DEFAULT false"
        ") WITH (fillfactor = 80)",
        "CREATE INDEX tasks_by_owner ON {s}.tasks"
        " (owner, status_s DESC, status_ns DESC, id) WHERE NOT deleted",
        "CREATE INDEX tasks_by_context ON {s}.tasks"
        " (owner, context_id, status_s DESC, status_ns DESC, id) WHERE NOT deleted",
        "CREATE INDEX tasks_by_change ON {s}.tasks (state, changed_at) WHERE NOT deleted",
        "CREATE INDEX tasks_deleted ON {s}.tasks (id) WHERE deleted",
        "CREATE TABLE {s}.task_snapshots ("
        " task_id text PRIMARY KEY, seq bigint NOT NULL, body bytea NOT NULL)",
        "CREATE TABLE {s}.task_events ("
        " task_id text NOT NULL, seq bigint NOT NULL, kind smallint NOT NULL,"
        " body bytea NOT NULL, PRIMARY KEY (task_id, seq))",
        "CREATE TABLE {s}.push_configs ("
        " task_id text NOT NULL, id text NOT NULL,"
        " position bigint GENERATED ALWAYS AS IDENTITY, body bytea NOT NULL,"
        " PRIMARY KEY (task_id, id))",
        "CREATE TABLE {s}.push_outbox ("
        " seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
        " delivery_id text NOT NULL,"
        " task_id text NOT NULL,"
        " config_id text NOT NULL,"
        " body bytea NOT NULL,"
        " created_at double precision NOT NULL,"
        " attempts integer NOT NULL DEFAULT 0,"
        " next_attempt_at double precision NOT NULL DEFAULT 0,"
        " last_error text NOT NULL DEFAULT '',"
        " failed boolean NOT NULL DEFAULT false)",
        "CREATE INDEX push_outbox_by_lane ON {s}.push_outbox (task_id, config_id, failed, seq)",
    ),
    2: (
        "CREATE TABLE {s}.processes (id text PRIMARY KEY, started_at double precision NOT NULL,"
        " beat_at double precision NOT NULL, expires_at double precision NOT NULL)",
        "CREATE TABLE {s}.task_leases (task_id text PRIMARY KEY, process_id text NOT NULL,"
        " expires_at double precision NOT NULL)",
        "CREATE INDEX task_leases_by_process ON {s}.task_leases (process_id)",
        "CREATE INDEX task_leases_by_expiry ON {s}.task_leases (expires_at)",
        "CREATE TABLE {s}.cancel_requests (task_id text PRIMARY KEY, process_id text NOT NULL,"
        " requested_at double precision NOT NULL)",
        "CREATE INDEX cancel_requests_by_process ON {s}.cancel_requests (process_id)",
        "ALTER TABLE {s}.push_outbox ADD COLUMN claimed_by text,"
        " ADD COLUMN claim_until double precision NOT NULL DEFAULT 0",
        "CREATE INDEX push_outbox_pending ON {s}.push_outbox (task_id, config_id, seq)"
        " WHERE NOT failed",
        "CREATE INDEX push_outbox_claims ON {s}.push_outbox (claimed_by)"
        " WHERE claimed_by IS NOT NULL",
        "INSERT INTO {s}.task_leases (task_id, process_id, expires_at)"
        f" SELECT id, '', '-infinity' FROM {{s}}.tasks WHERE state IN {_RUNNING} AND NOT deleted",
    ),
    3: (
        "ALTER TABLE {s}.cancel_requests ADD COLUMN id text, ADD COLUMN asker text NOT NULL"
        " DEFAULT '', ADD COLUMN metadata jsonb",
        "UPDATE {s}.cancel_requests SET id = task_id",
        "ALTER TABLE {s}.cancel_requests DROP CONSTRAINT cancel_requests_pkey,"
        " ALTER COLUMN id SET NOT NULL, ADD PRIMARY KEY (id)",
        "CREATE INDEX cancel_requests_by_task ON {s}.cancel_requests (task_id)",
        "CREATE TABLE {s}.cancel_replies (request_id text PRIMARY KEY, task_id text NOT NULL,"
        " asker text NOT NULL, outcome text NOT NULL, error jsonb,"
        " replied_at double precision NOT NULL)",
        "CREATE INDEX cancel_replies_by_asker ON {s}.cancel_replies (asker)",
    ),
}
"""Statements that bring the layout from the version before each key to that version."""

SCHEMA_VERSION = max(MIGRATIONS)
"""The layout this code reads and writes."""
