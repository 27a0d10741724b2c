"""The ``[[agents]]``, ``[[clients]]``, ``[security]`` and ``[[skills]]`` configuration parts.

Secrets never sit in the configuration file. A registered client's credential is given as a
salted scrypt hash (``token_hash`` / ``api_key_hash``, made with ``a2a-wire hash-secret``), or
read at start from an environment variable or a file (``token_env``, ``token_file``,
``api_key_env``, ``api_key_file``), hashed then and known to the registry without scrypt
(:meth:`~a2a_wire.server.RegisteredClient.from_secrets`). A remote agent's credential is read
from an environment variable or a file at each request. Card signing keys are read from PEM or JWK files.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yarl

from a2a_wire import __version__
from a2a_wire.cli._install import install_command
from a2a_wire.cli.config._oauth import read_issuers, read_tokens
from a2a_wire.cli.config._schema import Table, allow_list
from a2a_wire.client import (
    BEARER,
    CredentialProvider,
    CredentialsError,
    EnvCredentials,
    FileCredentials,
    HeaderScheme,
    read_secret,
)
from a2a_wire.server import DEFAULT_API_KEY_HEADER, RegisteredClient, TokenIssuer, TokenSettings

if TYPE_CHECKING:
    from a2a_wire.cli._skills import RemoteAgent
    from a2a_wire.server import Signer

__all__ = [
    "BUILTIN_SKILLS",
    "AgentEntry",
    "SecuritySection",
    "SkillSpec",
    "read_agents",
    "read_clients",
    "read_security",
    "read_skill",
]

BUILTIN_SKILLS: dict[str, dict[str, Any]] = {
    "echo": {
        "name": "Echo",
        "description": "Answers with the text it received as an artifact, streamed in chunks.",
        "tags": ("demo",),
        "examples": ("hello",),
    },
    "delegate": {
        "name": "Delegate",
        "description": "Hands the message to a registered remote agent and relays its answer.",
        "tags": ("relay",),
        "examples": (),
    },
}
_REF = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*\Z")
_KINDS = ("token", "api_key")
_HOWS = ("hash", "env", "file")


def _one_of(table: Table, keys: tuple[str, ...]) -> dict[str, str]:
    """The keys of ``keys`` that are set; a problem if more than one is."""
    found = {key: table.text(key) for key in keys}
    given = [key for key, value in found.items() if value]
    if len(given) > 1:
        table.problem((given[1],), f"give only one of {', '.join(keys)}")
    return {key: value for key, value in found.items() if value}


@dataclass(frozen=True)
class AgentEntry:
    """``[[agents]]``: a remote agent the ``delegate`` skill may use."""

    name: str
    url: str
    token_env: str = ""
    token_file: Path | None = None
    header: str = "Authorization"
    scheme: str = "Bearer"
    allow: tuple[str, ...] = ()
    allow_private: bool = False
    timeout_seconds: float = 300.0

    def credentials(self) -> CredentialProvider | None:
        """The credential provider, or ``None`` when the agent needs none."""
        scheme = (
            BEARER
            if (self.header, self.scheme) == ("Authorization", "Bearer")
            else HeaderScheme(self.header, f"{self.scheme} " if self.scheme else "")
        )
        if self.token_env:
            return EnvCredentials(self.token_env, scheme=scheme)
        if self.token_file is not None:
            return FileCredentials(self.token_file, scheme=scheme)
        return None

    def remote_agent(self) -> RemoteAgent:
        """The :class:`~a2a_wire.cli._skills.RemoteAgent` for the delegate skill."""
        from a2a_wire.cli._skills import RemoteAgent
        from a2a_wire.client import ClientSettings, NoCredentials

        settings = ClientSettings(
            allow=self.allow,
            allow_private=self.allow_private,
            total_timeout=self.timeout_seconds,
            user_agent=f"a2a-wire/{__version__} (delegate)",
        )
        return RemoteAgent(self.name, self.url, self.credentials() or NoCredentials(), settings)


def read_agents(
    tables: list[Table], base: Path, allow: tuple[str, ...], allow_private: bool
) -> dict[str, AgentEntry]:
    """Read ``[[agents]]``; ``[network]`` allowlist entries apply to every agent."""
    agents: dict[str, AgentEntry] = {}
    for table in tables:
        source = _one_of(table, ("token_env", "token_file"))
        entry = AgentEntry(
            name=table.text("name"),
            url=table.text("url"),
            token_env=source.get("token_env", ""),
            token_file=(base / source["token_file"]) if "token_file" in source else None,
            header=table.text("header", "Authorization"),
            scheme=table.text("scheme", "Bearer"),
            allow=(*allow, *allow_list(table, "allow")),
            allow_private=table.flag("allow_private", allow_private),
            timeout_seconds=table.number("timeout_seconds", 300.0),
        )
        table.done()
        parsed = yarl.URL(entry.url)
        if not entry.name:
            table.problem(("name",), "is required")
        elif entry.name in agents:
            table.problem(("name",), f"agent {entry.name!r} is defined twice")
        else:
            agents[entry.name] = entry
        if not parsed.is_absolute() or parsed.scheme not in ("http", "https"):
            table.problem(("url",), "must be an absolute http(s) URL")
    return agents


def _secret(table: Table, base: Path, kind: str) -> tuple[str, str]:
    """``(hash, plain)``: a client's ``<kind>_hash``, or the value of ``<kind>_env`` / ``_file``."""
    source = _one_of(table, (f"{kind}_hash", f"{kind}_env", f"{kind}_file"))
    if f"{kind}_hash" in source:
        return source[f"{kind}_hash"], ""
    key = f"{kind}_env" if f"{kind}_env" in source else f"{kind}_file"
    if key not in source:
        return "", ""
    try:
        if key.endswith("_env"):
            return "", read_secret(env=source[key]).reveal()
        return "", read_secret(file=base / Path(source[key]).expanduser()).reveal()
    except CredentialsError as exc:
        table.problem((key,), str(exc))
    return "", ""


