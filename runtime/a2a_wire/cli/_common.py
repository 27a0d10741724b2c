"""What every client command shares: options, credentials, the client, errors and exit codes.

The exit codes and the error lines are the README's ("The command line"): keep both in step.
``--timeout`` bounds the whole command: each of the client's own limits is capped by it, and
the command as a whole runs under it. Messages never contain a credential.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import sys
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import click
import yarl

from a2a_wire import __version__, codec, netguard
from a2a_wire.cli._oauth import OAUTH_OPTIONS, OAuthOptions
from a2a_wire.cli._output import clean, state_names_in
from a2a_wire.cli._params import ByteSize
from a2a_wire.client import (
    BEARER,
    A2AClient,
    AddressNotAllowedError,
    ClientError,
    ClientSettings,
    ClientTimeoutError,
    CredentialProvider,
    CredentialsError,
    EnvCredentials,
    FileCredentials,
    HeaderScheme,
    IncompleteStreamError,
    ResponseTooLargeError,
    StaticCredentials,
    TotalTimeoutError,
    TransportError,
    WaitTimeoutError,
    safe_url,
)
from a2a_wire.errors import A2AError, ProtocolError

__all__ = [
    "EXIT_CONFIG",
    "EXIT_CONNECTION",
    "EXIT_NEEDS_AUTH",
    "EXIT_NEEDS_INPUT",
    "EXIT_PROTOCOL",
    "EXIT_TASK_FAILED",
    "EXIT_TASK_UNSETTLED",
    "EXIT_USAGE",
    "ClientOptions",
    "agent_options",
    "client_command",
    "client_options",
    "print_error",
    "remember_task",
]

EXIT_USAGE = 2
EXIT_CONNECTION = 3
EXIT_PROTOCOL = 4
EXIT_TASK_FAILED = 5
EXIT_CONFIG = 6
EXIT_TASK_UNSETTLED = 7
EXIT_NEEDS_INPUT = 8
EXIT_NEEDS_AUTH = 9
EXIT_INTERRUPTED = 130
TOKEN_VARIABLE = "A2A_WIRE_TOKEN"

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True)
class ClientOptions:
    """The options every client command takes (see :func:`client_options`)."""

    json: bool = False
    token: str | None = None
    token_env: str | None = None
    token_file: Path | None = None
    auth_header: str = "Authorization"
    allow_private: bool = False
    allow: tuple[str, ...] = ()
    timeout: float | None = None
    max_response_bytes: int | None = None
    client: OAuthOptions | None = None

    def credentials(self, settings: ClientSettings | None = None) -> CredentialProvider | None:
        """The credential provider the options ask for, if any.

        Args:
            settings: The address guard of the token requests (``--client-id``).

        Raises:
            click.UsageError: More than one credential source was given.
        """
        given = [o for o in (self.token, self.token_env, self.token_file) if o]
        if len(given) > 1:
            raise click.UsageError("give only one of --token, --token-env, --token-file")
        if self.client is not None:
            if given:
                raise click.UsageError("give either --client-id or a --token option")
            return self.client.credentials(settings)
        scheme = (
            BEARER
            if self.auth_header.lower() == "authorization"
            else HeaderScheme(self.auth_header)
        )
        if self.token:
            return StaticCredentials(self.token, scheme=scheme)
        if self.token_env:
            return EnvCredentials(self.token_env, scheme=scheme)
        if self.token_file:
            return FileCredentials(self.token_file, scheme=scheme)
        return None

    def settings(self, url: str) -> ClientSettings:
        """Client settings that trust the host named on the command line.

        The address guard (spec 13.2) protects against addresses an agent's answers point to;
        the host the user typed is exempt, other private hosts need ``--allow`` or
        ``--allow-private``.
        """
        host = yarl.URL(url).host or ""
        allow = (*self.allow, host.strip("[]")) if host else self.allow
        settings = ClientSettings(
            allow=allow,
            allow_private=self.allow_private,
            user_agent=f"a2a-wire-cli/{__version__}",
        )
        if self.max_response_bytes is not None:
            settings = dataclasses.replace(
                settings,
                max_response_bytes=self.max_response_bytes,
                max_event_bytes=self.max_response_bytes,
            )
        if self.timeout is None:
            return settings
        limit = self.timeout
        return dataclasses.replace(
            settings,
            connect_timeout=min(settings.connect_timeout, limit),
            total_timeout=limit,
            card_timeout=min(settings.card_timeout, limit),
            stream_timeout=limit,
        )

    async def connect(self, url: str) -> A2AClient:
        """Read the agent card at ``url`` and open a client on its JSON-RPC interface."""
        _check_url(url)
        settings = self.settings(url)
        return await A2AClient.connect(
            url, settings=settings, credentials=self.credentials(settings)
        )


#: The task the running command is about, once known (for the error that ends it).
_KNOWN_TASK: contextvars.ContextVar[str] = contextvars.ContextVar("a2a_wire_task", default="")


def remember_task(task_id: str) -> None:
    """Note the task the running command is about, so that its error can name it."""
    if task_id:
        _KNOWN_TASK.set(task_id)


async def _bounded(call: Coroutine[Any, Any, int], seconds: float | None) -> int:
    """Run a command under ``--timeout``; its client errors name the task once known."""
    deadline = asyncio.timeout(seconds)
    try:
        async with deadline:
            return await call
    except TimeoutError as exc:
        if not deadline.expired():
            raise
        raise TotalTimeoutError("--timeout", seconds or 0.0, task_id=_KNOWN_TASK.get()) from exc
    except (
        ClientTimeoutError,
        IncompleteStreamError,
        ResponseTooLargeError,
    ) as exc:  # may name a task
        if not exc.task_id:
            exc.task_id = _KNOWN_TASK.get()
        raise


def _check_url(url: str) -> None:
    try:
        parsed = yarl.URL(url)
        _ = parsed.port  # a port out of range or not a number is only found here
    except ValueError as exc:
        raise click.BadParameter(f"{url!r} is not a valid URL: {exc}", param_hint="URL") from None
    if not parsed.is_absolute() or parsed.scheme not in ("http", "https"):
        raise click.BadParameter(f"{url!r} is not an http(s) URL", param_hint="URL")


# The options every client command takes, in --help order.
_CLIENT_OPTIONS = [
    click.option(
        "--json", "json_output", is_flag=True, help="ProtoJSON output, one object per line."
    ),
    click.option(
        "--token", envvar=TOKEN_VARIABLE, help=f"Credential to send (or ${TOKEN_VARIABLE})."
    ),
    click.option(
        "--token-env",
        metavar="NAME",
        help="Read the credential from this environment variable.",
    ),
    click.option(
        "--token-file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Read the credential from this file.",
    ),
    *OAUTH_OPTIONS,
    click.option(
        "--auth-header",
        default="Authorization",
        show_default=True,
        help="Header for the credential; other than Authorization it is sent as-is (API key).",
    ),
    click.option(
        "--allow-private",
        is_flag=True,
        help="Turn the private-address guard off (local agents).",
    ),
    click.option(
        "--allow",
        multiple=True,
        metavar="HOST|CIDR",
        help="Exempt a host or network from the address guard (repeatable).",
    ),
    click.option(
        "--timeout",
        type=click.FloatRange(min=0.1),
        help="Seconds for the whole command: the card fetch, the call, the whole stream "
        "(default: only the client's limits, 300 s for a call).",
    ),
    click.option(
        "--max-response-bytes",
        type=ByteSize(),
        metavar="SIZE",
        help="Largest answer (or stream event) read, in bytes or with KiB/MiB/GiB (default 60MiB).",
    ),
]


def _shared_options(func: Callable[..., Any], options: list[Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapper(
        token: str | None,
        token_env: str | None,
        token_file: Path | None,
        auth_header: str,
        allow_private: bool,
        allow: tuple[str, ...],
        timeout: float | None,
        max_response_bytes: int | None,
        client_id: str | None,
        client_secret_env: str | None,
        client_secret_file: Path | None,
        client_auth: str | None,
        client_key_file: Path | None,
        client_key_id: str | None,
        json_output: bool = False,
        **kwargs: Any,
    ) -> Any:
        client = OAuthOptions.given(
            client_id,
            client_secret_env,
            client_secret_file,
            client_auth,
            client_key_file,
            client_key_id,
        )
        opts = ClientOptions(
            json_output,
            token,
            token_env,
            token_file,
            auth_header,
            allow_private,
            allow,
            timeout,
            max_response_bytes,
            client,
        )
        return func(opts=opts, **kwargs)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


def client_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the shared client options; the command receives them as ``opts``."""
    return _shared_options(func, _CLIENT_OPTIONS)


