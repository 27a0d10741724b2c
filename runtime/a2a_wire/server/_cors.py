"""Cross-origin requests from browser applications (CORS, WHATWG Fetch), off unless configured.

With ``ServerSettings.cors_origins`` listed, answers to a listed ``Origin`` (refusals too) carry
the CORS headers and ``OPTIONS`` on the JSON-RPC and card paths is a preflight; the rules are in
docs/server.md, "CORS". Credentials are never allowed: callers authenticate with a header, not
cookies.
"""

from __future__ import annotations

from collections.abc import Iterable

from aiohttp import hdrs, web

from a2a_wire._protocol.wire import (
    ANY_ORIGIN,
    EXTENSIONS_HEADER,
    VERSION_HEADER,
    WELL_KNOWN_PATH,
    normalize_origin,
)
from a2a_wire.server._errors import OriginNotAllowedError

__all__ = ["Cors"]

MAX_AGE_SECONDS = 600
_METHODS = "GET, POST, OPTIONS"
_REQUEST_HEADERS = (VERSION_HEADER, EXTENSIONS_HEADER, "Authorization", "Content-Type")
_EXPOSED = ", ".join((EXTENSIONS_HEADER, "WWW-Authenticate", "Retry-After", "ETag"))


class Cors:
    """The CORS rules of one application (docs/server.md, "CORS").

    Args:
        origins: ``ServerSettings.cors_origins``, each already valid.
        api_key_header: The API key header callers may send.
    """

    def __init__(self, origins: Iterable[str], api_key_header: str) -> None:
        allowed = frozenset(normalize_origin(origin) for origin in origins)
        self.any = ANY_ORIGIN in allowed
        self.origins = allowed - {ANY_ORIGIN}
        headers = [*_REQUEST_HEADERS, "Last-Event-ID", api_key_header]
        self.request_headers = ", ".join(dict.fromkeys(h for h in headers if h))

    def install(self, app: web.Application, rpc_path: str) -> None:
        """Add the header hook and the preflight routes (card path and ``rpc_path``) to ``app``."""
        app.on_response_prepare.append(self.add_headers)
        for path in dict.fromkeys((WELL_KNOWN_PATH, rpc_path)):
            app.router.add_route(hdrs.METH_OPTIONS, path, self.preflight)

    def allowed(self, request: web.Request) -> str | None:
        """The ``Access-Control-Allow-Origin`` value for ``request``; ``None`` when refused."""
        origin = request.headers.get(hdrs.ORIGIN)
        if origin is None:
            return None
        if self.any:
            return ANY_ORIGIN
        return origin if origin.lower() in self.origins else None

    async def add_headers(self, request: web.Request, response: web.StreamResponse) -> None:
        """``on_response_prepare`` hook: the CORS headers of an allowed origin's response."""
        allow = self.allowed(request)
        if allow is None or hdrs.ACCESS_CONTROL_ALLOW_ORIGIN in response.headers:
            return
        response.headers[hdrs.ACCESS_CONTROL_ALLOW_ORIGIN] = allow
        response.headers[hdrs.ACCESS_CONTROL_EXPOSE_HEADERS] = _EXPOSED
        if allow != ANY_ORIGIN:
            response.headers.add(hdrs.VARY, hdrs.ORIGIN)

    async def preflight(self, request: web.Request) -> web.StreamResponse:
        """Answer ``OPTIONS``: 204 for an allowed origin's preflight, else raise.

        Raises:
            OriginNotAllowedError: no ``Origin``, or one that is not listed.
        """
        if self.allowed(request) is None:
            raise OriginNotAllowedError(request.headers.get(hdrs.ORIGIN, "")[:100])
        response = web.Response(status=204)
        response.headers[hdrs.ACCESS_CONTROL_ALLOW_METHODS] = _METHODS
        response.headers[hdrs.ACCESS_CONTROL_ALLOW_HEADERS] = self.request_headers
        response.headers[hdrs.ACCESS_CONTROL_MAX_AGE] = str(MAX_AGE_SECONDS)
        return response
