"""The PostgreSQL store's sweep reads cost the same at any size (pages read, not time).

benchmarks/scale_tasks.py measures the time at a million tasks.
"""

from __future__ import annotations

import json

import asyncpg
from pg_stores import Stores

from a2a_wire.server.store.postgresql._statements import Statements

TERMINAL = [
    "TASK_STATE_CANCELED",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_REJECTED",
]


async def _finished(admin: asyncpg.Connection, schema: str, first: int, last: int) -> None:
    """Finished tasks ``t<first>``..``t<last>``, changed in that order, three per instant."""
    await admin.execute(
        f"INSERT INTO {schema}.tasks (id, owner, context_id, state, status_s, status_ns,"
        " changed_at, first_seq, last_seq, snap_bytes, tail_bytes)"
        " SELECT 't' || lpad(i::text, 6, '0'), '', 'c', ($3::text[])[1 + i % 4], 0, 0,"
        " 1000 + i / 3, 1, 1, 2, 0 FROM generate_series($1::int, $2::int) i",
        first,
        last,
        TERMINAL,
    )
    await admin.execute(f"ANALYZE {schema}.tasks")


async def _pages(admin: asyncpg.Connection, schema: str) -> tuple[int, list[str]]:
    """Pages one sweep batch (20 tasks) reads, and the ids it names."""
    statement = Statements.for_schema(schema).expired
    args = (TERMINAL, 1e9, 20, False)
    plan = json.loads(
        await admin.fetchval("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement, *args)
    )
    top = plan[0]["Plan"]
    found = [row["id"] for row in await admin.fetch(statement, *args)]
    return int(top["Shared Hit Blocks"] + top["Shared Read Blocks"]), found


async def test_a_batch_of_expired_tasks_costs_the_same_among_a_hundred_times_more(
    stores: Stores, admin: asyncpg.Connection, postgres_schema: str
) -> None:
    store = await stores(heartbeat_seconds=None)
    await _finished(admin, postgres_schema, 0, 99)
    small, first = await _pages(admin, postgres_schema)
    await _finished(admin, postgres_schema, 100, 9_999)
    large, again = await _pages(admin, postgres_schema)
    expected = [f"t{i:06d}" for i in range(20)]  # oldest first across states, then by id
    assert first == again == expected
    assert await store.expired([], 1e9, limit=5) == []
    assert large <= 1.5 * small, (small, large)
