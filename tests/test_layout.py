"""The layout rules of runtime/a2a_wire (README "Layout"), pinned.

* ``_protocol`` is sans-IO: none of its modules imports asyncio or aiohttp, checked statically
  (every import statement of its files) and at runtime (each module imported alone in a fresh
  interpreter, then ``sys.modules`` inspected).
* ``server`` never imports ``client`` and ``client`` never imports ``server``; no module outside
  ``cli/`` imports ``a2a_wire.cli``. Checked statically over the source files (relative imports
  resolved) and at runtime (what importing each role loads).
* ``cli/`` imports the server and the client only through their faces (``a2a_wire.server``,
  ``a2a_wire.server.push``, ``a2a_wire.server.store``, ``a2a_wire.client``), checked statically.
* Each public face has a sorted, complete ``__all__`` whose names exist, and its exported names
  are pinned here (compare ``encode/httpx: tests/test_exported_members.py``): changing a face
  means changing this file.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import a2a_wire

PACKAGE = Path(a2a_wire.__file__).resolve().parent
SOURCES = sorted(PACKAGE.rglob("*.py"))


def module_name(path: Path) -> str:
    """The import name of a source file of the package."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module an import statement of ``source`` (the text of ``module``) may load.

    Relative imports are resolved against ``module``; ``from X import n`` yields both ``X`` and
    ``X.n``, since ``n`` may be a submodule. Imports inside functions count too.
    """
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            origin = ".".join([*base, *([node.module] if node.module else [])])
            found.add(origin)
            found.update(f"{origin}.{alias.name}" for alias in node.names)
    return found


def imports_of(path: Path) -> set[str]:
    return imported(path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py")


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def sources_in(package: str) -> list[Path]:
    found = [p for p in SOURCES if within(module_name(p), package)]
    assert found, f"no source files for {package}"
    return found


@pytest.mark.parametrize(
    ("source", "module", "is_package", "expected"),
    [
        ("import asyncio.events", "a2a_wire.x", False, {"asyncio.events"}),
        ("from aiohttp import web", "a2a_wire.x", False, {"aiohttp", "aiohttp.web"}),
        ("from . import _hub", "a2a_wire.server._app", False, {"a2a_wire.server", "a2a_wire.server._hub"}),
        ("from .. import client", "a2a_wire.server._app", False, {"a2a_wire", "a2a_wire.client"}),
        ("from ._base import X", "a2a_wire.server.store", True, {"a2a_wire.server.store._base", "a2a_wire.server.store._base.X"}),
        ("def f():\n    from ...cli import main\n", "a2a_wire.server.push._x", False, {"a2a_wire.cli", "a2a_wire.cli.main"}),
    ],
)  # fmt: skip
def test_imported_resolves_relative_and_nested_imports(
    source: str, module: str, is_package: bool, expected: set[str]
) -> None:
    assert imported(source, module, is_package) == expected


# -- _protocol is sans-IO ---------------------------------------------------------------------

PROTOCOL_MODULES = [module_name(p) for p in sources_in("a2a_wire._protocol")]
IO = ("asyncio", "aiohttp")


def test_the_protocol_modules_are_found() -> None:
    assert {"a2a_wire._protocol.jsonrpc", "a2a_wire._protocol.sse"} <= set(PROTOCOL_MODULES)


@pytest.mark.parametrize("path", sources_in("a2a_wire._protocol"), ids=lambda p: p.name)
def test_protocol_source_imports_no_io(path: Path) -> None:
    assert not {name for name in imports_of(path) if any(within(name, io) for io in IO)}


def loaded(module: str) -> set[str]:
    """The modules a fresh interpreter has loaded after importing ``module`` alone."""
    code = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


@pytest.mark.parametrize("module", PROTOCOL_MODULES)
def test_protocol_module_loads_no_io(module: str) -> None:
    modules = loaded(module)
    assert module in modules
    assert not {name for name in modules if any(within(name, io) for io in IO)}


# -- one-way imports between the roles --------------------------------------------------------


@pytest.mark.parametrize(
    ("importer", "forbidden"),
    [("a2a_wire.server", "a2a_wire.client"), ("a2a_wire.client", "a2a_wire.server")],
)
def test_roles_do_not_import_each_other(importer: str, forbidden: str) -> None:
    offending = {
        module_name(path): sorted(n for n in imports_of(path) if within(n, forbidden))
        for path in sources_in(importer)
    }
    assert {module: names for module, names in offending.items() if names} == {}


def test_the_library_never_imports_the_cli() -> None:
    # __main__ is ``python -m a2a_wire``: the command line's entry point, not library code.
    library = [p for p in SOURCES if not within(module_name(p), "a2a_wire.cli")]
    offending = {
        module_name(path): sorted(n for n in imports_of(path) if within(n, "a2a_wire.cli"))
        for path in library
        if path != PACKAGE / "__main__.py"
    }
    assert {module: names for module, names in offending.items() if names} == {}


def private_part(name: str, role: str) -> str | None:
    """``name`` cut after its first private part inside ``role``, or ``None`` if it has none."""
    if not within(name, role):
        return None
    parts = name.split(".")
    depth = len(role.split("."))
    for i in range(depth, len(parts)):
        if parts[i].startswith("_"):
            return ".".join(parts[: i + 1])
    return None


@pytest.mark.parametrize(
    ("name", "role", "expected"),
    [
        ("a2a_wire.server", "a2a_wire.server", None),
        ("a2a_wire.server.create_app", "a2a_wire.server", None),
        ("a2a_wire.server._app.create_app", "a2a_wire.server", "a2a_wire.server._app"),
        ("a2a_wire.server.push._settings.X", "a2a_wire.server", "a2a_wire.server.push._settings"),
        ("a2a_wire.client._errors", "a2a_wire.client", "a2a_wire.client._errors"),
        ("a2a_wire.client._errors", "a2a_wire.server", None),
        ("a2a_wire._protocol.wire", "a2a_wire.server", None),
    ],
)
def test_private_part(name: str, role: str, expected: str | None) -> None:
    assert private_part(name, role) == expected


def test_the_cli_uses_only_the_faces_of_the_roles() -> None:
    found: dict[str, set[str]] = {}
    for path in sources_in("a2a_wire.cli"):
        for name in imports_of(path):
            for role in ("a2a_wire.server", "a2a_wire.client"):
                private = private_part(name, role)
                if private is not None:
                    found.setdefault(module_name(path), set()).add(private)
    assert found == {}


SHARED = {
    "a2a_wire",
    "a2a_wire._generated",
    "a2a_wire._generated._support",
    "a2a_wire._generated.methods",
    "a2a_wire._generated.types",
    "a2a_wire._generated._values",
    "a2a_wire._protocol",
    "a2a_wire._protocol.ids",
    "a2a_wire._protocol.jsonrpc",
    "a2a_wire._protocol.rpc_error",
    "a2a_wire._protocol.sse",
    "a2a_wire._protocol.states",
    "a2a_wire._protocol.wire",
    "a2a_wire.codec",
    "a2a_wire.errors",
    "a2a_wire.methods",
    "a2a_wire.types",
    # The address guard is shared on purpose: the client and push delivery refuse the same ranges.
    "a2a_wire.netguard",
    # Telemetry's names, switch and span helpers serve both roles (each role's glue is its own).
    "a2a_wire.telemetry",
    "a2a_wire.telemetry._logs",
    "a2a_wire.telemetry._names",
    "a2a_wire.telemetry._switch",
    "a2a_wire.telemetry._tracing",
}


def ours(modules: set[str]) -> set[str]:
    return {name for name in modules if within(name, "a2a_wire")}


@pytest.fixture(scope="module")
def client_modules() -> set[str]:
    return ours(loaded("a2a_wire.client"))


@pytest.fixture(scope="module")
def server_modules() -> set[str]:
    return ours(loaded("a2a_wire.server"))


def test_roles_share_only_the_protocol_core(
    client_modules: set[str], server_modules: set[str]
) -> None:
    assert client_modules & server_modules <= SHARED


def test_client_does_not_load_server_modules(client_modules: set[str]) -> None:
    assert not {m for m in client_modules if within(m, "a2a_wire.server")}
    assert "a2a_wire._protocol.tasks" not in client_modules


def test_server_does_not_load_client_modules(server_modules: set[str]) -> None:
    assert not {m for m in server_modules if within(m, "a2a_wire.client")}


def test_neither_role_loads_the_cli(client_modules: set[str], server_modules: set[str]) -> None:
    assert not {m for m in client_modules | server_modules if within(m, "a2a_wire.cli")}


@pytest.mark.parametrize(
    ("module", "commands"),
    [
        ("a2a_wire.cli", ()),
        ("a2a_wire.cli._client_cmds", ("send", "get", "subscribe")),
        ("a2a_wire.cli._push_cmds", ("push", "webhook")),
    ],
)
def test_a_client_command_loads_no_server(module: str, commands: tuple[str, ...]) -> None:
    # The command line imports a command's module when that command runs (cli/_lazy_group.py).
    from a2a_wire.cli import COMMANDS

    assert all(COMMANDS[name].startswith(f"{module}:") for name in commands)
    modules = ours(loaded(module))
    assert not {m for m in modules if within(m, "a2a_wire.server")}
    assert "a2a_wire.cli.config" not in modules


def test_package_import_loads_neither_role() -> None:
    assert ours(loaded("a2a_wire")) == {"a2a_wire"}


# -- the task store's packages ----------------------------------------------------------------

STORE = PACKAGE / "server" / "store"


def test_the_store_is_packages_by_responsibility() -> None:
    packages = sorted(p.parent.name for p in STORE.glob("*/__init__.py"))
    assert packages == ["_contract", "_fold", "memory", "postgresql", "sqlite"]
    assert sorted(p.name for p in STORE.glob("*.py")) == ["__init__.py"]


def test_no_flat_backend_modules_remain_in_the_store() -> None:
    flat = [p for p in STORE.rglob("*.py") if p.name.startswith(("_log_", "_sqlite_", "_push_"))]
    assert flat == []


def test_the_store_imports_nothing_else_of_the_server() -> None:
    offending = {
        module_name(path): sorted(
            name
            for name in imports_of(path)
            if within(name, "a2a_wire.server")
            and not within(name, "a2a_wire.server.store")
            and name != "a2a_wire.server"
        )
        for path in sources_in("a2a_wire.server.store")
    }
    assert {module: names for module, names in offending.items() if names} == {}


def test_the_contract_imports_no_backend() -> None:
    backends = (
        "a2a_wire.server.store.memory",
        "a2a_wire.server.store.sqlite",
        "a2a_wire.server.store.postgresql",
    )
    offending = {
        module_name(path): sorted(
            n for n in imports_of(path) if any(within(n, b) for b in backends)
        )
        for path in [
            *sources_in("a2a_wire.server.store._contract"),
            *sources_in("a2a_wire.server.store._fold"),
        ]
    }
    assert {module: names for module, names in offending.items() if names} == {}


def test_importing_the_store_does_not_load_asyncpg() -> None:
    modules = loaded("a2a_wire.server.store")
    assert "a2a_wire.server.store.postgresql._store" in modules  # the check is not vacuous
    assert not {name for name in modules if within(name, "asyncpg")}


# -- the public faces -------------------------------------------------------------------------

EXPORTED = {
    "a2a_wire.server": [
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
    ],
    "a2a_wire.server.store": [
        "ACQUIRE_TIMEOUT",
        "BUSY_TIMEOUT_SECONDS",
        "CONNECT_TIMEOUT",
        "DEFAULT_HISTORY_LIMIT",
        "DEFAULT_MAX_TASKS",
        "DEFAULT_PAGE_SIZE",
        "DEFAULT_SCHEMA",
        "HEARTBEAT_SECONDS",
        "LEASE_SECONDS",
        "MAX_PAGE_SIZE",
        "MAX_PAGE_TOKEN_LENGTH",
        "MIGRATION_LOCK_TIMEOUT",
        "PAGE_TOKEN_KEY_BYTES",
        "POLL_INTERVAL",
        "POOL_SIZE",
        "PROCESS_LOST_MESSAGE",
        "PURGE_BATCH",
        "RECOVERED_STATES",
        "RESTART_MESSAGE",
        "STATEMENT_TIMEOUT",
        "Appended",
        "CancelReply",
        "CancelRequest",
        "Delivery",
        "EventKind",
        "EventLogStore",
        "EventRange",
        "InMemoryPushStore",
        "InMemoryTaskStore",
        "LaneKey",
        "LogEvent",
        "LogInput",
        "PageTokens",
        "PostgresTaskStore",
        "PushClaims",
        "PushStore",
        "SQLiteTaskStore",
        "SharedTaskStore",
        "Snapshot",
        "StoreUnavailableError",
        "TaskPage",
        "TaskQuery",
        "check_schema_name",
        "describe",
        "migrate",
        "page_scope",
        "page_size",
        "shared_store",
        "trim_history",
    ],
    "a2a_wire.server.push": [
        "PUSH_DELIVERER_KEY",
        "PushDeliverer",
        "PushSettings",
        "retry_after_seconds",
    ],
    "a2a_wire.client": [
        "BEARER",
        "DUPLICATE_WINDOW",
        "INTERRUPTED_STATES",
        "TERMINAL_STATES",
        "WELL_KNOWN_PATH",
        "A2AClient",
        "AddressNotAllowedError",
        "AuthenticationError",
        "CachedCard",
        "CardApiKey",
        "CardCache",
        "CardResolver",
        "ClientCredentials",
        "ClientError",
        "ClientSettings",
        "ClientTimeoutError",
        "ConnectError",
        "ConnectTimeoutError",
        "CredentialProvider",
        "CredentialRequest",
        "CredentialsError",
        "EnvCredentials",
        "EventCallback",
        "EventStream",
        "ExchangeObserver",
        "ExchangeWatch",
        "FileCredentials",
        "HTTPStatusError",
        "HeaderScheme",
        "IncompleteStreamError",
        "InterfaceOffer",
        "InvalidAgentCardError",
        "NoCompatibleInterfaceError",
        "NoCredentials",
        "PerAgentCredentials",
        "PushReceiver",
        "ReadTimeoutError",
        "RedirectRefusedError",
        "ResponseTooLargeError",
        "Resubscription",
        "ResumableStream",
        "Secret",
        "SignatureCheck",
        "StaticCredentials",
        "StreamIdleTimeoutError",
        "TotalTimeoutError",
        "TransportError",
        "TruncatedResponseError",
        "UnexpectedContentTypeError",
        "UnexpectedResponseError",
        "WaitTimeoutError",
        "api_key_header",
        "card_url",
        "create_receiver_app",
        "interface_url",
        "is_interrupted",
        "is_settled",
        "is_terminal",
        "read_secret",
        "register_webhook",
        "remove_webhook",
        "safe_url",
        "select_interface",
        "task_id_of",
    ],
    "a2a_wire.cli.config": [
        "DEFAULT_HOST",
        "DEFAULT_PORT",
        "AgentEntry",
        "CardSection",
        "Config",
        "ConfigError",
        "ConfigIssue",
        "PostgresSection",
        "SecuritySection",
        "ServerSection",
        "SkillEntry",
        "default_data_dir",
        "load",
    ],
}


def isort_key(name: str) -> tuple[int, str]:
    """ruff's isort-style order of ``__all__``: CONSTANTS, then Classes, then the rest."""
    if name.isupper():
        return 0, name
    return (1 if name[:1].isupper() else 2), name


