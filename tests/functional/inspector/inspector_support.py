"""Helpers of the inspector's tests: the ``a2a-wire inspect`` process, its API and live channel
over plain HTTP, a server of hand-made cards, an event loop in a thread for the servers a test
runs itself (the OAuth provider, scripted agents), and the page moves every test makes.

Processes and threads are stopped by the fixture that started them, by their own handle.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import signal
import subprocess
import threading
import urllib.error
import urllib.request
import uuid
from collections import deque
from collections.abc import Callable, Coroutine, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from aiohttp import web
from e2e_support import PYTHON, environment, finish

from a2a_wire._protocol.sse import SSEDecoder, SSEEvent
from a2a_wire.client import WELL_KNOWN_PATH

T = TypeVar("T")
Item = tuple[str, dict[str, Any]]

AGENT_TOKEN = "inspector-test-credential-5f1c"
"""The credential of the test agent's registered client; it must never appear on the page."""
CLIENT_ID = "inspector-client"
CLIENT_SECRET = "client-secret-7d3a91e5"
"""The OAuth 2.0 client of the guarded agent's provider; the secret must never appear either."""
API_KEY = "api-key-c4e2b8f0"
"""The guarded agent's API key."""


WITHOUT_OPENTELEMETRY = (
    "import sys; sys.modules['opentelemetry'] = None; "  # as if the telemetry extra were missing
    "from a2a_wire.cli import main; sys.argv[0] = 'a2a-wire'; main()"
)


