"""The push-config methods over JSON-RPC (spec 3.1.7-3.1.10) and SendMessage's inline config."""

from __future__ import annotations

import logging
import socket
from typing import Any

import pytest
from aiohttp import web
from push_support import PUBLIC_IP, FakeResolver, local_settings
from server_support import (
    ScriptedAgent,
    error,
    make_card,
    plain_error,
    reason,
    result,
    send_params,
    violations,
)
from store_support import ServerStores

from a2a_wire.netguard import AddressPolicy
from a2a_wire.server import STORE_KEY, ServerSettings, create_app
from a2a_wire.server.push import PushSettings
from a2a_wire.server.store import SQLiteTaskStore

HOOK = "http://127.0.0.1:9/hook"
RESOLVER = FakeResolver(
    {
        "hooks.example.com": [[PUBLIC_IP]],
        "localhost": [["127.0.0.1"]],
        "intranet.example": [["10.1.2.3"]],
        "mixed.example": [[PUBLIC_IP, "192.168.1.1"]],
        "v6local.example": [["fd00::1"]],
        "nowhere.example": [[]],
    }
)


def push_app(push: PushSettings | None = None, **kwargs: Any) -> web.Application:
    settings = ServerSettings(push=push or local_settings(resolver=RESOLVER))
    return create_app(make_card(push=True), ScriptedAgent(), settings=settings, **kwargs)


async def start(aiohttp_client: Any, push: PushSettings | None = None, **kwargs: Any) -> Any:
    return await aiohttp_client(push_app(push, **kwargs))


@pytest.fixture
def app(store_for: ServerStores) -> web.Application:
    return push_app(store=store_for())


async def new_task(client: Any) -> str:
    task = (await result(client, "SendMessage", send_params("input")))["task"]
    return str(task["id"])


async def test_create_get_list_delete(client: Any) -> None:
    task_id = await new_task(client)
    auth = {"scheme": "Bearer", "credentials": "c"}
    made = await result(
        client,
        "CreateTaskPushNotificationConfig",
        {"taskId": task_id, "url": HOOK, "token": "t", "authentication": auth},
    )
    assert made["id"] and made["taskId"] == task_id and made["url"] == HOOK
    assert "token" not in made and made["authentication"] == {"scheme": "Bearer"}
    key = {"taskId": task_id, "id": made["id"]}
    assert await result(client, "GetTaskPushNotificationConfig", key) == made
    listed = await result(client, "ListTaskPushNotificationConfigs", {"taskId": task_id})
    assert listed == {"configs": [made]}
    assert await result(client, "DeleteTaskPushNotificationConfig", key) == {}
    assert await result(client, "DeleteTaskPushNotificationConfig", key) == {}  # idempotent
    err = await error(client, "GetTaskPushNotificationConfig", key)
    assert err["code"] == -32001 and reason(err) == "TASK_NOT_FOUND"
    assert await result(client, "ListTaskPushNotificationConfigs", {"taskId": task_id}) == {}


async def test_a_given_id_is_kept_and_creating_it_again_replaces_the_config(client: Any) -> None:
    task_id = await new_task(client)
    for url in (HOOK, HOOK + "2"):
        config = {"taskId": task_id, "id": "mine", "url": url}
        assert (await result(client, "CreateTaskPushNotificationConfig", config))["id"] == "mine"
    listed = await result(client, "ListTaskPushNotificationConfigs", {"taskId": task_id})
    assert [(c["id"], c["url"]) for c in listed["configs"]] == [("mine", HOOK + "2")]


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("CreateTaskPushNotificationConfig", {"taskId": "nope", "url": HOOK}),
        ("GetTaskPushNotificationConfig", {"taskId": "nope", "id": "c"}),
        ("ListTaskPushNotificationConfigs", {"taskId": "nope"}),
        ("DeleteTaskPushNotificationConfig", {"taskId": "nope", "id": "c"}),
    ],
)
async def test_unknown_task(client: Any, method: str, params: Any) -> None:
    err = await error(client, method, params)
    assert err["code"] == -32001 and reason(err) == "TASK_NOT_FOUND"


async def test_create_needs_a_task_id_and_a_url(client: Any) -> None:
    err = await error(client, "CreateTaskPushNotificationConfig", {"url": HOOK})
    assert err["code"] == -32602 and violations(err) == ["taskId"]
    err = await error(client, "CreateTaskPushNotificationConfig", {"taskId": "x"})
    assert err["code"] == -32602 and violations(err) == ["url"]


