"""The inspector's identity over plain HTTP (no browser): the card's OAuth 2.0 client-credentials
scheme run against a real provider on loopback (tests/oauth_provider.py), and its API-key
scheme; the secret, the key and the token never leave the inspector's process; a token endpoint
that is down or stalls is an answer the page can show, within the inspector's --timeout."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from e2e_support import ServerProcess
from inspector_support import (
    API_KEY,
    CLIENT_ID,
    CLIENT_SECRET,
    CardServer,
    Inspector,
    Live,
    http,
    live_channel,
    message,
)
from inspector_support import post as api_post
from oauth_provider import Provider

pytestmark = pytest.mark.timeout(90)


class Seen:
    """Everything the page could learn: each answer of the API and the live channel."""

    def __init__(self, inspector: Inspector) -> None:
        self.inspector = inspector
        self.texts: list[str] = []

    def post(self, path: str, body: Any) -> tuple[int, dict[str, Any]]:
        status, answer = api_post(self.inspector, path, body)
        self.texts.append(json.dumps(answer))
        return status, answer

    def send(self) -> dict[str, Any]:
        params = {"message": message("who am I?")}
        return self.post("call", {"method": "SendMessage", "params": params})[1]

    def shown(self, live: Live) -> str:
        """All of it, the live channel read up to its last traffic record so far."""
        status, state = http(self.inspector.url + "api/state")
        assert status == 200
        self.post("call", {"method": "GetTask", "params": {"id": "marker"}})
        items = live.until(
            lambda kind, item: (
                kind == "traffic" and item["rpc"] == "GetTask" and item["kind"] == "response"
            )
        )
        return "\n".join([*self.texts, state.decode(), *(json.dumps(i) for _, i in items)])


@pytest.fixture
def live(bare: Inspector) -> Iterator[Live]:
    with live_channel(bare) as channel:
        yield channel


def test_the_client_credentials_flow_of_the_card_gets_a_token_the_page_never_sees(
    bare: Inspector, guarded: ServerProcess, provider: Provider, live: Live
) -> None:
    seen = Seen(bare)
    status, view = seen.post("connect", {"url": guarded.url})
    assert status == 200
    schemes = {s["name"]: s for s in view["schemes"]}
    assert schemes["oauth2"] | {"scopes": []} == {
        "name": "oauth2",
        "kind": "oauth2",
        "usable": True,
        "tokenUrl": provider.token_url,
        "scopes": [],
    }
    assert schemes["apiKey"] == {
        "name": "apiKey",
        "kind": "apiKey",
        "usable": True,
        "location": "header",
        "keyName": "X-API-Key",
    }
    assert view["identity"] == {"scheme": "", "kind": "command line", "credential": False}
    assert seen.send()["error"]["name"] == "AuthenticationError"  # no credential yet

    wrong = "wrong-secret-5b1f"
    body = {"scheme": "oauth2", "clientId": CLIENT_ID, "clientSecret": wrong}
    status, answer = seen.post("identity", body | {"authMethod": "client_secret_post"})
    assert status == 200
    identity = answer["identity"]
    assert identity["token"] == "failed" and "HTTP 401" in identity["error"], identity
    hits = provider.token_hits

    body["clientSecret"] = CLIENT_SECRET
    status, answer = seen.post("identity", body)
    assert status == 200
    identity = answer["identity"]
    assert identity["scheme"] == "oauth2" and identity["kind"] == "oauth2"
    assert identity["clientId"] == CLIENT_ID and identity["authMethod"] == "client_secret_basic"
    assert identity["token"] == "obtained" and identity["obtainedAt"] > 0
    assert provider.token_hits == hits + 1
    for _ in range(2):
        assert seen.send()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert provider.token_hits == hits + 1  # the token obtained at the pick, kept and reused

    shown = seen.shown(live)
    tokens = [token["access_token"] for token in provider.issued]
    assert tokens and not [t for t in tokens if t in shown]
    assert CLIENT_SECRET not in shown and wrong not in shown
    assert '"Authorization", "Bearer <hidden>"' in shown
    output = bare.stop_and_read()
    assert CLIENT_SECRET not in output and not [t for t in tokens if t in output]


def test_an_api_key_scheme_of_the_card(bare: Inspector, guarded: ServerProcess, live: Live) -> None:
    seen = Seen(bare)
    seen.post("connect", {"url": guarded.url})
    status, answer = seen.post("identity", {"scheme": "apiKey", "apiKey": API_KEY})
    assert status == 200
    assert answer["identity"] == {
        "scheme": "apiKey",
        "kind": "apiKey",
        "credential": True,
        "token": "set",
        "obtainedAt": answer["identity"]["obtainedAt"],
    }
    assert seen.send()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    shown = seen.shown(live)
    assert API_KEY not in shown and '"X-API-Key", "<hidden>"' in shown
    status, answer = seen.post("identity", {"scheme": ""})  # the command line's again: none
    assert answer["identity"] == {"scheme": "", "kind": "command line", "credential": False}
    assert seen.send()["error"]["name"] == "AuthenticationError"


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ({"scheme": "nope"}, "the card declares no security scheme 'nope'"),
        ({"scheme": "oauth2", "clientId": CLIENT_ID}, "give the client id and the client secret"),
        (
            {"scheme": "oauth2", "clientId": "c", "clientSecret": "s", "authMethod": "none"},
            "authMethod must be one of client_secret_basic, client_secret_post",
        ),
        ({"scheme": "apiKey"}, "give the API key"),
        ({"scheme": "apiKey", "apiKey": 5}, "apiKey must be a string"),
    ],
)
def test_a_pick_that_cannot_be_used_says_why(
    bare: Inspector, guarded: ServerProcess, body: dict[str, Any], text: str
) -> None:
    api_post(bare, "connect", {"url": guarded.url})
    status, answer = api_post(bare, "identity", body)
    assert status == 400 and answer["error"]["name"] == "IdentityError"
    assert text in answer["error"]["message"], answer


def test_a_pick_needs_an_open_agent(bare: Inspector) -> None:
    status, answer = api_post(bare, "identity", {"scheme": "oauth2"})
    assert status == 409 and answer["error"]["name"] == "NotConnectedError"


def oauth_card(base: str, token_url: str) -> dict[str, Any]:
    """A card whose only scheme is an OAuth 2.0 client-credentials flow at ``token_url``."""
    flow = {"clientCredentials": {"tokenUrl": token_url, "scopes": {"a2a": "calls"}}}
    interface = {"url": f"{base}/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    return {
        "name": "provider trouble",
        "description": "its token endpoint is down or stalls",
        "version": "1",
        "supportedInterfaces": [interface],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
        "securitySchemes": {"oauth2": {"oauth2SecurityScheme": {"flows": flow}}},
        "securityRequirements": [{"schemes": {"oauth2": {"list": ["a2a"]}}}],
    }


@pytest.mark.parametrize("trouble", ["down", "stalled"])
def test_a_token_endpoint_down_or_stalled_is_an_answer_within_the_timeout(
    cards: CardServer, trouble: str
) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    if trouble == "down":
        listener.close()  # nothing listens there any more
    else:
        listener.listen(8)  # connections are taken, requests never answered
    cards.documents["/" + trouble] = oauth_card(cards.url, f"http://127.0.0.1:{port}/token")
    inspector = Inspector(["--timeout", "2"], token="").start()
    try:
        status, view = api_post(inspector, "connect", {"url": f"{cards.url}/{trouble}"})
        assert status == 200 and view["schemes"][0]["scopes"] == ["a2a"]
        body = {"scheme": "oauth2", "clientId": CLIENT_ID, "clientSecret": CLIENT_SECRET}
        started = time.monotonic()
        status, answer = api_post(inspector, "identity", body)
        took = time.monotonic() - started
    finally:
        inspector.close()
        listener.close()
    identity = answer["identity"]
    assert status == 200 and identity["token"] == "failed", identity
    assert identity["error"].startswith(f"request to http://127.0.0.1:{port}/token failed")
    assert ("TimeoutError" in identity["error"]) == (trouble == "stalled")
    assert took < 20  # --timeout 2 bounds the token request; a stall would otherwise hang