def _unique_key_ids(
    table: Table, client: RegisteredClient, seen: dict[tuple[str, str], str]
) -> None:
    """Record a problem when a credential's key id is another client's (their hashes clash)."""
    for kind, kid in client.key_ids.items():
        other = seen.setdefault((kind, kid), client.id)
        if other != client.id:
            table.problem((), f"has the same {kind} key id as client {other!r}; make a new one")


def read_clients(tables: list[Table], base: Path, skill_ids: set[str]) -> list[RegisteredClient]:
    """Read ``[[clients]]`` into registered clients (see the module docstring for secrets)."""
    clients: list[RegisteredClient] = []
    ids: set[str] = set()
    key_ids: dict[tuple[str, str], str] = {}
    for table in tables:
        client_id = table.text("id")
        token_hash, token = _secret(table, base, "token")
        api_key_hash, api_key = _secret(table, base, "api_key")
        skills = table.strings("skills", ("*",))
        table.done()
        given = any(table.data.get(f"{kind}_{how}") for kind in _KINDS for how in _HOWS)
        if not given:
            table.problem(
                (), f"needs one of {', '.join(f'{k}_{h}' for k in _KINDS for h in _HOWS)}"
            )
            continue
        if client_id in ids:
            table.problem(("id",), f"client {client_id!r} is defined twice")
        ids.add(client_id)
        for skill in skills:
            if skill != "*" and skill not in skill_ids:
                table.problem(("skills",), f"no skill has id {skill!r}")
        if not (token_hash or token or api_key_hash or api_key):
            continue  # the credential's problem is recorded already
        try:
            client = RegisteredClient.from_secrets(
                client_id,
                token=token,
                api_key=api_key,
                token_hash=token_hash,
                api_key_hash=api_key_hash,
                skills=skills,
            )
        except ValueError as exc:
            table.problem((), str(exc))
            continue
        _unique_key_ids(table, client, key_ids)
        clients.append(client)
    return clients


