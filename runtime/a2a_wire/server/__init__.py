"""The A2A server role: an aiohttp application serving the JSON-RPC binding (spec 9).

This package's ``__init__`` is the server's public face; its modules are private. Build an app
with :func:`create_app`, implement an agent as an :class:`AgentExecutor` that reports through a
:class:`TaskUpdater`, and tune it with :class:`ServerSettings`. Stores live in
:mod:`a2a_wire.server.store`, push delivery in :mod:`a2a_wire.server.push`. Middleware around
the app (a request log, a drain) reads what the server noted through the typed aiohttp keys
(``*_KEY``) and never needs a request's body or credentials again.

Specification: https://a2a-protocol.org/v1.0.1/specification/
"""

from a2a_wire._protocol.states import (
    INTERRUPTED_STATES,
    TERMINAL_STATES,
    is_interrupted,
    is_settled,
    is_terminal,
)
from a2a_wire.server._app import CALLS_KEY, RUNTIME_KEY, STORE_KEY, TRACE_KEY, create_app
from a2a_wire.server._auth import (
    API_KEY_SCHEME,
    BEARER_SCHEME,
    DEFAULT_API_KEY_HEADER,
    ClientRegistry,
    RegisteredClient,
    SecurityConfig,
    generate_token,
    hash_secret,
    owner_key,
    verify_secret,
)
from a2a_wire.server._card import Signer
from a2a_wire.server._executor import (
    AgentEvent,
    AgentExecutor,
    EventQueue,
    RequestContext,
    TaskUpdater,
    agent_message,
)
from a2a_wire.server._health import HEALTH_KEY
from a2a_wire.server._oauth import TokenIssuer, TokenSettings
from a2a_wire.server._principal import ANONYMOUS, AuthFailure, Principal
from a2a_wire.server._report import CLIENT_ID_KEY, ERROR_CODES_KEY
from a2a_wire.server._settings import PROBE_PATHS, ServerSettings
from a2a_wire.server._skills import SKILL_ID_KEY, Skill, SkillRouter, SkillSet, media_matches
from a2a_wire.server.push._settings import PushSettings

__all__ = [
    "ANONYMOUS",
    "API_KEY_SCHEME",
    "BEARER_SCHEME",
    "CALLS_KEY",
    "CLIENT_ID_KEY",
    "DEFAULT_API_KEY_HEADER",
    "ERROR_CODES_KEY",
    "HEALTH_KEY",
    "INTERRUPTED_STATES",
    "PROBE_PATHS",
    "RUNTIME_KEY",
    "SKILL_ID_KEY",
    "STORE_KEY",
    "TERMINAL_STATES",
    "TRACE_KEY",
    "AgentEvent",
    "AgentExecutor",
    "AuthFailure",
    "ClientRegistry",
    "EventQueue",
    "Principal",
    "PushSettings",
    "RegisteredClient",
    "RequestContext",
    "SecurityConfig",
    "ServerSettings",
    "Signer",
    "Skill",
    "SkillRouter",
    "SkillSet",
    "TaskUpdater",
    "TokenIssuer",
    "TokenSettings",
    "agent_message",
    "create_app",
    "generate_token",
    "hash_secret",
    "is_interrupted",
    "is_settled",
    "is_terminal",
    "media_matches",
    "owner_key",
    "verify_secret",
]
