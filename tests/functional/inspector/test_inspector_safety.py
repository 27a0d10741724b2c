"""The inspector's safety model over plain HTTP (no browser needed): loopback only, the per-run
token on every request, its own Host and Origin only, JSON-only POSTs, no-store pages under a
strict Content-Security-Policy, and a webhook with a secret of its own."""

from __future__ import annotations

import json
import socket

import pytest
from e2e_support import cli
from inspector_support import Inspector, http

pytestmark = pytest.mark.timeout(60)


def test_it_listens_on_loopback_only_and_prints_a_tokened_address(inspector: Inspector) -> None:
    assert inspector.url.startswith("http://127.0.0.1:")
    assert len(inspector.token) >= 32
    status, body = http(inspector.url)
    assert status == 200 and b'<script type="module" src="static/main.js">' in body
    port = int(inspector.origin.rsplit(":", 1)[1])
    addresses = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)}
    for address in addresses - {"127.0.0.1", "::1"}:
        with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as sock:
            sock.settimeout(5)
            assert sock.connect_ex((address, port)) != 0, address


def test_a_request_without_the_token_is_refused(inspector: Inspector) -> None:
    token = inspector.token
    wrong = ("y" if token[0] == "x" else "x") + token[1:]  # one character off (1 in 64 began x)
    for path in ("/", "/api/state", "/static/main.js", "/" + wrong + "/"):
        status, body = http(inspector.origin + path)
        assert status == 403, path
        assert b"missing or wrong token" in body
    status, _ = http(inspector.url + "api/state")
    assert status == 200
    status, _ = http(inspector.origin + "/" + inspector.token)  # no slash: sent to the page
    assert status == 200


def test_a_foreign_host_origin_or_site_is_refused(inspector: Inspector) -> None:
    state = inspector.url + "api/state"
    port = inspector.origin.rsplit(":", 1)[1]
    assert http(state, headers={"Host": f"evil.example:{port}"}) == (403, b"unknown Host\n")
    assert http(state, headers={"Host": f"localhost:{port}"})[0] == 200
    foreign = {"Origin": "http://evil.example"}
    assert http(state, headers=foreign) == (403, b"foreign Origin\n")
    other_port = {"Origin": "http://127.0.0.1:1"}
    assert http(state, headers=other_port)[0] == 403
    assert http(state, headers={"Origin": inspector.origin})[0] == 200
    site = {"Sec-Fetch-Site": "same-site"}
    assert http(state, headers=site) == (403, b"cross-site request\n")
    assert http(state, headers={"Sec-Fetch-Site": "same-origin"})[0] == 200


def test_a_post_must_be_json(inspector: Inspector) -> None:
    connect = inspector.url + "api/connect"
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, body = http(connect, method="POST", headers=form, body=b"url=http://x")
    assert (status, body) == (403, b"send application/json\n")
    status, body = http(
        connect, method="POST", headers={"Content-Type": "application/json"}, body=b"[1]"
    )
    assert status == 400 and json.loads(body)["error"]["message"] == "send a JSON object"
    status, body = http(
        inspector.url + "api/call",
        method="POST",
        headers={"Content-Type": "application/json"},
        body=b'{"method": "GetTask", "params": {"id": "x"}}',
    )
    assert status == 409 and json.loads(body)["error"]["name"] == "NotConnectedError"


def test_a_secret_is_taken_only_from_the_page_itself(inspector: Inspector) -> None:
    """``api/identity`` receives a client secret or an API key: the guard stands before it."""
    identity = inspector.url + "api/identity"
    body = json.dumps({"scheme": "oauth2", "clientId": "c", "clientSecret": "s"}).encode()
    json_type = {"Content-Type": "application/json"}
    refused = [
        (identity, {**json_type, "Origin": "http://evil.example"}, b"foreign Origin\n"),
        (identity, {**json_type, "Sec-Fetch-Site": "cross-site"}, b"cross-site request\n"),
        (identity, {"Content-Type": "text/plain"}, b"send application/json\n"),
        (inspector.origin + "/api/identity", json_type, None),
    ]
    for url, headers, why in refused:
        status, answer = http(url, method="POST", headers=headers, body=body)
        assert status == 403 and (why is None or answer == why), (headers, answer)
    status, answer = http(identity, method="POST", headers=json_type, body=body)
    assert status == 409  # the page itself gets through (and no agent is open)


def test_pages_are_locked_to_their_own_origin(inspector: Inspector) -> None:
    import urllib.request

    with urllib.request.urlopen(inspector.url, timeout=30) as response:
        headers = response.headers
    policy = headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert "connect-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert headers["Referrer-Policy"] == "no-referrer"
    assert headers["Cache-Control"] == "no-store"


def test_the_webhook_needs_its_own_secret(inspector: Inspector) -> None:
    event = b'{"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}'
    json_type = {"Content-Type": "application/json"}
    status, _ = http(inspector.origin + "/hook/guess", method="POST", headers=json_type, body=event)
    assert status == 403
    status, _ = http(
        inspector.origin + f"/hook/{inspector.token}", method="POST", headers=json_type, body=event
    )
    assert status == 403  # the page's token opens the page, not the webhook


def test_it_stops_cleanly_on_sigterm(inspector: Inspector) -> None:
    assert inspector.stop() == 0


def test_usage_errors() -> None:
    bad = cli("inspect", "ftp://agent")
    assert bad.returncode == 2 and "is not an http(s) URL" in bad.stderr
    both = cli("inspect", "--token", "a", "--token-env", "B")
    assert both.returncode == 2 and "give only one of" in both.stderr
