"""``--client-id`` and its credential: client commands that get their token from the agent's provider.

The client proves itself at the token endpoint with a secret (``client_secret_basic`` or
``_post``), read from an environment variable or a file, never from the command line (where
``ps`` and shell histories would show it), or with a private key file (``private_key_jwt``).
The token endpoint comes from the agent card (:class:`~a2a_wire.client.ClientCredentials`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from a2a_wire.cli._install import install_command
from a2a_wire.client import ClientCredentials, ClientSettings, CredentialsError, read_secret

if TYPE_CHECKING:
    from a2a_wire.card_signing import SigningKey

__all__ = ["OAUTH_OPTIONS", "OAuthOptions"]

_AUTH = {"basic": "client_secret_basic", "post": "client_secret_post"}
_SECRETS = "--client-secret-env, --client-secret-file"


@dataclass(frozen=True)
class OAuthOptions:
    """``--client-id`` with a secret (``--client-secret-env``/``-file``) or ``--client-key-file``."""

    client_id: str
    secret_env: str | None = None
    secret_file: Path | None = None
    auth: str = "basic"
    key_file: Path | None = None
    key_id: str | None = None

    @classmethod
    def given(
        cls,
        client_id: str | None,
        env: str | None,
        file: Path | None,
        auth: str | None,
        key_file: Path | None = None,
        key_id: str | None = None,
    ) -> OAuthOptions | None:
        """The options, or ``None`` without ``--client-id``.

        Raises:
            click.UsageError: a credential option without ``--client-id``, not exactly one
                credential, ``--client-key-id`` without a key, or ``--client-auth`` with a key.
        """
        flags = (("--client-secret-env", env), ("--client-secret-file", file))
        given = [name for name, value in (*flags, ("--client-key-file", key_file)) if value]
        if not client_id:
            if given or key_id or auth:
                used = given[0] if given else "--client-key-id" if key_id else "--client-auth"
                raise click.UsageError(f"{used} needs --client-id")
            return None
        if len(given) != 1:
            told = "give only one of" if given else "--client-id needs one of"
            raise click.UsageError(f"{told} {_SECRETS}, --client-key-file")
        if key_file is None and key_id:
            raise click.UsageError("--client-key-id goes with --client-key-file")
        if key_file is not None and auth:
            raise click.UsageError("--client-auth is for a secret; a key file is private_key_jwt")
        return cls(client_id, env, file, auth or "basic", key_file, key_id)

    def signing_key(self) -> SigningKey:
        """The private key of ``--client-key-file`` (PEM or JWK), under its key id.

        The key id is ``--client-key-id``, else the JWK's own ``kid``, else the key's RFC 7638
        thumbprint.

        Raises:
            click.UsageError: the ``oauth`` extra (jwcrypto) is not installed.
            CredentialsError: the file is unreadable or holds no private key.
        """
        try:
            from a2a_wire.card_signing import SigningKey
        except ImportError:
            extra = install_command("oauth")
            raise click.UsageError(f"--client-key-file needs the oauth extra: {extra}") from None
        assert self.key_file is not None
        text = read_secret(file=self.key_file).reveal()
        try:
            key = SigningKey.load(text, self.key_id or "-")
        except ValueError:
            raise CredentialsError(f"{self.key_file} holds no usable private key") from None
        kid = self.key_id or key.key.get("kid") or key.key.thumbprint()
        return dataclasses.replace(key, kid=kid)

    def credentials(self, settings: ClientSettings | None) -> ClientCredentials:
        """The provider getting tokens by the client-credentials grant.

        Raises:
            CredentialsError: the secret or key cannot be read.
        """
        if self.key_file is not None:
            return ClientCredentials(
                self.client_id, private_key=self.signing_key(), settings=settings
            )
        secret = read_secret(env=self.secret_env or "", file=self.secret_file)
        return ClientCredentials(
            self.client_id, secret, auth_method=_AUTH[self.auth], settings=settings
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
        help="How the client sends its secret to the token endpoint: client_secret_basic "
        "(default) or client_secret_post.",
    ),
    click.option(
        "--client-key-file",
        type=click.Path(dir_okay=False, path_type=Path),
        metavar="PEM",
        help="Private key (PEM or JWK) the client signs its token requests with "
        "(private_key_jwt), instead of a secret.",
    ),
    click.option(
        "--client-key-id",
        metavar="KID",
        help="Key id of --client-key-file as the provider knows it "
        "(default: the JWK's kid, else its RFC 7638 thumbprint).",
    ),
]
