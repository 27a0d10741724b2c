"""The server's request log: one structured line per request, and the refusal while draining."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from server_support import (
    RawConnection,
    envelope,
    message,
    post,
    post_head,
    send_params,
    serve_like_the_cli,
)

from a2a_wire.cli._app import build_app
from a2a_wire.cli._logging import (
    JSONFormatter,
    MalformedRequests,
    RequestLog,
    TextFormatter,
    configure_logging,
)
from a2a_wire.cli.config import load
from a2a_wire.server import HEALTH_KEY
from a2a_wire.server.store import SQLiteTaskStore


@pytest.fixture
async def served(aiohttp_client: Any, tmp_path: Path) -> tuple[Any, RequestLog]:
    path = tmp_path / "mem.toml"
    path.write_text(
        '[server]\nstorage = "memory"\n\n[[skills]]\nexecutor = "echo"\n'
        "options = { chunk_size = 100, chunk_delay_seconds = 0 }\n",
        encoding="utf-8",
    )
    app, requests = build_app(load(path))
    return await aiohttp_client(app), requests


def _lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [r.fields for r in caplog.records if r.name == "a2a_wire.access"]  # type: ignore[attr-defined]


async def test_one_line_per_request(
    served: tuple[Any, RequestLog], caplog: pytest.LogCaptureFixture
) -> None:
    client, _ = served
    caplog.set_level(logging.INFO, logger="a2a_wire.access")
    secret = {"Authorization": "Bearer very-secret-token"}
    answer = await (
        await post(client, envelope("SendMessage", send_params("hi")), headers=secret)
    ).json()
    task_id = answer["result"]["task"]["id"]
    stream = await post(client, envelope("SendStreamingMessage", send_params("yo")))
    await stream.read()
    await post(client, envelope("GetTask", {"id": task_id}))
    await post(client, envelope("CancelTask", {"id": "missing"}))
    await post(client, [envelope("GetTask", {"id": task_id}, 1), envelope("ListTasks", {}, 2)])
    await post(client, b"{not json")
    await client.get("/.well-known/agent-card.json")
    await client.get("/nowhere")
    lines = _lines(caplog)
    assert [(f["method"], f["status"]) for f in lines] == [
        ("SendMessage", 200),
        ("SendStreamingMessage", 200),
        ("GetTask", 200),
        ("CancelTask", 200),
        ("batch[2]", 200),
        ("?", 200),
        ("GET", 200),
        ("GET", 404),
    ]
    assert lines[0]["task_id"] == task_id
    assert lines[1]["task_id"] and lines[1]["task_id"] != task_id  # the streamed task's id
    assert lines[2]["task_id"] == task_id and lines[3]["task_id"] == "missing"
    assert all(f["duration_ms"] >= 0 and f["http"] in ("GET", "POST") for f in lines)
    assert "very-secret-token" not in caplog.text
    assert all("very-secret-token" not in json.dumps(f) for f in lines)


async def test_lines_name_the_error_code_the_client_and_the_remote_address(
    aiohttp_client: Any,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOG_TEST_ALICE_TOKEN", "alice-token")
    path = tmp_path / "clients.toml"
    path.write_text(
        '[server]\nstorage = "memory"\n\n[[skills]]\nexecutor = "echo"\n\n'
        '[[clients]]\nid = "alice"\ntoken_env = "LOG_TEST_ALICE_TOKEN"\n',
        encoding="utf-8",
    )
    app, _ = build_app(load(path))
    client = await aiohttp_client(app)
    caplog.set_level(logging.INFO, logger="a2a_wire.access")
    alice = {"Authorization": "Bearer alice-token"}
    await post(client, envelope("ListTasks", {}), headers=alice)
    await post(client, envelope("GetTask", {"id": "missing"}), headers=alice)
    batch = [envelope("GetTask", {"id": "missing"}, 1), envelope("NoSuchMethod", {}, 2)]
    await post(client, [*batch, envelope("ListTasks", {}, 3)], headers=alice)
    stream = await post(client, envelope("SubscribeToTask", {"id": "missing"}), headers=alice)
    await stream.read()
    await post(client, b"{not json", headers=alice)
    await post(client, envelope("ListTasks", {}), headers={"Authorization": "Bearer wrong"})
    await client.get("/nowhere")
    lines = _lines(caplog)
    assert [(f["method"], f.get("error"), f.get("client")) for f in lines] == [
        ("ListTasks", None, "alice"),
        ("GetTask", -32001, "alice"),
        ("batch[3]", "-32001,-32601", "alice"),
        ("SubscribeToTask", -32001, "alice"),
        ("?", -32700, "alice"),
        ("?", -32600, None),  # refused before the body is read: 401, nobody authenticated
        ("GET", -32600, None),
    ]
    assert lines[5]["status"] == 401
    assert all(f["remote"] == "127.0.0.1" for f in lines)
    assert "alice-token" not in caplog.text


async def test_follow_up_and_push_methods_name_their_task(
    served: tuple[Any, RequestLog], caplog: pytest.LogCaptureFixture
) -> None:
    client, _ = served
    caplog.set_level(logging.INFO, logger="a2a_wire.access")
    follow = {"message": message("again", taskId="t-1")}
    await post(client, envelope("SendMessage", follow))
    await post(client, envelope("ListTaskPushNotificationConfigs", {"taskId": "t-2"}))
    assert [f.get("task_id") for f in _lines(caplog)] == ["t-1", "t-2"]


async def test_draining_refuses_new_requests(served: tuple[Any, RequestLog]) -> None:
    client, requests = served
    requests.draining = True
    response = await post(client, envelope("GetTask", {"id": "x"}))
    assert response.status == 503
    assert response.headers["Connection"] == "close"
    assert (await response.json())["error"]["code"] == -32603


def _record(**fields: Any) -> logging.LogRecord:
    record = logging.LogRecord("a2a_wire.access", logging.INFO, __file__, 1, "request", (), None)
    record.created = 1_700_000_000.25
    record.fields = fields
    return record


def test_text_format_quotes_what_needs_it() -> None:
    line = TextFormatter().format(_record(method="GetTask", path="/a b", status=200))
    assert line == '2023-11-14T22:13:20.250Z info request method=GetTask path="/a b" status=200'
    other = logging.LogRecord("a2a_wire.serve", logging.WARNING, __file__, 1, "stopping", (), None)
    assert "warning stopping logger=a2a_wire.serve" in TextFormatter().format(other)


def test_json_format_is_one_object() -> None:
    obj = json.loads(JSONFormatter().format(_record(method="ListTasks", status=200)))
    assert obj == {
        "ts": "2023-11-14T22:13:20.250Z",
        "level": "info",
        "logger": "a2a_wire.access",
        "msg": "request",
        "method": "ListTasks",
        "status": 200,
    }


@pytest.fixture
def restore_logging() -> Any:
    """Put the root logger and the loggers configure_logging touches back as they were."""
    root = logging.getLogger()
    names = ("a2a_wire.serve", "aiosqlite", "aiohttp.access")
    saved = (list(root.handlers), root.level, [logging.getLogger(n).level for n in names])
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in saved[0]:
        root.addHandler(handler)
    root.setLevel(saved[1])
    for name, level in zip(names, saved[2], strict=True):
        logging.getLogger(name).setLevel(level)
    logging.getLogger("aiohttp.access").disabled = False
    aiohttp_server = logging.getLogger("aiohttp.server")
    for added in [f for f in aiohttp_server.filters if isinstance(f, MalformedRequests)]:
        aiohttp_server.removeFilter(added)


@pytest.mark.parametrize("sql", [False, True])
async def test_debug_leaves_out_the_sql_lines_unless_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], restore_logging: None, sql: bool
) -> None:
    configure_logging("debug", "text", sql=sql)
    logging.getLogger("a2a_wire.server").debug("a debug line of our own")
    store = SQLiteTaskStore(tmp_path / "tasks.sqlite3")
    await store.open()
    await store.close()
    err = capsys.readouterr().err
    assert "a debug line of our own" in err
    assert ("logger=aiosqlite" in err) is sql


def _memory_config(tmp_path: Path) -> Path:
    path = tmp_path / "mem.toml"
    path.write_text('[server]\nstorage = "memory"\n', encoding="utf-8")
    return path


async def test_a_hang_up_while_sending_is_one_499_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    app, _ = build_app(load(_memory_config(tmp_path)))
    body = envelope("GetTask", {"id": "t"})
    async with serve_like_the_cli(app) as address:
        for _ in range(10):
            async with await RawConnection.open(address) as conn:
                await conn.send(post_head(100, Expect="100-continue"))
                await conn.interim(100)  # the application reads the body now
                await conn.send(json.dumps(body).encode()[:10])
        async with asyncio.timeout(10):
            while len(_lines(caplog)) < 10:
                await asyncio.sleep(0.01)
    assert [(f["http"], f["status"]) for f in _lines(caplog)] == [("POST", 499)] * 10
    others = [r for r in caplog.records if r.name != "a2a_wire.access"]
    assert [r.getMessage() for r in others if r.levelno >= logging.INFO or r.exc_info] == []


async def test_what_aiohttp_cannot_parse_is_one_info_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], restore_logging: None
) -> None:
    configure_logging("info", "text")
    app, _ = build_app(load(_memory_config(tmp_path)))
    garbage = [b"BLAH BLAH\r\n\r\n", b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n"]
    async with serve_like_the_cli(app) as address:
        for data in garbage:
            async with await RawConnection.open(address) as conn:
                await conn.send(data)
                status, _, _ = await conn.response()  # aiohttp logs before it answers
                assert status == 400
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "malformed request" in line]
    assert len(lines) == 1 and "status=400" in lines[0] and "remote=127.0.0.1" in lines[0]
    assert "info malformed request logger=aiohttp.server" in lines[0]
    assert "Traceback" not in err and " error " not in err


def test_records_go_to_the_stderr_of_the_moment(
    restore_logging: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stderr replaced and closed since configure_logging ran is no logging error."""
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    configure_logging("info", "text")
    logging.getLogger("a2a_wire.server").info("one")
    monkeypatch.setattr(sys, "stderr", second)
    first.close()
    logging.getLogger("a2a_wire.server").info("two")
    assert "info two logger=a2a_wire.server" in second.getvalue()
    assert "Logging error" not in second.getvalue()


async def test_probes_are_logged_and_answer_while_draining(
    served: tuple[Any, RequestLog], caplog: pytest.LogCaptureFixture
) -> None:
    client, requests = served
    caplog.set_level(logging.INFO, logger="a2a_wire.access")
    assert (await client.get("/readyz")).status == 200
    requests.draining = True
    client.app[HEALTH_KEY].stop()  # as serve's stop does
    ready = await client.get("/readyz")
    assert ready.status == 503 and (await ready.json())["reason"] == "SHUTTING_DOWN"
    assert (await client.get("/healthz")).status == 200  # alive while it drains
    lines = [(f["method"], f["path"], f["status"]) for f in _lines(caplog)]
    assert lines == [("GET", "/readyz", 200), ("GET", "/readyz", 503), ("GET", "/healthz", 200)]