async def test_list_pages_in_creation_order(client: Any) -> None:
    task_id = await new_task(client)
    made = []
    for i in range(5):
        config = {"taskId": task_id, "id": f"z{4 - i}", "url": HOOK}
        made.append((await result(client, "CreateTaskPushNotificationConfig", config))["id"])
    await result(client, "DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "z2"})
    seen: list[str] = []
    params: dict[str, Any] = {"taskId": task_id, "pageSize": 2}
    while True:
        page = await result(client, "ListTaskPushNotificationConfigs", params)
        seen += [c["id"] for c in page["configs"]]
        if not page.get("nextPageToken"):
            break
        params["pageToken"] = page["nextPageToken"]
    assert seen == ["z4", "z3", "z1", "z0"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"pageSize": -1}, "pageSize"),
        ({"pageSize": 101}, "pageSize"),  # refused like ListTasks, not cut to 100
        ({"pageToken": "bogus"}, "pageToken"),
    ],
)
async def test_list_refuses_bad_paging(client: Any, params: Any, field: str) -> None:
    task_id = await new_task(client)
    err = await error(client, "ListTaskPushNotificationConfigs", {"taskId": task_id, **params})
    assert err["code"] == -32602 and violations(err) == [field]


async def test_list_page_size_bounds_and_default(client: Any) -> None:
    task_id = await new_task(client)
    for _ in range(3):
        await result(client, "CreateTaskPushNotificationConfig", {"taskId": task_id, "url": HOOK})
    for size, count in [(0, 3), (1, 1), (100, 3)]:  # 0: the field has no presence, so default
        params = {"taskId": task_id, "pageSize": size}
        page = await result(client, "ListTaskPushNotificationConfigs", params)
        assert len(page["configs"]) == count, size


async def test_list_page_tokens_are_bound_to_the_task_and_the_method(client: Any) -> None:
    task_id, other = await new_task(client), await new_task(client)
    for tid in (task_id, task_id, other, other):
        await result(client, "CreateTaskPushNotificationConfig", {"taskId": tid, "url": HOOK})
    first = {"taskId": task_id, "pageSize": 1}
    token = (await result(client, "ListTaskPushNotificationConfigs", first))["nextPageToken"]
    tasks_token = (await result(client, "ListTasks", {"pageSize": 1}))["nextPageToken"]
    assert token and tasks_token
    for tid, sent in [(other, token), (task_id, tasks_token)]:
        params = {"taskId": tid, "pageSize": 1, "pageToken": sent}
        err = await error(client, "ListTaskPushNotificationConfigs", params)
        assert err["code"] == -32602 and violations(err) == ["pageToken"]
    err = await error(client, "ListTasks", {"pageSize": 1, "pageToken": token})
    assert violations(err) == ["pageToken"]


async def test_configs_per_task_are_limited(aiohttp_client: Any) -> None:
    client = await start(aiohttp_client, local_settings(max_configs_per_task=2))
    task_id = await new_task(client)
    for _ in range(2):
        await result(client, "CreateTaskPushNotificationConfig", {"taskId": task_id, "url": HOOK})
    err = await error(client, "CreateTaskPushNotificationConfig", {"taskId": task_id, "url": HOOK})
    assert err["code"] == -32602


FORBIDDEN_URLS = [
    HOOK,
    "http://127.0.0.2/hook",
    "https://10.0.0.1/hook",
    "https://172.16.5.4/hook",
    "https://192.168.0.10/hook",
    "https://169.254.169.254/latest/meta-data",
    "https://[::1]/hook",
    "https://[fe80::1]/hook",
    "https://[::ffff:10.0.0.1]/hook",
    "https://2130706433/hook",
    "https://localhost/hook",
    "https://LocalHost./hook",
    "https://hooks.localhost/hook",
    "https://intranet.example/hook",
    "https://mixed.example/hook",
    "https://v6local.example/hook",
    "ftp://hooks.example.com/hook",
    "https://user:pw@hooks.example.com/hook",
    "/relative/hook",
    "https://" + "a" * 2048 + ".example/",
]