def public_names(module: ModuleType) -> Iterator[str]:
    """The names a face binds for its users: all but private ones, submodules and __future__."""
    for name, value in vars(module).items():
        if not name.startswith("_") and name != "annotations" and not isinstance(value, ModuleType):
            yield name


@pytest.mark.parametrize(
    ("names", "ordered"),
    [
        (["B", "A_B", "Ab", "a", "A2AClient", "HTTPError", "HeaderScheme"],
         ["A_B", "B", "A2AClient", "Ab", "HTTPError", "HeaderScheme", "a"]),
        (["load", "Config", "DEFAULT_PORT"], ["DEFAULT_PORT", "Config", "load"]),
    ],
)  # fmt: skip
def test_isort_key(names: list[str], ordered: list[str]) -> None:
    assert sorted(names, key=isort_key) == ordered


@pytest.mark.parametrize("face", list(EXPORTED))
def test_face_all_is_sorted_complete_and_exists(face: str) -> None:
    module = importlib.import_module(face)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=isort_key)
    assert len(set(exported)) == len(exported)
    assert [name for name in exported if not hasattr(module, name)] == []
    assert sorted(set(public_names(module)) - set(exported)) == []


@pytest.mark.parametrize("face", list(EXPORTED))
def test_face_exports_exactly_the_pinned_names(face: str) -> None:
    assert list(importlib.import_module(face).__all__) == EXPORTED[face]


# Size: functions stay short (STYLE.md section 3). A function may run past the limit only with a
# comment, on one of its first lines, that starts "# long:" and says why. Modules have no line
# limit: a module holds one concept whole (STYLE.md section 1; issue 24 withdrew the cap).
MAX_FUNCTION_LINES = 60
HAND_WRITTEN = SOURCES + sorted((Path(__file__).parents[1] / "codegen").rglob("*.py"))


def _label(path: Path) -> str:
    return path.relative_to(Path(__file__).parents[1]).as_posix()


def _long_functions(path: Path) -> Iterator[str]:
    lines = path.read_text().splitlines()
    for node in ast.walk(ast.parse("\n".join(lines))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if node.end_lineno is None or node.end_lineno - node.lineno + 1 <= MAX_FUNCTION_LINES:
            continue
        head = lines[node.lineno - 1 : node.body[0].lineno + 3]
        if not any(line.strip().startswith("# long:") for line in head):
            yield f"{_label(path)}:{node.lineno} {node.name}"


def test_no_function_runs_past_the_limit_without_saying_why() -> None:
    assert [name for path in HAND_WRITTEN for name in _long_functions(path)] == []
