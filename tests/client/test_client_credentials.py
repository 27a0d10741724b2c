"""Credential providers, and the rule that secrets never show in logs, reprs or errors."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from client_fake import LOCAL, FakeAgent, task_json

from a2a_wire.client import (
    BEARER,
    A2AClient,
    AuthenticationError,
    ClientError,
    ClientSettings,
    CredentialRequest,
    CredentialsError,
    EnvCredentials,
    FileCredentials,
    HTTPStatusError,
    NoCredentials,
    PerAgentCredentials,
    RedirectRefusedError,
    Secret,
    StaticCredentials,
    TotalTimeoutError,
    TransportError,
    api_key_header,
    read_secret,
)
from a2a_wire.errors import A2AError, TaskNotFoundError
from a2a_wire.types import GetTaskRequest

SECRET = "s3cr3t-Tok3n-do-not-leak"
REQUEST = CredentialRequest(agent_url="https://agent.example/rpc", method="GetTask")


async def test_static_bearer_and_api_key() -> None:
    assert await StaticCredentials("abc").headers(REQUEST) == {"Authorization": "Bearer abc"}
    provider = StaticCredentials(Secret("k"), scheme=api_key_header("X-Key"))
    assert await provider.headers(REQUEST) == {"X-Key": "k"}
    assert await NoCredentials().headers(REQUEST) == {}
    assert BEARER.prefix == "Bearer "


async def test_env_provider_reads_per_request(monkeypatch: pytest.MonkeyPatch) -> None:
    provider = EnvCredentials("A2A_TEST_TOKEN")
    monkeypatch.setenv("A2A_TEST_TOKEN", "one")
    assert await provider.headers(REQUEST) == {"Authorization": "Bearer one"}
    monkeypatch.setenv("A2A_TEST_TOKEN", "two")
    assert await provider.headers(REQUEST) == {"Authorization": "Bearer two"}
    monkeypatch.delenv("A2A_TEST_TOKEN")
    with pytest.raises(CredentialsError, match="A2A_TEST_TOKEN is not set"):
        await provider.headers(REQUEST)
    monkeypatch.setenv("A2A_TEST_TOKEN", "")
    with pytest.raises(CredentialsError, match="empty"):
        await provider.headers(REQUEST)


async def test_file_provider(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("  from-file\n")
    provider = FileCredentials(path, scheme=api_key_header())
    assert await provider.headers(REQUEST) == {"X-API-Key": "from-file"}
    path.write_text("rotated\n")
    assert await provider.headers(REQUEST) == {"X-API-Key": "rotated"}
    with pytest.raises(CredentialsError, match="cannot read credential file"):
        await FileCredentials(tmp_path / "missing").headers(REQUEST)
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(CredentialsError, match="not UTF-8"):
        await provider.headers(REQUEST)


async def test_read_secret_reads_once_by_the_providers_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader of the CLI's --client-secret-* and serve's *_env/*_file: the providers' rules."""
    monkeypatch.setenv("A2A_TEST_SECRET", SECRET)
    assert read_secret(env="A2A_TEST_SECRET") == Secret(SECRET)
    path = tmp_path / "secret"
    big = "x" * (FileCredentials.MAX_BYTES - 3)
    path.write_text(f"  {big}\n", encoding="utf-8")  # 64 KiB exactly: read whole, never cut
    assert read_secret(file=path).reveal() == big
    path.write_text(SECRET + "x" * FileCredentials.MAX_BYTES, encoding="utf-8")
    for source in (read_secret(env="A2A_TEST_SECRET"), FileCredentials(path)):
        assert SECRET not in repr(source)
    failures = {
        "larger than 65536": lambda: read_secret(file=path),
        "A2A_TEST_UNSET is not set": lambda: read_secret(env="A2A_TEST_UNSET"),
        "cannot read credential file": lambda: read_secret(file=tmp_path / "missing"),
    }
    monkeypatch.setenv("A2A_TEST_EMPTY", "")
    failures["environment variable A2A_TEST_EMPTY is empty"] = lambda: read_secret(
        env="A2A_TEST_EMPTY"
    )
    for message, read in failures.items():
        with pytest.raises(CredentialsError, match=message) as caught:
            read()
        assert SECRET not in str(caught.value)
    with pytest.raises(CredentialsError, match="larger than"):  # the provider says the same
        await FileCredentials(path).headers(REQUEST)
    (tmp_path / "blank").write_text(" \n", encoding="utf-8")
    with pytest.raises(CredentialsError, match="empty"):
        read_secret(file=tmp_path / "blank")
    for wrong in ({}, {"env": "A2A_TEST_SECRET", "file": path}):
        with pytest.raises(ValueError, match="exactly one"):
            read_secret(**wrong)  # type: ignore[arg-type]


