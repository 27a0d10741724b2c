"""ListTasks over real HTTP (spec 3.1.4): filters, order, cursor pages, page size, history and
artifacts."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from server_support import error, result, send_params, violations

from a2a_wire.types import Timestamp


async def make_tasks(client: Any, script: list[str], context: str = "") -> list[Any]:
    tasks = []
    for text in script:
        fields = {"contextId": context} if context else {}
        tasks.append((await result(client, "SendMessage", send_params(text, **fields)))["task"])
        await asyncio.sleep(0.002)  # distinct millisecond timestamps for most tasks
    return tasks


def order_key(task: Any) -> tuple[int, str]:
    moment = Timestamp.parse(task["status"]["timestamp"])
    return (-(moment.seconds * 10**9 + moment.nanos), task["id"])


async def walk(client: Any, params: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    pages, tasks = [], []
    token = ""
    while True:
        page = await result(client, "ListTasks", {**params, "pageToken": token})
        pages.append(page)
        tasks.extend(page["tasks"])
        token = page["nextPageToken"]
        if not token:
            return pages, tasks


async def test_empty_list_has_every_required_field(client: Any) -> None:
    page = await result(client, "ListTasks", {})
    assert page == {"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0}


async def test_pages_walk_everything_newest_first(client: Any) -> None:
    made = await make_tasks(client, ["echo", "reject", "input"] * 3)
    pages, tasks = await walk(client, {"pageSize": 4})
    assert [len(p["tasks"]) for p in pages] == [4, 4, 1]
    assert all(p["pageSize"] == 4 and p["totalSize"] == 9 for p in pages)
    assert pages[-1]["nextPageToken"] == ""
    assert sorted(t["id"] for t in tasks) == sorted(t["id"] for t in made)
    assert tasks == sorted(tasks, key=order_key)


async def test_default_page_size_is_50(client: Any) -> None:
    await asyncio.gather(*(result(client, "SendMessage", send_params("echo")) for _ in range(55)))
    page = await result(client, "ListTasks", {})
    assert len(page["tasks"]) == 50
    assert page["pageSize"] == 50
    assert page["totalSize"] == 55
    assert page["nextPageToken"]


@pytest.mark.parametrize("size", [0, 101, -1, 1000])
async def test_page_size_out_of_range(client: Any, size: int) -> None:
    err = await error(client, "ListTasks", {"pageSize": size})
    assert err["code"] == -32602
    assert violations(err) == ["pageSize"]


@pytest.mark.parametrize("size", [1, 100])
async def test_page_size_bounds_are_accepted(client: Any, size: int) -> None:
    assert (await result(client, "ListTasks", {"pageSize": size}))["pageSize"] == size


async def test_filters(client: Any) -> None:
    await make_tasks(client, ["echo", "input"])
    ours = await make_tasks(client, ["echo", "input", "reject"], context="ctx-a")
    page = await result(client, "ListTasks", {"contextId": "ctx-a"})
    assert {t["id"] for t in page["tasks"]} == {t["id"] for t in ours}
    waiting = await result(client, "ListTasks", {"status": "TASK_STATE_INPUT_REQUIRED"})
    assert waiting["totalSize"] == 2
    both = await result(
        client, "ListTasks", {"status": "TASK_STATE_INPUT_REQUIRED", "contextId": "ctx-a"}
    )
    assert [t["id"] for t in both["tasks"]] == [ours[1]["id"]]
    unfiltered = await result(client, "ListTasks", {"status": "TASK_STATE_UNSPECIFIED"})
    assert unfiltered["totalSize"] == 5


async def test_status_timestamp_after_is_inclusive(client: Any) -> None:
    made = await make_tasks(client, ["echo"] * 5)
    pivot = made[2]["status"]["timestamp"]
    page = await result(client, "ListTasks", {"statusTimestampAfter": pivot})
    after = Timestamp.parse(pivot)
    expected = {t["id"] for t in made if Timestamp.parse(t["status"]["timestamp"]) >= after}
    assert made[2]["id"] in expected
    assert made[0]["id"] not in expected  # the sleeps made the first task strictly older
    assert {t["id"] for t in page["tasks"]} == expected


async def test_unknown_status_is_invalid(client: Any) -> None:
    err = await error(client, "ListTasks", {"status": "working"})
    assert err["code"] == -32602
    assert violations(err) == ["status"]


async def test_artifacts_are_absent_unless_asked_for(client: Any) -> None:
    await make_tasks(client, ["echo"])
    plain = (await result(client, "ListTasks", {}))["tasks"][0]
    assert "artifacts" not in plain
    off = (await result(client, "ListTasks", {"includeArtifacts": False}))["tasks"][0]
    assert "artifacts" not in off
    on = (await result(client, "ListTasks", {"includeArtifacts": True}))["tasks"][0]
    assert on["artifacts"][0]["parts"] == [{"text": "echo"}]


async def test_history_length_applies_to_each_task(client: Any) -> None:
    await make_tasks(client, ["reject", "reject"])
    full = await result(client, "ListTasks", {})
    assert all(len(t["history"]) == 2 for t in full["tasks"])
    none = await result(client, "ListTasks", {"historyLength": 0})
    assert all("history" not in t for t in none["tasks"])
    one = await result(client, "ListTasks", {"historyLength": 1})
    assert all(t["history"][0]["role"] == "ROLE_AGENT" for t in one["tasks"])
    err = await error(client, "ListTasks", {"historyLength": -1})
    assert violations(err) == ["historyLength"]


@pytest.mark.parametrize("mangle", ["garbage", "flip", "other-filter"])
async def test_tampered_or_foreign_page_token_is_invalid(client: Any, mangle: str) -> None:
    await make_tasks(client, ["echo"] * 3)
    token = (await result(client, "ListTasks", {"pageSize": 1}))["nextPageToken"]
    params: dict[str, Any] = {"pageSize": 1, "pageToken": token}
    if mangle == "garbage":
        params["pageToken"] = "not-a-token!!"
    elif mangle == "flip":
        params["pageToken"] = token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]
    else:
        params["contextId"] = "ctx-other"
    err = await error(client, "ListTasks", params)
    assert err["code"] == -32602
    assert violations(err) == ["pageToken"]
