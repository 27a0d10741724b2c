"""What the server tells the middleware around it about a request it answered.

The server sets these typed keys and never reads them; the CLI's request log
(:mod:`a2a_wire.cli._logging`) reads them, so that it needs neither the body nor the
credentials again. They complement ``CALLS_KEY`` of :mod:`a2a_wire.server._app` (the calls the
server parsed).
"""

from __future__ import annotations

from aiohttp import web

__all__ = ["CLIENT_ID_KEY", "ERROR_CODES_KEY", "error_codes"]

CLIENT_ID_KEY: web.RequestKey[str] = web.RequestKey("a2a_wire.client_id")
"""On an admitted request: the registered client that sent it (``""`` when anonymous)."""

ERROR_CODES_KEY: web.ResponseKey[tuple[int, ...]] = web.ResponseKey("a2a_wire.error_codes")
"""On a JSON-RPC answer: the error codes it carries, in order (empty when it carries none).

Set on plain answers (one call, a batch, a refusal before any call, a streaming call refused
before its first event) and on streams, whose error event ends them (spec 9.4).
"""


def error_codes(value: object) -> tuple[int, ...]:
    """The ``error.code`` of each JSON-RPC response object in ``value`` (one, or a batch).

    Args:
        value: A response object or a list of them, as built for the wire.

    Returns:
        The codes, in order.
    """
    answers = value if isinstance(value, list) else [value]
    codes = []
    for answer in answers:
        error = answer.get("error") if isinstance(answer, dict) else None
        code = error.get("code") if isinstance(error, dict) else None
        if isinstance(code, int):
            codes.append(code)
    return tuple(codes)