@dataclass(frozen=True)
class SecuritySection:
    """``[security]``: extended card, API key header, realm, signing, JWT issuers and limits."""

    extended_card: bool = False
    api_key_header: str = DEFAULT_API_KEY_HEADER
    realm: str = "a2a"
    signer: Signer | None = field(default=None, compare=False)
    oauth2: tuple[TokenIssuer, ...] = ()
    tokens: TokenSettings = field(default_factory=TokenSettings)


def _signer(tables: list[Table], base: Path) -> Signer | None:
    """The card signer of ``[[security.signing_keys]]`` (needs the ``signing`` extra)."""
    if not tables:
        return None
    try:
        from a2a_wire.card_signing import CardSigner, SigningKey
    except ImportError:
        tables[0].problem((), f"card signing needs the signing extra: {install_command('signing')}")
        return None
    keys = []
    for table in tables:
        path = table.path_value("key_file", base)
        kid = table.text("kid")
        alg, jku = table.text("alg"), table.text("jku")
        table.done()
        if path is None or not kid:
            table.problem((), "needs key_file and kid")
            continue
        try:
            keys.append(SigningKey.load(path.read_bytes(), kid, alg=alg, jku=jku))
        except OSError as exc:
            table.problem(("key_file",), f"cannot read {path}: {exc.strerror}")
        except ValueError as exc:
            table.problem(("key_file",), str(exc))
    return CardSigner(keys) if keys else None


def read_security(
    table: Table,
    base: Path,
    has_clients: bool,
    allow: tuple[str, ...] = (),
    skill_ids: Collection[str] = (),
) -> SecuritySection:
    """Read ``[security]``; ``allow`` is the ``[network]`` allowlist, ``skill_ids`` the skills."""
    section = SecuritySection(
        extended_card=table.flag("extended_card", False),
        api_key_header=table.text("api_key_header", DEFAULT_API_KEY_HEADER),
        realm=table.text("realm", "a2a"),
        signer=_signer(table.tables("signing_keys"), base),
        oauth2=read_issuers(table.tables("oauth2"), skill_ids),
        tokens=read_tokens(table.table("tokens"), allow),
    )
    table.done()
    if section.extended_card and not has_clients and not section.oauth2:
        table.problem(("extended_card",), "needs registered [[clients]] or [[security.oauth2]]")
    return section


@dataclass
class SkillSpec:
    """A ``[[skills]]`` table, read but not yet built."""

    id: str
    name: str
    description: str
    tags: tuple[str, ...]
    examples: tuple[str, ...]
    input_modes: tuple[str, ...]
    output_modes: tuple[str, ...]
    executor_ref: str
    default: bool
    public: bool
    options: dict[str, Any]

    def card_fields(self) -> Mapping[str, Any]:
        """Everything but the options, as keyword arguments."""
        return {k: v for k, v in vars(self).items() if k != "options"}


def read_skill(table: Table) -> SkillSpec | None:
    """Read one ``[[skills]]`` table; ``None`` when it cannot be built."""
    ref = table.text("executor")
    builtin = BUILTIN_SKILLS.get(ref, {})
    spec = SkillSpec(
        id=table.text("id", ref if builtin else ""),
        name=table.text("name", builtin.get("name", "")),
        description=table.text("description", builtin.get("description", "")),
        tags=table.strings("tags", builtin.get("tags", ())),
        examples=table.strings("examples", builtin.get("examples", ())),
        input_modes=table.media_types("input_modes"),
        output_modes=table.media_types("output_modes"),
        executor_ref=ref,
        default=table.flag("default", False),
        public=table.flag("public", True),
        options=table.raw("options"),
    )
    table.done()
    ok = True
    if not ref:
        table.problem(("executor",), "is required: 'echo', 'delegate' or 'module:attribute'")
        ok = False
    elif not builtin and not _REF.match(ref):
        table.problem(("executor",), f"{ref!r} is neither a built-in skill nor module:attribute")
        ok = False
    if not spec.id:
        table.problem(("id",), "is required for a skill of your own")
        ok = False
    spec.name = spec.name or spec.id
    return spec if ok else None
