"""The statements of the PostgreSQL store's leases (:mod:`._leases` says the rules).

``{s}`` is the schema, ``{nowN}`` the lease clock as argument ``$N`` (:data:`~._statements.NOW`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from a2a_wire.server.store._contract.tasks import RECOVERED_STATES
from a2a_wire.server.store._fold.keys import state_key
from a2a_wire.server.store.postgresql._statements import NOW

__all__ = ["LeaseStatements"]

_RUNNING = "(" + ", ".join(sorted(f"'{state_key(s)}'" for s in RECOVERED_STATES)) + ")"

_HEARTBEAT = """
WITH now AS (SELECT {now2} AS t), beat AS (
  INSERT INTO {s}.processes (id, started_at, beat_at, expires_at)
  SELECT $1, t, t, t + $3 FROM now
  ON CONFLICT (id) DO UPDATE SET beat_at = excluded.beat_at, expires_at = excluded.expires_at
), claims AS (
  UPDATE {s}.push_outbox SET claim_until = now.t + $3 FROM now WHERE claimed_by = $1
), leases AS (
  UPDATE {s}.task_leases SET expires_at = now.t + $3 FROM now
  WHERE process_id = $1 AND task_id = ANY($4::text[]) AND expires_at > '-infinity'
  RETURNING task_id
)
SELECT task_id FROM leases
"""

_ACQUIRE = """
INSERT INTO {s}.task_leases (task_id, process_id, expires_at)
SELECT id, $2, {now3} + $4 FROM {s}.tasks WHERE id = $1 AND NOT deleted
ON CONFLICT (task_id) DO UPDATE SET expires_at = excluded.expires_at
WHERE task_leases.process_id = excluded.process_id
RETURNING 1
"""

_RELEASE = """
WITH t AS (
  SELECT state IN {running} AS running FROM {s}.tasks WHERE id = $1 FOR SHARE
), gone AS (
  DELETE FROM {s}.task_leases WHERE task_id = $1 AND process_id = $2
  AND NOT EXISTS (SELECT 1 FROM t WHERE running) RETURNING 1
), expired AS (
  UPDATE {s}.task_leases SET expires_at = '-infinity' WHERE task_id = $1 AND process_id = $2
  AND EXISTS (SELECT 1 FROM t WHERE running) RETURNING 1
)
SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM expired)
"""

_TIDY = """
WITH now AS (SELECT {now1} AS t), processes AS (
  DELETE FROM {s}.processes p USING now WHERE p.expires_at < now.t
  AND NOT EXISTS (SELECT 1 FROM {s}.task_leases l WHERE l.process_id = p.id)
), replies AS (
  DELETE FROM {s}.cancel_replies r USING now WHERE r.replied_at < now.t - 3600
  OR NOT EXISTS (SELECT 1 FROM {s}.processes p WHERE p.id = r.asker AND p.expires_at >= now.t)
)
DELETE FROM {s}.cancel_requests c WHERE NOT EXISTS (
  SELECT 1 FROM {s}.task_leases l WHERE l.task_id = c.task_id AND l.process_id = c.process_id)
"""

_CLOSE = """
WITH leases AS (
  UPDATE {s}.task_leases SET expires_at = '-infinity' WHERE process_id = $1
), claims AS (
  UPDATE {s}.push_outbox SET claimed_by = NULL, claim_until = 0 WHERE claimed_by = $1
)
DELETE FROM {s}.processes WHERE id = $1
"""


@dataclass(frozen=True, slots=True)
class LeaseStatements:
    """The lease statements with the schema's name filled in (see :mod:`._schema`)."""

    heartbeat: str
    acquire: str
    release: str
    expired: str
    lock_task: str
    task_alive: str
    lock_lease: str
    drop: str
    holder: str
    processes: str
    tidy: str
    close: str

    @classmethod
    def for_schema(cls, schema: str) -> LeaseStatements:
        """The statements on the tables of ``schema`` (a name already checked)."""
        texts = {
            "heartbeat": _HEARTBEAT,
            "acquire": _ACQUIRE,
            "release": _RELEASE,
            "expired": "SELECT task_id FROM {s}.task_leases WHERE expires_at < {now1}"
            " ORDER BY expires_at, task_id LIMIT $2",
            "lock_task": "SELECT owner, context_id, state, last_seq FROM {s}.tasks"
            " WHERE id = $1 AND NOT deleted FOR UPDATE SKIP LOCKED",
            "task_alive": "SELECT EXISTS (SELECT 1 FROM {s}.tasks WHERE id = $1 AND NOT deleted)",
            "lock_lease": "SELECT process_id FROM {s}.task_leases"
            " WHERE task_id = $1 AND expires_at < {now2} FOR UPDATE SKIP LOCKED",
            "drop": "WITH c AS (DELETE FROM {s}.cancel_requests WHERE task_id = $1)"
            " DELETE FROM {s}.task_leases WHERE task_id = $1",
            "holder": "SELECT process_id FROM {s}.task_leases"
            " WHERE task_id = $1 AND expires_at >= {now2}",
            "processes": "SELECT id FROM {s}.processes WHERE expires_at >= {now1} ORDER BY id",
            "tidy": _TIDY,
            "close": _CLOSE,
        }
        assert set(texts) == {f.name for f in fields(cls)}
        marks = {f"now{n}": NOW.replace("{n}", str(n)) for n in (1, 2, 3)}
        return cls(
            **{
                name: text.strip().format(s=schema, running=_RUNNING, **marks)
                for name, text in texts.items()
            }
        )