async def test_values_unfit_for_a_header_are_refused_without_quoting_them() -> None:
    for bad in (SECRET + "\r\nX-Evil: 1", SECRET + "\x00", SECRET + "\u2603"):
        with pytest.raises(CredentialsError, match="not allowed in an HTTP header") as caught:
            await StaticCredentials(bad).headers(REQUEST)
        assert SECRET not in str(caught.value)


async def test_per_agent_credentials() -> None:
    provider = PerAgentCredentials(
        {
            "https://agent.example": StaticCredentials("origin-token"),
            "https://agent.example/special": StaticCredentials("exact-token"),
        },
        default=StaticCredentials("default-token"),
    )

    async def for_url(url: str) -> Mapping[str, str]:
        return await provider.headers(CredentialRequest(agent_url=url, method="GetTask"))

    assert await for_url("https://agent.example/rpc") == {"Authorization": "Bearer origin-token"}
    assert await for_url("https://agent.example/special/") == {
        "Authorization": "Bearer exact-token"
    }
    assert await for_url("https://other.example/rpc") == {"Authorization": "Bearer default-token"}
    assert await PerAgentCredentials({}).headers(REQUEST) == {}


async def test_provider_sees_agent_and_method(agent: FakeAgent) -> None:
    seen: list[CredentialRequest] = []

    class Recording:
        async def headers(self, request: CredentialRequest) -> Mapping[str, str]:
            seen.append(request)
            return {"X-Per-Request": str(len(seen))}

    agent.reply("GetTask", task_json())
    async with A2AClient(agent.url, settings=LOCAL, credentials=Recording()) as client:
        await client.get_task(GetTaskRequest(id="t1"))
        await client.get_task(GetTaskRequest(id="t1"))
    assert [r.method for r in seen] == ["GetTask", "GetTask"]
    assert seen[0].agent_url == agent.url
    assert [r.headers["X-Per-Request"] for r in agent.requests] == ["1", "2"]


async def test_credentials_cannot_override_protocol_headers(agent: FakeAgent) -> None:
    class Meddling:
        async def headers(self, request: CredentialRequest) -> Mapping[str, str]:
            return {"a2a-version": "0.3", "content-type": "text/plain", "Authorization": "Bearer x"}

    agent.reply("GetTask", task_json())
    async with A2AClient(agent.url, settings=LOCAL, credentials=Meddling()) as client:
        await client.get_task(GetTaskRequest(id="t1"))
    sent = agent.requests[-1].headers
    assert sent.getall("A2A-Version") == ["1.0"]
    assert sent.getall("Content-Type") == ["application/json"]


def test_reprs_hide_secrets(tmp_path: Path) -> None:
    assert SECRET not in repr(Secret(SECRET)) and SECRET not in str(Secret(SECRET))
    assert SECRET not in f"{Secret(SECRET)}"
    assert Secret(SECRET).reveal() == SECRET
    providers: list[Any] = [
        StaticCredentials(SECRET),
        EnvCredentials("A2A_TEST_TOKEN"),
        FileCredentials(tmp_path / "t"),
        PerAgentCredentials({"https://a.example": StaticCredentials(SECRET)}),
    ]
    for provider in providers:
        assert SECRET not in repr(provider) and SECRET not in str(provider)
    client = A2AClient(
        f"https://user:{SECRET}@agent.example/rpc?key={SECRET}",
        credentials=StaticCredentials(SECRET),
    )
    assert SECRET not in repr(client)


