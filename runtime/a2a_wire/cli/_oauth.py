"""``--client-id`` and its secret: client commands that get their token from the agent's provider.

The secret is read from an environment variable or a file, never from the command line (where
``ps`` and shell histories would show it); the token endpoint comes from the agent card
(:class:`~a2a_wire.client.ClientCredentials`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from a2a_wire.client import ClientCredentials, ClientSettings, CredentialsError, Secret

__all__ = ["OAUTH_OPTIONS", "OAuthOptions"]

_SECRET_LIMIT = 4096
_AUTH = {"basic": "client_secret_basic", "post": "client_secret_post"}


@dataclass(frozen=True)
class OAuthOptions:
    """``--client-id`` with ``--client-secret-env`` or ``--client-secret-file``."""

    client_id: str
    secret_env: str | None = None
    secret_file: Path | None = None
    auth: str = "basic"

    @classmethod
    def given(
        cls, client_id: str | None, env: str | None, file: Path | None, auth: str
    ) -> OAuthOptions | None:
        """The options, or ``None`` without ``--client-id``.

        Raises:
            click.UsageError: a secret option without ``--client-id``, or not exactly one.
        """
        if not client_id:
            if env or file:
                raise click.UsageError("--client-secret-env/--client-secret-file need --client-id")
            return None
        if bool(env) == bool(file):
            raise click.UsageError(
                "--client-id needs one of --client-secret-env, --client-secret-file"
            )
        return cls(client_id, env, file, auth)

    def secret(self) -> Secret:
        """The client secret (its value is never shown).

        Raises:
            CredentialsError: the variable is unset or empty, or the file unreadable or empty.
        """
        if self.secret_env:
            value = os.environ.get(self.secret_env, "")
            if not value:
                raise CredentialsError(f"environment variable {self.secret_env} is not set")
            return Secret(value)
        assert self.secret_file is not None
        try:
            value = self.secret_file.read_text(encoding="utf-8")[:_SECRET_LIMIT].strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise CredentialsError(
                f"cannot read {self.secret_file}: {type(exc).__name__}"
            ) from None
        if not value:
            raise CredentialsError(f"{self.secret_file} is empty")
        return Secret(value)

    def credentials(self, settings: ClientSettings | None) -> ClientCredentials:
        """The provider getting tokens by the client-credentials grant."""
        return ClientCredentials(
            self.client_id, self.secret(), auth_method=_AUTH[self.auth], settings=settings
        )


OAUTH_OPTIONS: list[Any] = [
    click.option(
        "--client-id",
        metavar="ID",
        help="OAuth 2.0 client id: get a token from the token endpoint the agent card names.",
    ),
    click.option(
        "--client-secret-env",
        metavar="NAME",
        help="Read the client secret from this environment variable.",
    ),
    click.option(
        "--client-secret-file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Read the client secret from this file.",
    ),
    click.option(
        "--client-auth",
        type=click.Choice(sorted(_AUTH)),
        default="basic",
        show_default=True,
        help="How the client authenticates at the token endpoint (client_secret_basic or _post).",
    ),
]
