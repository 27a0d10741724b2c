"""The inspector's aiohttp application: the page, its API, the webhook, and the guard.

The guard (loopback only, a per-run token on every URL, its own ``Host`` and ``Origin``, a
locked page) is described in docs/inspector.md, "Safety". The webhook has a secret of its own,
so an agent that stores its URL learns nothing that opens the page.
"""

from __future__ import annotations

import hmac
import importlib.resources
from collections.abc import Awaitable, Callable

from aiohttp import web

from a2a_wire.cli.inspect._api import Api
from a2a_wire.cli.inspect._traffic import TrafficLog

__all__ = ["STATIC_FILES", "Guard", "create_app"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: The page's files (package data) and their media types.
STATIC_FILES = {
    "index.html": "text/html",
    "inspector.css": "text/css",
    "main.js": "text/javascript",
    "api.js": "text/javascript",
    "view.js": "text/javascript",
    "store.js": "text/javascript",
    "card.js": "text/javascript",
    "identity.js": "text/javascript",
    "conversation.js": "text/javascript",
    "traffic.js": "text/javascript",
    "tasks.js": "text/javascript",
    "push.js": "text/javascript",
}
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Security-Policy": _CSP,
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}


def _refuse(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text + "\n", headers=_HEADERS)


class Guard:
    """The checks of docs/inspector.md, "Safety", as middleware.

    Args:
        token: The page's token.
        hook_secret: The webhook's secret.
    """

    def __init__(self, token: str, hook_secret: str) -> None:
        self.token = token
        self.hook_secret = hook_secret
        self.hosts: frozenset[str] = frozenset()
        self.origins: frozenset[str] = frozenset()

    def bind(self, port: int) -> None:
        """Accept the names of ``127.0.0.1:port`` from now on."""
        self.hosts = frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})
        self.origins = frozenset(f"http://{host}" for host in self.hosts)

    def problem(self, request: web.Request) -> str:
        """Why ``request`` is refused, or ``""``."""
        if request.headers.get("Host", "") not in self.hosts:
            return "unknown Host"
        origin = request.headers.get("Origin")
        if origin is not None and origin not in self.origins:
            return "foreign Origin"
        if request.headers.get("Sec-Fetch-Site", "none") not in ("none", "same-origin"):
            return "cross-site request"
        head, _, rest = request.path.lstrip("/").partition("/")
        secret = self.hook_secret if head == "hook" else self.token
        given = rest.partition("/")[0] if head == "hook" else head
        if not hmac.compare_digest(given.encode(), secret.encode()):
            return "missing or wrong token: use the address the inspector printed"
        if (
            request.method == "POST"
            and head != "hook"
            and request.content_type != "application/json"
        ):
            return "send application/json"
        return ""

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Refuse what :meth:`problem` names; add the security headers to the rest."""
        problem = self.problem(request)
        if problem:
            return _refuse(403, problem)
        response = await handler(request)
        for name, value in _HEADERS.items():
            response.headers.setdefault(name, value)
        return response


def _static(name: str) -> bytes:
    return importlib.resources.files("a2a_wire.cli.inspect").joinpath("static", name).read_bytes()


def _page_routes() -> list[web.RouteDef]:
    files = {name: _static(name) for name in STATIC_FILES}

    async def index(request: web.Request) -> web.StreamResponse:
        return web.Response(body=files["index.html"], content_type="text/html", charset="utf-8")

    async def bare(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(f"/{request.match_info['token']}/")

    async def static(request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if name not in files:
            raise web.HTTPNotFound()
        return web.Response(body=files[name], content_type=STATIC_FILES[name], charset="utf-8")

    return [
        web.get("/{token}", bare),
        web.get("/{token}/", index),
        web.get("/{token}/static/{name}", static),
    ]


def create_app(api: Api, traffic: TrafficLog, guard: Guard) -> web.Application:
    """The application; call ``guard.bind(port)`` and set ``api.webhook_url`` once it listens.

    Args:
        api: The page's API.
        traffic: The log webhook deliveries are recorded in.
        guard: The request checks.

    Returns:
        The application (its cleanup stops the streams and closes the client).
    """
    app = web.Application(middlewares=[guard.middleware], client_max_size=16 * 1024 * 1024)
    receiver = api.receiver

    async def webhook(request: web.Request) -> web.StreamResponse:
        body = await request.read()  # kept by aiohttp: the receiver reads the same bytes
        response = await receiver.handler(request)
        traffic.push(request.headers, body, response.status)
        return response

    app.add_routes([*_page_routes(), *api.routes()])
    app.router.add_post("/hook/{secret}", webhook)

    async def close(app: web.Application) -> None:
        await api.close()
        await receiver.close()

    app.on_shutdown.append(close)
    return app