def all_text(exc: BaseException) -> str:
    """str and repr of the error and of every error chained to it, plus the traceback."""
    parts: list[str] = []
    seen: BaseException | None = exc
    while seen is not None:
        parts += [str(seen), repr(seen)]
        parts += [repr(a) for a in seen.args]
        parts += [repr(v) for v in getattr(seen, "__dict__", {}).values()]
        seen = seen.__cause__ or seen.__context__
    parts.append("".join(traceback.format_exception(exc)))
    return "\n".join(parts)


def failing_handlers(agent: FakeAgent) -> dict[str, Callable[..., Awaitable[web.StreamResponse]]]:
    async def unauthorized(request: web.Request, body: Any) -> web.StreamResponse:
        return web.Response(status=401, headers={"WWW-Authenticate": "Bearer"})

    async def server_error(request: web.Request, body: Any) -> web.StreamResponse:
        return web.Response(status=500, text="boom")

    async def redirect(request: web.Request, body: Any) -> web.StreamResponse:
        return web.Response(status=307, headers={"Location": "https://elsewhere.example/"})

    async def hang_up(request: web.Request, body: Any) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.close()
        return web.Response()

    async def rpc_error(request: web.Request, body: Any) -> web.StreamResponse:
        error = {"code": -32001, "message": "not found"}
        return web.json_response({"jsonrpc": "2.0", "id": body["id"], "error": error})

    async def stall(request: web.Request, body: Any) -> web.StreamResponse:
        await agent.stall()
        return web.Response()

    return {
        "unauthorized": unauthorized,
        "server_error": server_error,
        "redirect": redirect,
        "hang_up": hang_up,
        "rpc_error": rpc_error,
        "stall": stall,
    }


# The error each failing handler ends in (any of them must keep the secret out of its text).
FAILURE_ERRORS: dict[str, type[A2AError]] = {
    "unauthorized": AuthenticationError,
    "server_error": HTTPStatusError,
    "redirect": RedirectRefusedError,
    "hang_up": TransportError,
    "rpc_error": TaskNotFoundError,
    "stall": TotalTimeoutError,
}


@pytest.mark.parametrize("failure", list(FAILURE_ERRORS))
@pytest.mark.parametrize("source", ["static", "env", "file"])
async def test_secret_never_in_logs_reprs_or_errors(
    agent: FakeAgent,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    failure: str,
    source: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("A2A_SECRET_TOKEN", SECRET)
    (tmp_path / "token").write_text(SECRET)
    provider = {
        "static": StaticCredentials(SECRET),
        "env": EnvCredentials("A2A_SECRET_TOKEN"),
        "file": FileCredentials(tmp_path / "token"),
    }[source]
    agent.on("GetTask", failing_handlers(agent)[failure])
    # Only the stalling agent is meant to reach the timeout; the others answer at once. It is
    # long enough for the request to be sent first on a busy machine (the header is checked).
    total = 2.0 if failure == "stall" else 60.0
    settings = ClientSettings(allow=["127.0.0.1"], total_timeout=total)
    async with A2AClient(agent.url, settings=settings, credentials=provider) as client:
        with pytest.raises(A2AError) as caught:
            await client.get_task(GetTaskRequest(id="t1"))
        text = all_text(caught.value) + repr(client) + repr(provider)
    assert type(caught.value) is FAILURE_ERRORS[failure]
    assert agent.requests[-1].headers["Authorization"] == f"Bearer {SECRET}", "it was sent"
    assert SECRET not in text
    logged = "\n".join(r.getMessage() + repr(r.args) for r in caplog.records)
    assert SECRET not in logged
    assert caplog.records, "debug logging was on, so the client logged its requests"
    if failure != "rpc_error":
        assert isinstance(caught.value, ClientError)


async def test_credential_failure_stops_the_request(agent: FakeAgent) -> None:
    agent.reply("GetTask", task_json())
    async with A2AClient(agent.url, settings=LOCAL, credentials=EnvCredentials("A2A_NOPE_X")) as c:
        with pytest.raises(CredentialsError, match="^environment variable A2A_NOPE_X is not set$"):
            await c.get_task(GetTaskRequest(id="t1"))
    assert agent.requests == []
