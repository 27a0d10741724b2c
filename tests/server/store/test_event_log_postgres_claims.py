"""Delivery claims between PostgreSQL stores: any process delivers, one at a time, in lane order."""

from __future__ import annotations

import asyncio
import json

import asyncpg
import pytest
from pg_stores import LeaseClock, Stores
from test_event_log import chunk, config, make_task

from a2a_wire import codec
from a2a_wire.server.store import LEASE_SECONDS, Delivery, PostgresTaskStore
from a2a_wire.server.store.postgresql._push import _CLAIM
from a2a_wire.server.store.postgresql._schema import SCHEMA_VERSION


@pytest.fixture
def clock() -> LeaseClock:
    return LeaseClock()


async def deliverers(stores: Stores, clock: LeaseClock, count: int) -> list[PostgresTaskStore]:
    return [await stores(lease_clock=clock, heartbeat_seconds=None) for _ in range(count)]


async def pushed_task(store: PostgresTaskStore, task_id: str, chunks: int) -> list[bytes]:
    """A task with configs ``p`` and ``q`` and ``1 + chunks`` pushed events; their bodies."""
    configs = [config("p", task_id), config("q", task_id)]
    created = await store.create(make_task(task_id), push_configs=configs, push=True)
    bodies = [created.events[0].body]
    for i in range(chunks):
        done = await store.append(task_id, [chunk("a", f"{task_id}-{i}")], push=True)
        bodies.append(done.events[0].body)
    return bodies


def lanes_of(claimed: list[Delivery]) -> list[tuple[str, str]]:
    return sorted(d.lane for d in claimed)


async def claimer(admin: asyncpg.Connection, schema: str, seq: int) -> str | None:
    return await admin.fetchval(f"SELECT claimed_by FROM {schema}.push_outbox WHERE seq = $1", seq)


async def test_only_lane_heads_are_claimed_and_each_by_one_store(
    stores: Stores, clock: LeaseClock
) -> None:
    writer, b, c = await deliverers(stores, clock, 3)
    bodies = await pushed_task(writer, "t1", 3)
    got_b, got_c = await asyncio.gather(b.claim_deliveries(10), c.claim_deliveries(10))
    claimed = got_b + got_c
    assert lanes_of(claimed) == [("t1", "p"), ("t1", "q")]  # the heads only, once each
    assert all(d.body == bodies[0] for d in claimed)
    assert await b.claim_deliveries(10) == [] and await c.claim_deliveries(10) == []
    head_p = next(d for d in claimed if d.config.id == "p")
    await writer.delivery_done(head_p.seq)
    [second] = await c.claim_deliveries(10)
    assert second.lane == ("t1", "p") and second.body == bodies[1]


async def test_lanes_are_delivered_in_order_by_several_stores_at_once(
    stores: Stores, clock: LeaseClock
) -> None:
    writer, *workers = await deliverers(stores, clock, 4)
    expected = {}
    for task_id in ("t1", "t2", "t3"):
        bodies = await pushed_task(writer, task_id, 6)
        expected |= {(task_id, "p"): bodies, (task_id, "q"): bodies}
    seen: dict[tuple[str, str], list[bytes]] = {lane: [] for lane in expected}

    async def deliver(store: PostgresTaskStore) -> None:
        idle = 0
        while idle < 3:
            claimed = await store.claim_deliveries(2)
            idle = 0 if claimed else idle + 1
            for delivery in claimed:
                seen[delivery.lane].append(delivery.body)
                await store.delivery_done(delivery.seq)
            await asyncio.sleep(0)

    await asyncio.gather(*(deliver(store) for store in workers))
    while claimed := await writer.claim_deliveries(50):  # whatever the idle rule left over
        for delivery in claimed:
            seen[delivery.lane].append(delivery.body)
            await writer.delivery_done(delivery.seq)
    assert seen == expected


async def test_a_retried_row_waits_for_its_time_and_holds_back_its_lane(
    stores: Stores, clock: LeaseClock
) -> None:
    writer, b, c = await deliverers(stores, clock, 3)
    await pushed_task(writer, "t1", 1)
    claimed = await b.claim_deliveries(10)
    head = next(d for d in claimed if d.config.id == "p")
    await b.delivery_done(next(d for d in claimed if d.config.id == "q").seq)
    await b.delivery_retry(head.seq, attempts=1, next_attempt_at=clock.now + 30, error="HTTP 503")
    [other] = await c.claim_deliveries(10)
    assert other.lane == ("t1", "q")  # another lane goes on
    await c.delivery_done(other.seq)
    clock.now += 29
    assert await c.claim_deliveries(10) == []  # not due; the row after it waits too
    clock.now += 2
    [again] = await c.claim_deliveries(10)
    assert (again.seq, again.attempts, again.last_error) == (head.seq, 1, "HTTP 503")
    assert again.delivery_id == head.delivery_id