class Inspector:
    """``a2a-wire inspect --port 0 ARGS`` with the agent's credential in ``$A2A_WIRE_TOKEN``.

    With ``without_opentelemetry`` it runs as if ``opentelemetry`` were not installed.
    """

    def __init__(
        self, args: list[str], *, token: str = AGENT_TOKEN, without_opentelemetry: bool = False
    ) -> None:
        self.args = args
        self.env = environment(A2A_WIRE_TOKEN=token)
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.python = ["-c", WITHOUT_OPENTELEMETRY] if without_opentelemetry else ["-m", "a2a_wire"]

    def start(self) -> Inspector:
        """Start it and read the address it prints."""
        self.proc = subprocess.Popen(
            [PYTHON, *self.python, "inspect", "--port", "0", *self.args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            stdin=subprocess.DEVNULL,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("inspector on http://127.0.0.1:"):
            code = finish(self.proc, signal.SIGKILL)
            raise AssertionError(f"inspect did not start (exit {code}): {line!r}")
        self.url = line.split()[-1]
        return self

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>``."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def token(self) -> str:
        """The per-run token (the first segment of the path)."""
        return urlsplit(self.url).path.strip("/")

    def stop(self) -> int:
        """SIGTERM, then the exit code."""
        assert self.proc is not None
        return finish(self.proc, signal.SIGTERM)

    def close(self) -> None:
        """Stop it if it still runs."""
        if self.proc is not None and self.proc.poll() is None:
            finish(self.proc, signal.SIGTERM)

    def stop_and_read(self) -> str:
        """SIGTERM, then everything it wrote after its address (stdout and stderr)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=30)
        return out + err


def http(
    url: str, *, method: str = "GET", headers: dict[str, str] | None = None, body: bytes = b""
) -> tuple[int, bytes]:
    """One plain HTTP request (no browser): status and body."""
    request = urllib.request.Request(url, data=body or None, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


class Live:
    """The inspector's live channel, read one SSE event at a time."""

    def __init__(self, inspector: Inspector) -> None:
        self.response = urllib.request.urlopen(inspector.url + "api/live", timeout=60)
        self.decoder = SSEDecoder()
        self.pending: deque[SSEEvent] = deque()

    def next(self) -> Item:
        while not self.pending:
            chunk = self.response.read1(65536)
            assert chunk, "the live channel closed"
            self.pending.extend(self.decoder.feed(chunk))
        event = self.pending.popleft()
        return event.event or "", json.loads(event.data)

    def until(self, wanted: Callable[[str, dict[str, Any]], bool]) -> list[Item]:
        items = []
        while True:
            kind, item = self.next()
            items.append((kind, item))
            if wanted(kind, item):
                return items

    def close(self) -> None:
        self.response.close()


@contextlib.contextmanager
def live_channel(inspector: Inspector) -> Iterator[Live]:
    """The live channel of ``inspector``, read past its ``ready`` event, closed at the end."""
    channel = Live(inspector)
    try:
        channel.until(lambda kind, _: kind == "ready")
        yield channel
    finally:
        channel.close()


def post(inspector: Inspector, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    status, raw = http(
        inspector.url + "api/" + path,
        method="POST",
        headers={"Content-Type": "application/json"},
        body=json.dumps(body).encode(),
    )
    return status, json.loads(raw)


def message(text: str, skill: str = "", **fields: Any) -> dict[str, Any]:
    sent = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    if skill:
        sent["metadata"] = {"skillId": skill}
    return sent | fields


class Background:
    """An event loop in a thread, for the aiohttp servers a synchronous test runs itself."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self._runners: list[web.AppRunner] = []

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` on the loop and return its result."""
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout=60)

    def call(self, function: Callable[[], Any]) -> None:
        """Call ``function`` on the loop (to set an asyncio.Event of a server, say)."""
        self.loop.call_soon_threadsafe(function)

    def serve(self, app: web.Application) -> str:
        """Serve ``app`` on 127.0.0.1 (a free port) until :meth:`close`; its base URL."""

        async def start() -> str:
            runner = web.AppRunner(app, shutdown_timeout=1)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            self._runners.append(runner)
            return f"http://127.0.0.1:{runner.addresses[0][1]}"

        return self.run(start())

    def close(self) -> None:
        """Stop the servers, then the loop and its thread."""

        async def stop() -> None:
            for runner in self._runners:
                await runner.cleanup()

        self.run(stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


class CardServer:
    """Serves ``documents[prefix]`` at ``prefix + /.well-known/agent-card.json`` on 127.0.0.1."""

    def __init__(self) -> None:
        self.documents: dict[str, Any] = {}
        self.keys = Path()
        documents = self.documents

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                prefix = self.path.removesuffix(WELL_KNOWN_PATH)
                if self.path.endswith(WELL_KNOWN_PATH) and prefix in documents:
                    body = json.dumps(documents[prefix]).encode()
                    media = "application/json"
                else:
                    body, media = b"<!doctype html><title>elsewhere</title>", "text/html"
                self.send_response(200)
                self.send_header("Content-Type", media)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self) -> CardServer:
        self.thread.start()
        return self

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


def broken_card() -> dict[str, Any]:
    """A card with one of everything the Card pane must flag."""
    return {
        "name": "broken agent",
        "url": "http://127.0.0.1:9/rpc",  # an A2A 0.3 member
        "supportedInterfaces": [
            {
                "url": "http://127.0.0.1:9/rpc",
                "protocolBinding": "JSONRPC",
                "protocolVersion": "0.3",
            }
        ],
        "version": "1",
        "capabilities": {"streaming": True, "colour": "blue"},
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text/plain"],
        "skills": [
            {"id": "a", "name": "A", "description": "first", "tags": []},
            {"id": "a", "name": "A again", "tags": [], "outputModes": ["image"]},
        ],
        "securityRequirements": [{"schemes": {"oauth": {"list": []}}}],
        "signatures": [{"protected": "not base64 json!", "signature": "x"}],
    }


def signed_cards(base: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    """A card signed with a fresh key, the same card changed after signing, and the key's JWKS."""
    from a2a_wire.card_signing import CardSigner, SigningKey
    from a2a_wire.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
    )

    signer = CardSigner([SigningKey.generate("test-key")])
    card = AgentCard(
        name="signed agent",
        description="a card signed by a key the inspector trusts",
        version="1",
        supported_interfaces=[
            AgentInterface(url=f"{base}/rpc", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="s", name="S", description="d", tags=["t"])],
    )
    good = signer.sign_card(card).to_dict()
    tampered = copy.deepcopy(good)
    tampered["name"] = "signed agent (changed after signing)"
    return good, tampered, json.dumps(signer.jwks())


def open_agent(page: Any, inspector: Inspector, url: str, *, query: str = "") -> None:
    """Load the inspector page and open the agent at ``url``."""
    page.goto(inspector.url + query)
    page.wait_for_selector("body[data-live=live]")  # a selector: the page's CSP forbids eval
    page.fill("#agent-url", url)
    page.click("#connect")
    page.wait_for_selector(
        "body[data-agent=ready], body[data-agent=unusable], body[data-agent=failed]"
    )


def pane(page: Any, name: str) -> None:
    """Show the pane ``name`` (card, conversation, tasks, push)."""
    page.click(f"#tabs button[data-pane={name}]")


def send(page: Any, text: str, *, skill: str = "", mode: str = "streaming") -> None:
    """Send ``text`` from the Conversation pane."""
    pane(page, "conversation")
    page.select_option("#msg-skill", skill)
    page.select_option("#msg-mode", mode)
    page.fill("#msg-text", text)
    page.click("#msg-send")
