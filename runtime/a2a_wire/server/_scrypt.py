"""Salted scrypt hashes of API keys and bearer tokens (standard library :func:`hashlib.scrypt`).

A hash is the PHC string ``$scrypt$ln=<log2 N>,r=<r>,p=<p>[,kid=<key id>]$<salt>$<digest>``
(standard base64 without padding, a 16-byte random salt, a 32-byte digest), checked with
:func:`hmac.compare_digest`. A credential made by :func:`generate_token` is
``a2w_<key id>_<secret>`` (12 hexadecimal digits, not secret; 32 random bytes, URL-safe
base64); its hash records the key id (``kid=``), so the server verifies the one hash with that
id (:mod:`a2a_wire.server._keyring`). The whole value, key id included, is what scrypt hashes;
values of any other form hash without a key id. Docs: docs/internals/server.md ("Credentials
and the keyring").
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

__all__ = ["TOKEN_PREFIX", "ScryptHash", "generate_token", "hash_secret", "key_id", "verify_secret"]

_PHC = re.compile(
    r"\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})(?:,kid=([0-9a-f]{12}))?"
    r"\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)\Z"
)
TOKEN_PREFIX = "a2w_"
"""How a credential with a key id begins (module docstring)."""
_TOKEN = re.compile(r"a2w_([0-9a-f]{12})_.+\Z")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


def _in_range(log2_n: int, r: int, p: int) -> bool:
    return 1 <= log2_n <= 20 and 1 <= r <= 32 and 1 <= p <= 16


def _scrypt(secret: str, salt: bytes, log2_n: int, r: int, p: int, size: int) -> bytes:
    n = 1 << log2_n
    maxmem = 128 * r * n * p + 128 * r * (n + p + 2) + (1 << 20)
    return hashlib.scrypt(
        secret.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=size, maxmem=maxmem
    )


def key_id(secret: str) -> str:
    """The key id of a credential of the form ``a2w_<key id>_<secret>``, else ``""``."""
    match = _TOKEN.match(secret)
    return match[1] if match else ""


def generate_token() -> str:
    """A new random credential with a key id, ``a2w_<12 hex digits>_<43 characters>``.

    Give it to the client, and its :func:`hash_secret` to the server: with a key id, the server
    verifies a credential it has not seen before with one scrypt run, however many clients are
    registered (:mod:`a2a_wire.server._keyring`).

    Returns:
        The credential (a bearer token or an API key); only URL-safe characters.
    """
    return f"{TOKEN_PREFIX}{secrets.token_hex(6)}_{secrets.token_urlsafe(32)}"


def hash_secret(secret: str, *, log2_n: int = 14, r: int = 8, p: int = 1) -> str:
    """Hash an API key or bearer token for a :class:`a2a_wire.server._auth.RegisteredClient`.

    Args:
        secret: The credential; it should be long and random (e.g. ``secrets.token_urlsafe()``).
        log2_n: scrypt cost exponent (``N = 2**log2_n``); 14 costs about 16 MiB and a few tens
            of milliseconds. Lower values are for tests only.
        r: scrypt block size.
        p: scrypt parallelism.

    Returns:
        The PHC string ``$scrypt$ln=..,r=..,p=..$<salt>$<hash>`` (base64, no padding), with
        ``,kid=<key id>`` after the parameters when ``secret`` has a key id (:func:`key_id`).

    Raises:
        ValueError: empty secret or parameters out of range.
    """
    if not secret:
        raise ValueError("cannot hash an empty secret")
    if not _in_range(log2_n, r, p):
        raise ValueError("scrypt parameters out of range")
    salt = secrets.token_bytes(16)
    digest = _scrypt(secret, salt, log2_n, r, p, 32)
    kid = key_id(secret)
    params = f"ln={log2_n},r={r},p={p}" + (f",kid={kid}" if kid else "")
    return f"$scrypt${params}${_b64(salt)}${_b64(digest)}"


@dataclass(frozen=True, slots=True)
class ScryptHash:
    """A parsed hash string (see the module docstring); ``kid`` is ``""`` without a key id."""

    log2_n: int
    r: int
    p: int
    salt: bytes
    digest: bytes
    kid: str = ""

    @classmethod
    def parse(cls, text: str) -> ScryptHash:
        """Read a string made by :func:`hash_secret`.

        Raises:
            ValueError: the string is not such a hash.
        """
        match = _PHC.match(text)
        if match is None:
            raise ValueError("not a $scrypt$ hash made by hash_secret")
        log2_n, r, p = int(match[1]), int(match[2]), int(match[3])
        try:
            salt, digest = _unb64(match[5]), _unb64(match[6])
        except (binascii.Error, ValueError):
            raise ValueError("the salt or digest of the hash is not base64") from None
        if not _in_range(log2_n, r, p) or len(digest) < 16:
            raise ValueError("scrypt parameters out of range")
        return cls(log2_n, r, p, salt, digest, match[4] or "")

    def matches(self, secret: str) -> bool:
        """Whether ``secret`` hashes to this digest (constant-time comparison)."""
        computed = _scrypt(secret, self.salt, self.log2_n, self.r, self.p, len(self.digest))
        return hmac.compare_digest(computed, self.digest)


def verify_secret(secret: str, hashed: str) -> bool:
    """Whether ``secret`` is the credential ``hashed`` was made from (constant-time compare).

    Args:
        secret: The presented value.
        hashed: A string from :func:`hash_secret`.

    Returns:
        ``True`` on a match.

    Raises:
        ValueError: ``hashed`` is not a hash made by :func:`hash_secret`.
    """
    return ScryptHash.parse(hashed).matches(secret)
