"""Missing-version cell, our side: a request without ``A2A-Version`` gets -32009 (spec 3.6.2).

An absent header means 0.3, which a 1.0-only server does not serve. The SDK server's answer to
the same requests is checked in ``test_sdk_server.py``.
"""

from __future__ import annotations

from typing import Any

from interop_agents import InteropAgent, interop_card
from interop_table import OURS, InteropTable

from a2a_wire import codec
from a2a_wire.server import create_app

COLUMN = f"{OURS} server"
MESSAGE = {"messageId": "m-no-version", "role": "ROLE_USER", "parts": [{"text": "x"}]}


def body(method: str, params: dict[str, Any]) -> bytes:
    return codec.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})


def version_error(error: dict[str, Any]) -> None:
    assert error["code"] == -32009
    [info] = [d for d in error["data"] if d["@type"].endswith("google.rpc.ErrorInfo")]
    assert info["reason"] == "VERSION_NOT_SUPPORTED"
    assert info["metadata"]["requestedVersion"] == "0.3"


async def test_unary_request_without_version(
    aiohttp_client: Any, interop_table: InteropTable
) -> None:
    client = await aiohttp_client(create_app(interop_card(), InteropAgent()))
    response = await client.post(
        "/", data=body("GetTask", {"id": "t"}), headers={"Content-Type": "application/json"}
    )
    assert (response.status, response.content_type) == (200, "application/json")
    version_error((await response.json())["error"])
    interop_table.record(
        "version",
        "GetTask without the header",
        "-32009 VersionNotSupportedError (ErrorInfo VERSION_NOT_SUPPORTED, requestedVersion 0.3), "
        "HTTP 200 JSON",
        COLUMN,
    )


async def test_streaming_request_without_version(
    aiohttp_client: Any, interop_table: InteropTable
) -> None:
    client = await aiohttp_client(create_app(interop_card(), InteropAgent()))
    response = await client.post(
        "/",
        data=body("SendStreamingMessage", {"message": MESSAGE}),
        headers={"Content-Type": "application/json"},
    )
    assert (response.status, response.content_type) == (200, "application/json")
    version_error((await response.json())["error"])
    interop_table.record(
        "version",
        "SendStreamingMessage without the header",
        "-32009 VersionNotSupportedError (ErrorInfo VERSION_NOT_SUPPORTED, requestedVersion 0.3), "
        "HTTP 200 JSON (an error before a stream's first event is a plain answer)",
        COLUMN,
    )
