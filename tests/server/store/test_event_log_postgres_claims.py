"""Delivery claims between PostgreSQL stores: any process delivers, one at a time, in lane order."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from pg_stores import LeaseClock, Stores
from test_event_log import chunk, config, make_task

from a2a_wire.server.store import LEASE_SECONDS, Delivery, PostgresTaskStore


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