@pytest.mark.parametrize("url", FORBIDDEN_URLS)
async def test_forbidden_urls_are_refused_at_creation(aiohttp_client: Any, url: str) -> None:
    client = await start(
        aiohttp_client, local_settings(allowlist=AddressPolicy(), resolver=RESOLVER)
    )
    task_id = await new_task(client)
    err = await error(client, "CreateTaskPushNotificationConfig", {"taskId": task_id, "url": url})
    assert err["code"] == -32602 and violations(err) == ["url"]
    assert await result(client, "ListTaskPushNotificationConfigs", {"taskId": task_id}) == {}


async def test_http_needs_the_setting(aiohttp_client: Any) -> None:
    strict = PushSettings(allowlist=AddressPolicy.from_strings(["127.0.0.1"]), resolver=RESOLVER)
    client = await start(aiohttp_client, strict)
    task_id = await new_task(client)
    err = await error(client, "CreateTaskPushNotificationConfig", {"taskId": task_id, "url": HOOK})
    assert violations(err) == ["url"] and "https URL" in err["message"]
    ok = {"taskId": task_id, "url": "https://hooks.example.com/x"}
    assert (await result(client, "CreateTaskPushNotificationConfig", ok))["url"] == ok["url"]


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"token": "two\nlines"}, "token"),
        ({"authentication": {"scheme": "Bear er"}}, "authentication.scheme"),
        (
            {"authentication": {"scheme": "Bearer", "credentials": "x\r\ny"}},
            "authentication.credentials",
        ),
        ({"authentication": {"credentials": "x"}}, "authentication.scheme"),
        ({"id": "i" * 300}, "id"),
    ],
)
async def test_header_values_are_checked(client: Any, extra: Any, field: str) -> None:
    task_id = await new_task(client)
    params = {"taskId": task_id, "url": HOOK, **extra}
    err = await error(client, "CreateTaskPushNotificationConfig", params)
    assert err["code"] == -32602 and violations(err) == [field]


async def test_inline_config_is_stored_with_the_new_task(client: Any) -> None:
    config = {"taskPushNotificationConfig": {"url": HOOK, "token": "t"}}
    task = (await result(client, "SendMessage", send_params("input", config)))["task"]
    listed = await result(client, "ListTaskPushNotificationConfigs", {"taskId": task["id"]})
    [stored] = listed["configs"]
    assert stored["taskId"] == task["id"] and stored["url"] == HOOK and stored["id"]


async def test_inline_config_on_a_follow_up_is_stored_on_that_task(client: Any) -> None:
    task_id = await new_task(client)
    config = {"taskPushNotificationConfig": {"url": HOOK, "id": "later", "taskId": task_id}}
    await result(client, "SendMessage", send_params("more", config, taskId=task_id))
    key = {"taskId": task_id, "id": "later"}
    assert (await result(client, "GetTaskPushNotificationConfig", key))["url"] == HOOK


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"url": "https://10.0.0.1/x"}, "url"),
        ({"url": HOOK, "taskId": "other"}, "taskId"),
        ({"token": "t"}, "url"),
    ],
)
async def test_bad_inline_config_starts_nothing(client: Any, config: Any, field: str) -> None:
    params = send_params("echo", {"taskPushNotificationConfig": config})
    err = await error(client, "SendMessage", params)
    assert err["code"] == -32602
    assert violations(err) == [f"configuration.taskPushNotificationConfig.{field}"]
    assert (await result(client, "ListTasks", {}))["totalSize"] == 0


async def test_inline_config_on_an_unknown_task(client: Any) -> None:
    config = {"taskPushNotificationConfig": {"url": HOOK}}
    err = await error(client, "SendMessage", send_params("more", config, taskId="nope"))
    assert err["code"] == -32001


@pytest.mark.parametrize("method", ["SendMessage", "SendStreamingMessage"])
async def test_without_the_capability_inline_configs_are_refused(
    aiohttp_client: Any, method: str
) -> None:
    client = await aiohttp_client(create_app(make_card(push=False), ScriptedAgent()))
    config = {"taskPushNotificationConfig": {"url": HOOK}}
    if method == "SendMessage":
        err = await error(client, method, send_params("echo", config))
    else:
        err = await plain_error(client, method, send_params("echo", config))
    assert err["code"] == -32003 and reason(err) == "PUSH_NOTIFICATION_NOT_SUPPORTED"


