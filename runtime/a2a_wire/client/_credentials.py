"""Credential providers: the headers a client adds to each request (spec 7.3, 13.4).

A client learns from the card's ``securitySchemes`` which scheme an agent wants and obtains the
credential out of band (spec 7.3); this module only carries it. A provider is asked once per
request and is told which agent (interface URL and card) and which method the request is for, so
it can choose a different credential per agent or refresh one that expired.

Secrets are held in :class:`Secret`, whose ``repr`` and ``str`` are redacted, and no message of
this module contains a credential: errors name the environment variable or the file, never its
content. A value that could not travel in an HTTP header (CR, LF, NUL, non-Latin-1) is refused
before it reaches aiohttp, whose own error would otherwise quote it.
"""

from __future__ import annotations

import asyncio
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import yarl

from a2a_wire.client._errors import CredentialsError
from a2a_wire.types import AgentCard

__all__ = [
    "BEARER",
    "CredentialProvider",
    "CredentialRequest",
    "EnvCredentials",
    "FileCredentials",
    "HeaderScheme",
    "NoCredentials",
    "PerAgentCredentials",
    "Secret",
    "StaticCredentials",
    "api_key_header",
    "read_secret",
]

SECRET_FILE_MAX_BYTES = 64 * 1024
"""A secret file larger than this is refused rather than read (a secret is never cut short)."""


class Secret:
    """A string that does not show itself in ``repr``, ``str`` or formatting."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        """Wrap ``value``."""
        self._value = value

    def reveal(self) -> str:
        """Return the secret text (only for putting it into a request)."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True, slots=True)
class CredentialRequest:
    """What a provider is told about the request it is asked to authenticate.

    Attributes:
        agent_url: The interface URL the request goes to.
        method: The JSON-RPC method name (``"SendMessage"``, ...).
        card: The agent's card, when the client resolved or was given one.
    """

    agent_url: str
    method: str
    card: AgentCard | None = None


class CredentialProvider(Protocol):
    """Anything that turns a request description into headers to add.

    A provider may also have ``async rejected(request, challenge) -> bool``: the client calls it
    when the agent answers HTTP 401, and repeats the call once with fresh headers when it
    returns true (:class:`~a2a_wire.client.ClientCredentials` drops an ``invalid_token``).
    """

    async def headers(self, request: CredentialRequest) -> Mapping[str, str]:
        """Return the headers to add to this request (empty for none).

        Raises:
            CredentialsError: The credential is unavailable.
        """
        ...


@dataclass(frozen=True, slots=True)
class HeaderScheme:
    """How a secret is written into a header: ``{header}: {prefix}{secret}``.

    Attributes:
        header: The header name (``Authorization``, ``X-API-Key``, ...).
        prefix: Text placed before the secret (``"Bearer "`` for bearer tokens).
    """

    header: str
    prefix: str = ""


#: ``Authorization: Bearer <token>`` (HTTP bearer scheme, spec 7.3).
BEARER = HeaderScheme("Authorization", "Bearer ")


def api_key_header(name: str = "X-API-Key") -> HeaderScheme:
    """The scheme for an API key sent as-is in header ``name`` (an ``apiKeySecurityScheme``).

    Args:
        name: The header the card's API key scheme names.

    Returns:
        A scheme writing ``{name}: <key>``.
    """
    return HeaderScheme(name, "")


def _from_env(variable: str) -> str:
    value = os.environ.get(variable)
    if value is None:
        raise CredentialsError(f"environment variable {variable} is not set")
    return value