async def test_a_dead_deliverer_s_claims_expire_and_another_store_goes_on(
    stores: Stores, clock: LeaseClock, admin: asyncpg.Connection, postgres_schema: str
) -> None:
    writer, b, c = await deliverers(stores, clock, 3)
    await pushed_task(writer, "t1", 1)
    claimed = await b.claim_deliveries(10)
    assert len(claimed) == 2
    clock.now += LEASE_SECONDS - 2
    await b.heartbeat()  # renews its claims with its leases
    clock.now += LEASE_SECONDS - 2
    assert await c.claim_deliveries(10) == []
    clock.now += 3  # b stopped beating
    taken = await c.claim_deliveries(10)
    assert sorted(d.seq for d in taken) == sorted(d.seq for d in claimed)
    seq = taken[0].seq
    await b.delivery_retry(seq, attempts=1, next_attempt_at=0, error="late")  # b woke up
    assert await claimer(admin, postgres_schema, seq) == c.process_id  # c's claim stands
    await b.delivery_failed(seq, attempts=1, error="late")
    assert await c.failed_deliveries("t1") == []
    await c.delivery_failed(seq, attempts=1, error="HTTP 410")
    [given_up] = await c.failed_deliveries("t1")
    assert given_up.seq == seq and await claimer(admin, postgres_schema, seq) is None
    [after] = await c.claim_deliveries(10)  # the lane goes on after a row given up
    assert after.lane == taken[0].lane and after.seq > seq


async def test_closing_or_releasing_gives_claims_back_at_once(
    stores: Stores, clock: LeaseClock
) -> None:
    writer, b, c = await deliverers(stores, clock, 3)
    await pushed_task(writer, "t1", 0)
    first, second = await b.claim_deliveries(10)
    await b.release_delivery(first.seq)
    assert [d.seq for d in await c.claim_deliveries(10)] == [first.seq]
    await b.close()
    assert [d.seq for d in await writer.claim_deliveries(10)] == [second.seq]


async def test_rows_without_a_config_are_not_claimed(stores: Stores, clock: LeaseClock) -> None:
    writer, b = await deliverers(stores, clock, 2)
    await pushed_task(writer, "t1", 1)
    await pushed_task(writer, "t2", 0)
    assert await writer.delete_push_config("t1", "q")
    assert await writer.delete_task("t2")  # its outbox rows stay until purged
    [head] = await b.claim_deliveries(10)
    assert head.lane == ("t1", "p")
    with pytest.raises(ValueError):
        await b.claim_deliveries(0)


async def test_a_claim_whose_answer_was_lost_is_handed_out_again(
    stores: Stores, clock: LeaseClock
) -> None:
    writer, b, c = await deliverers(stores, clock, 3)
    await pushed_task(writer, "t1", 0)
    first, second = await b.claim_deliveries(10)  # suppose b never got this answer
    await b.heartbeat()
    assert await c.claim_deliveries(10) == []  # live claims of b
    assert await b.claim_deliveries(10, holding=[first.seq]) == [second]  # b delivers first only
    assert await b.claim_deliveries(10, holding=[first.seq, second.seq]) == []


async def test_a_retry_in_is_due_by_the_lease_clock(
    stores: Stores, clock: LeaseClock, admin: asyncpg.Connection, postgres_schema: str
) -> None:
    writer, b, c = await deliverers(stores, clock, 3)
    await pushed_task(writer, "t1", 0)
    first, _ = await b.claim_deliveries(10)
    await c.delivery_retry_in(first.seq, attempts=1, delay=5, error="late")  # not c's claim
    assert await claimer(admin, postgres_schema, first.seq) == b.process_id
    await b.delivery_retry_in(first.seq, attempts=1, delay=5, error="HTTP 503")
    assert await claimer(admin, postgres_schema, first.seq) is None
    clock.now += 4.9
    assert await c.claim_deliveries(10) == []
    clock.now += 0.2
    [again] = await c.claim_deliveries(10)
    assert (again.seq, again.attempts, again.last_error) == (first.seq, 1, "HTTP 503")
    assert again.next_attempt_at == pytest.approx(clock.now - 0.1)