def agent_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The shared client options but ``--json``, for commands that print no results."""
    return _shared_options(func, _CLIENT_OPTIONS[1:])


def _error_code(exc: BaseException) -> int:
    if isinstance(exc, CredentialsError):
        return EXIT_USAGE
    if isinstance(
        exc, (TransportError, ClientTimeoutError, AddressNotAllowedError, WaitTimeoutError)
    ):
        return EXIT_CONNECTION
    return EXIT_PROTOCOL


def _guard_message(exc: AddressNotAllowedError) -> str:
    """The guard's refusal told in the CLI's terms: ``--allow``, not ``ClientSettings.allow``.

    The client's message ends with advice for Python callers; the CLI gives the reason the guard
    found (the error's cause) and then its own options.
    """
    cause = exc.__cause__
    reason = str(cause) if isinstance(cause, netguard.AddressGuardError) else str(exc)
    return f"{reason}; use --allow HOST (or --allow-private) for an agent on a private address"


def _size_message(exc: ResponseTooLargeError) -> str:
    """The size refusal in the CLI's terms: the option that raises the limit."""
    return (
        f"the answer exceeds {exc.setting}={exc.limit} bytes; raise the limit with "
        "--max-response-bytes (or ask for less history with --history)"
    )


def print_error(exc: A2AError, json_output: bool, url: str = "", task_id: str = "") -> None:
    """Write ``exc`` to stderr: name, JSON-RPC code when it has one, message, and its task.

    Args:
        exc: The error.
        json_output: Write one JSON object instead of lines of text.
        url: The agent's URL, for the hint that follows a task the error names.
        task_id: The task the error left behind when ``exc`` does not name one itself (an
            error event that ended a stream).
    """
    name = type(exc).__name__
    code = exc.code if isinstance(exc, ProtocolError) else None
    message = exc.message if isinstance(exc, ProtocolError) else str(exc)
    if isinstance(exc, AddressNotAllowedError):
        message = _guard_message(exc)
    if isinstance(exc, ResponseTooLargeError):
        message = _size_message(exc)
    named = getattr(exc, "task_id", "")
    task_id = named if isinstance(named, str) and named else task_id
    if json_output:
        error: dict[str, Any] = {"name": name, "message": message}
        if code is not None:
            error["code"] = code
            error["data"] = exc.details() if isinstance(exc, ProtocolError) else []
        if task_id:
            error["taskId"] = task_id
        sys.stderr.write(codec.dumps({"error": error}).decode() + "\n")
        return
    label = f"{name} ({code})" if code is not None else name
    message = state_names_in(clean(message))  # an agent's text: no terminal control characters
    click.echo(f"error: {label}: {message}", err=True)
    if task_id:
        shown = clean(task_id)
        where = safe_url(url) if url else "URL"
        click.echo(f"task {shown} (a2a-wire get {where} {shown} shows it)", err=True)


def client_command(func: Callable[P, Coroutine[Any, Any, int]]) -> Callable[P, None]:
    """Run an async command and turn its result or error into the exit code."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> None:
        opts = kwargs.get("opts")
        options = opts if isinstance(opts, ClientOptions) else ClientOptions()
        url = kwargs.get("url")
        try:
            code: int = asyncio.run(_bounded(func(*args, **kwargs), options.timeout))
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            code = EXIT_INTERRUPTED
        except (ProtocolError, ClientError) as exc:
            print_error(exc, options.json, url if isinstance(url, str) else "")
            code = _error_code(exc) if isinstance(exc, ClientError) else EXIT_PROTOCOL
        sys.stdout.flush()
        raise click.exceptions.Exit(code)

    return wrapper