def _from_file(path: Path) -> str:
    """The file's UTF-8 text without surrounding whitespace (at most 64 KiB)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(SECRET_FILE_MAX_BYTES + 1)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise CredentialsError(f"cannot read credential file {path}: {reason}") from None
    if len(data) > SECRET_FILE_MAX_BYTES:
        raise CredentialsError(f"credential file {path} is larger than {SECRET_FILE_MAX_BYTES}")
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise CredentialsError(f"credential file {path} is not UTF-8") from None


def read_secret(*, env: str = "", file: str | os.PathLike[str] | None = None) -> Secret:
    """Read a secret once, by the rules of :class:`EnvCredentials` and :class:`FileCredentials`.

    A file must be UTF-8 and at most 64 KiB (a larger one is refused, never cut); surrounding
    whitespace is dropped from it. Messages name the variable or the file, never the value.

    Args:
        env: The environment variable holding it.
        file: The file holding it (instead of ``env``).

    Returns:
        The secret.

    Raises:
        ValueError: not exactly one of ``env`` and ``file``.
        CredentialsError: the variable is unset, the file unreadable, too large or not UTF-8,
            or the value is empty.
    """
    if bool(env) == (file is not None):
        raise ValueError("give exactly one of env and file")
    value = _from_env(env) if env else _from_file(Path(file or ""))
    if not value:
        where = f"environment variable {env}" if env else f"file {str(file)!r}"
        raise CredentialsError(f"credential from {where} is empty")
    return Secret(value)


def _header_safe(value: str) -> bool:
    return all(" " <= ch <= "\xff" and ch != "\x7f" or ch == "\t" for ch in value)


class _SecretHeaderProvider(ABC):
    """Base of the providers that put one secret into one header."""

    def __init__(self, scheme: HeaderScheme) -> None:
        self.scheme = scheme

    @abstractmethod
    async def _load(self) -> str:
        """Return the secret text, or raise CredentialsError."""

    @abstractmethod
    def _source(self) -> str:
        """Describe where the secret comes from, without the secret."""

    async def headers(self, request: CredentialRequest) -> Mapping[str, str]:
        """Return ``{scheme.header: scheme.prefix + secret}``.

        Args:
            request: Ignored: the same secret goes to every request.

        Returns:
            One header.

        Raises:
            CredentialsError: The secret is missing, empty or not usable in a header.
        """
        value = await self._load()
        if not value:
            raise CredentialsError(f"credential from {self._source()} is empty")
        if not _header_safe(value):
            raise CredentialsError(
                f"credential from {self._source()} has characters not allowed in an HTTP header"
            )
        return {self.scheme.header: self.scheme.prefix + value}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._source()}, header={self.scheme.header!r})"


class StaticCredentials(_SecretHeaderProvider):
    """A fixed secret, e.g. ``StaticCredentials("tok")`` for ``Authorization: Bearer tok``."""

    def __init__(self, secret: str | Secret, *, scheme: HeaderScheme = BEARER) -> None:
        """Hold ``secret`` (wrapped in :class:`Secret`) and write it with ``scheme``."""
        super().__init__(scheme)
        self._secret = secret if isinstance(secret, Secret) else Secret(secret)

    async def _load(self) -> str:
        return self._secret.reveal()

    def _source(self) -> str:
        return "a static value"


class EnvCredentials(_SecretHeaderProvider):
    """A secret read from an environment variable at every request (so rotation is picked up)."""

    def __init__(self, variable: str, *, scheme: HeaderScheme = BEARER) -> None:
        """Read ``os.environ[variable]`` per request and write it with ``scheme``."""
        super().__init__(scheme)
        self.variable = variable

    async def _load(self) -> str:
        return _from_env(self.variable)

    def _source(self) -> str:
        return f"environment variable {self.variable}"


class FileCredentials(_SecretHeaderProvider):
    """A secret read from a file at every request; surrounding whitespace is dropped.

    Suits mounted secrets (Kubernetes, Docker) that are rotated by replacing the file.
    """

    #: A credential file larger than this is refused rather than read.
    MAX_BYTES = SECRET_FILE_MAX_BYTES

    def __init__(self, path: str | os.PathLike[str], *, scheme: HeaderScheme = BEARER) -> None:
        """Read ``path`` per request and write its stripped content with ``scheme``."""
        super().__init__(scheme)
        self.path = Path(path)

    async def _load(self) -> str:
        return await asyncio.to_thread(_from_file, self.path)

    def _source(self) -> str:
        return f"file {str(self.path)!r}"


class NoCredentials:
    """Adds nothing; the default."""

    async def headers(self, request: CredentialRequest) -> Mapping[str, str]:
        """Return no headers.

        Args:
            request: Ignored.

        Returns:
            An empty mapping.
        """
        return {}

    def __repr__(self) -> str:
        return "NoCredentials()"


def _origin(url: str) -> str | None:
    """``scheme://host[:port]`` of an absolute URL, or ``None``."""
    parsed = yarl.URL(url)
    return str(parsed.origin()) if parsed.is_absolute() else None


def _is_origin(key: str) -> bool:
    return _origin(key) is not None and yarl.URL(key).path in ("", "/")


class PerAgentCredentials:
    """Picks a provider by the agent's origin (``scheme://host[:port]``) or exact URL.

    An exact interface URL wins over its origin; agents matching neither use ``default``.
    """

    def __init__(
        self,
        providers: Mapping[str, CredentialProvider],
        *,
        default: CredentialProvider | None = None,
    ) -> None:
        """Map origins or interface URLs (``"https://agent.example"``) to providers."""
        self._exact = {key.rstrip("/"): p for key, p in providers.items() if not _is_origin(key)}
        self._by_origin = {_origin(key): p for key, p in providers.items() if _is_origin(key)}
        self._default: CredentialProvider = default if default is not None else NoCredentials()

    async def headers(self, request: CredentialRequest) -> Mapping[str, str]:
        """Delegate to the provider registered for ``request.agent_url``.

        Args:
            request: The request to authenticate.

        Returns:
            Whatever the chosen provider returns.

        Raises:
            CredentialsError: The chosen provider failed.
        """
        url = request.agent_url.rstrip("/")
        provider = self._exact.get(url)
        if provider is None:
            provider = self._by_origin.get(_origin(url), self._default)
        return await provider.headers(request)

    def __repr__(self) -> str:
        agents = sorted([*self._exact, *(o for o in self._by_origin if o)])
        return f"PerAgentCredentials(agents={agents!r})"