async def _backlog(admin: asyncpg.Connection, schema: str, per_lane: int, due: float) -> None:
    """Rows of 20 lanes of a dead webhook, ``per_lane`` more each; every head retried, not due."""
    await admin.execute(
        f"INSERT INTO {schema}.push_configs (task_id, id, body)"
        " SELECT 'dead' || n, 'p', $1::bytea FROM generate_series(0, 19) n ON CONFLICT DO NOTHING",
        codec.encode(config("p", "dead")),
    )
    await admin.execute(
        f"INSERT INTO {schema}.push_outbox (delivery_id, task_id, config_id, body, created_at)"
        " SELECT 'd' || k, 'dead' || (k % 20), 'p', '\\x7b7d', 0 FROM generate_series(1, $1) k",
        20 * per_lane,
    )
    await admin.execute(
        f"UPDATE {schema}.push_outbox o SET attempts = 1, next_attempt_at = $1, last_error = 'x'"
        f" WHERE attempts = 0 AND NOT EXISTS (SELECT 1 FROM {schema}.push_outbox e"
        " WHERE e.task_id = o.task_id AND e.config_id = o.config_id AND e.seq < o.seq)",
        due,
    )
    await admin.execute(f"ANALYZE {schema}.push_outbox")


async def _claim_pages(admin: asyncpg.Connection, schema: str, store: PostgresTaskStore) -> int:
    """Pages the store's claim statement touches (run under EXPLAIN ANALYZE, rolled back)."""
    statement = "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + _CLAIM.strip().format(s=schema)
    transaction = admin.transaction()
    await transaction.start()
    try:
        plan = json.loads(await admin.fetchval(statement, store.process_id, None, 16, 30.0, None))
    finally:
        await transaction.rollback()
    top = plan[0]["Plan"]
    return int(top["Shared Hit Blocks"] + top["Shared Read Blocks"])


async def test_a_live_lane_is_claimed_without_walking_the_rows_behind_a_dead_webhook(
    stores: Stores, admin: asyncpg.Connection, postgres_schema: str
) -> None:
    writer = await stores(heartbeat_seconds=None)
    due = await admin.fetchval("SELECT extract(epoch FROM now())::float8") + 3600
    pages = []
    for per_lane in (10, 1_000):  # 200 rows waiting, then 20,000 more in the same lanes
        await _backlog(admin, postgres_schema, per_lane, due)
        await writer.create(
            make_task(f"live{per_lane}"), push_configs=[config("p", f"live{per_lane}")], push=True
        )
        pages.append(await _claim_pages(admin, postgres_schema, writer))
        [live] = await writer.claim_deliveries(16)  # the live head only: the dead are not due
        assert live.lane == (f"live{per_lane}", "p")
        await writer.delivery_done(live.seq)
    small, large = pages
    # Same lanes, 100x the rows waiting in them: a walk of the rows reads 100x the pages
    # (the claim before the fresh/retried indexes: 461 against 60,969); a descent per lane,
    # a few more at most as the lane index grows.
    assert large <= 2 * small, pages


async def test_upgrading_a_version_3_schema_keeps_the_outbox_and_its_claims(
    stores: Stores, clock: LeaseClock, admin: asyncpg.Connection, postgres_schema: str
) -> None:
    writer, b = await deliverers(stores, clock, 2)
    bodies = await pushed_task(writer, "t1", 2)
    [first, _] = await b.claim_deliveries(10)
    await b.delivery_retry(first.seq, attempts=2, next_attempt_at=clock.now + 5, error="HTTP 503")
    s = postgres_schema
    await admin.execute(
        f"DROP INDEX {s}.push_outbox_fresh; DROP INDEX {s}.push_outbox_retried;"
        f" UPDATE {s}.schema_version SET version = 3"
    )
    await writer.close()
    await b.close()
    upgraded = await stores(lease_clock=clock, heartbeat_seconds=None)
    assert await admin.fetchval(f"SELECT version FROM {s}.schema_version") == SCHEMA_VERSION
    indexes = await admin.fetch("SELECT indexname FROM pg_indexes WHERE schemaname = $1", s)
    assert {"push_outbox_fresh", "push_outbox_retried"} <= {r["indexname"] for r in indexes}
    [other] = await upgraded.claim_deliveries(10)  # the retried head holds back its lane
    assert other.lane == ("t1", "q") and other.body == bodies[0]
    clock.now += 6
    [again] = await upgraded.claim_deliveries(10)
    assert (again.seq, again.attempts, again.last_error) == (first.seq, 2, "HTTP 503")