async def test_configs_survive_a_restart(aiohttp_client: Any, tmp_path: Any) -> None:
    path = tmp_path / "tasks.db"
    client = await start(aiohttp_client, store=SQLiteTaskStore(path))
    task_id = await new_task(client)
    config = {"taskId": task_id, "id": "keep", "url": HOOK, "token": "t"}
    made = await result(client, "CreateTaskPushNotificationConfig", config)
    await client.close()
    again = await start(aiohttp_client, store=SQLiteTaskStore(path))
    key = {"taskId": task_id, "id": "keep"}
    assert await result(again, "GetTaskPushNotificationConfig", key) == made
    stored = await again.app[STORE_KEY].get_push_config(task_id, "keep")
    assert stored is not None and stored.token == "t"  # the secret too, though never shown


async def test_answers_never_carry_the_secrets_and_the_store_keeps_them(
    aiohttp_client: Any,
) -> None:
    app = push_app()
    client = await aiohttp_client(app)
    task_id = await new_task(client)
    auth = {"scheme": "Bearer", "credentials": "the-credential"}
    config = {
        "taskId": task_id,
        "id": "c1",
        "url": HOOK,
        "token": "the-token",
        "authentication": auth,
    }
    made = await result(client, "CreateTaskPushNotificationConfig", config)
    got = await result(client, "GetTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"})
    listed = await result(client, "ListTaskPushNotificationConfigs", {"taskId": task_id})
    shown = {"taskId": task_id, "id": "c1", "url": HOOK, "authentication": {"scheme": "Bearer"}}
    assert made == got == shown and listed == {"configs": [shown]}
    stored = await app[STORE_KEY].get_push_config(task_id, "c1")
    assert stored is not None and stored.token == "the-token"
    assert stored.authentication is not None
    assert stored.authentication.credentials == "the-credential"


@pytest.mark.parametrize(
    "url", ["https://localhost/x", "https://a.b.localhost/x", "https://[::1]/x"]
)
async def test_loopback_by_definition_is_refused_without_a_lookup(
    aiohttp_client: Any, url: str
) -> None:
    resolver = FakeResolver({})
    client = await start(aiohttp_client, PushSettings(resolver=resolver))
    task_id = await new_task(client)
    err = await error(client, "CreateTaskPushNotificationConfig", {"taskId": task_id, "url": url})
    assert err["code"] == -32602 and violations(err) == ["url"]
    assert resolver.lookups == []


async def test_an_allowlisted_loopback_name_is_looked_up_like_any_name(
    aiohttp_client: Any,
) -> None:
    resolver = FakeResolver({"localhost": [["127.0.0.1"]]})
    push = local_settings(allowlist=AddressPolicy.from_strings(["127.0.0.1"]), resolver=resolver)
    client = await start(aiohttp_client, push)
    task_id = await new_task(client)
    config = {"taskId": task_id, "url": "http://localhost:9/hook"}
    assert (await result(client, "CreateTaskPushNotificationConfig", config))["url"]
    assert resolver.lookups == ["localhost"]


class UnreachableDNS(FakeResolver):
    """A resolver whose every lookup fails as when no DNS server answers."""

    def __init__(self) -> None:
        super().__init__({})

    async def resolve(self, host: str, port: int = 0, family: Any = 0) -> Any:
        self.lookups.append(host)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")


@pytest.mark.parametrize("resolver", [FakeResolver({}), UnreachableDNS()])
async def test_a_name_that_does_not_resolve_now_is_accepted_and_logged(
    aiohttp_client: Any, caplog: pytest.LogCaptureFixture, resolver: FakeResolver
) -> None:
    caplog.set_level(logging.INFO, logger="a2a_wire.server")
    client = await start(aiohttp_client, PushSettings(resolver=resolver))
    task_id = await new_task(client)
    url = "https://example.com/hook"
    made = await result(client, "CreateTaskPushNotificationConfig", {"taskId": task_id, "url": url})
    assert made["url"] == url and resolver.lookups == ["example.com"]
    [line] = [r.getMessage() for r in caplog.records if "does not resolve now" in r.getMessage()]
    assert "'example.com'" in line and "address guard decides" in line
    inline = {"taskPushNotificationConfig": {"url": "https://later.example/hook"}}
    assert (await result(client, "SendMessage", send_params("input", inline)))["task"]
