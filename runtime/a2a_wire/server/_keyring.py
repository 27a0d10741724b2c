"""From a presented credential to its registered client, with at most one scrypt run.

A :class:`Keyring` looks a value up by its tag (an HMAC under a key made at process start,
never the value itself) among the pinned and the remembered credentials, then by key id, and
only last against each hash without key id; concurrent lookups of one value share one
verification. How and why: docs/internals/server.md, "Credentials and the keyring".
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import os
import secrets
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

from a2a_wire.server._scrypt import ScryptHash, key_id

__all__ = ["KINDS", "Keyring", "Kind", "tag"]

log = logging.getLogger("a2a_wire.server")

Kind = Literal["bearer", "api_key"]
KINDS: tuple[Kind, ...] = ("bearer", "api_key")
_KEY = secrets.token_bytes(32)
_REMEMBERED = 4096
_POOL = ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="a2a-wire-scrypt")

Entry = tuple[str, ScryptHash]
"""A client id and one of its hashes."""


def tag(kind: Kind, value: str) -> bytes:
    """The keyed tag of a presented value (HMAC-SHA256 under the process key)."""
    return hmac.new(_KEY, f"{kind}\0{value}".encode(), hashlib.sha256).digest()


def _check(candidates: list[Entry], value: str) -> str:
    """The id of the candidate whose hash ``value`` matches, or ``""`` (slow: one scrypt each).

    Every candidate is checked, even after a match, so the time does not tell which one it was.
    """
    found = ""
    for client_id, hashed in candidates:
        if hashed.matches(value) and not found:
            found = client_id
    return found


class Keyring:
    """The credentials of the registered clients, indexed for lookup (docs/internals/server.md)."""

    def __init__(self) -> None:
        self._by_kid: dict[tuple[Kind, str], Entry] = {}
        self._legacy: dict[Kind, list[Entry]] = {kind: [] for kind in KINDS}
        self._pins: dict[bytes, str] = {}
        self._known: OrderedDict[bytes, str] = OrderedDict()
        self._pending: dict[bytes, asyncio.Future[str]] = {}

    def add(self, client_id: str, kind: Kind, hashed: ScryptHash, pin: bytes | None) -> None:
        """Register one credential of a client.

        Args:
            client_id: The client.
            kind: Which credential it is.
            hashed: Its scrypt hash.
            pin: Its :func:`tag`, when the server knows the plain value; ``None`` otherwise.

        Raises:
            ValueError: another credential of this kind has the same key id.
        """
        if pin is not None:
            self._pins.setdefault(pin, client_id)  # as the scan does: the first client wins
        if hashed.kid:
            other = self._by_kid.get((kind, hashed.kid))
            if other is not None:
                raise ValueError(
                    f"clients {other[0]!r} and {client_id!r} have {kind} hashes with the same "
                    "key id; make a new credential for one of them"
                )
            self._by_kid[(kind, hashed.kid)] = (client_id, hashed)
        elif pin is None:
            self._legacy[kind].append((client_id, hashed))

    def warn_about_legacy(self) -> None:
        """Log a warning for each kind with two or more hashes without a key id."""
        for kind, entries in self._legacy.items():
            if len(entries) > 1:
                ids = ", ".join(repr(client_id) for client_id, _ in entries)
                what = "bearer token" if kind == "bearer" else "API key"
                log.warning(
                    "clients %s have %s hashes without a key id: a %s the server has not seen "
                    "yet costs up to %d scrypt runs; give them credentials made by "
                    "`a2a-wire hash-secret --generate` (one run each)",
                    ids,
                    what,
                    what,
                    len(entries),
                )

    def _candidates(self, kind: Kind, value: str) -> list[Entry]:
        kid = key_id(value)
        if kid:
            entry = self._by_kid.get((kind, kid))
            return [entry] if entry is not None else []
        return self._legacy[kind]

    def _remembered(self, key: bytes) -> str:
        client_id = self._pins.get(key)
        if client_id is None:
            client_id = self._known.get(key)
            if client_id is not None:
                self._known.move_to_end(key)
        return client_id or ""

    async def find(self, kind: Kind, value: str) -> str:
        """The id of the client ``value`` belongs to, or ``""`` (docs/server.md for the cost).

        Args:
            kind: Which credential was presented.
            value: The presented value.

        Returns:
            The client id, or ``""`` when no registered credential matches.
        """
        key = tag(kind, value)
        found = self._remembered(key)
        if found:
            return found
        pending = self._pending.get(key)
        if pending is None or pending.cancelled():
            candidates = self._candidates(kind, value)
            if not candidates:
                return ""
            pending = asyncio.get_running_loop().create_task(self._verify(key, candidates, value))
            self._pending[key] = pending
            pending.add_done_callback(lambda done: self._forget(key, done))
        # shield: a caller that goes away does not cancel the verification the others wait for
        return await asyncio.shield(pending)

    def _forget(self, key: bytes, done: asyncio.Future[str]) -> None:
        """Drop a finished verification (also one cancelled before it started)."""
        if self._pending.get(key) is done:
            del self._pending[key]

    async def _verify(self, key: bytes, candidates: list[Entry], value: str) -> str:
        loop = asyncio.get_running_loop()
        found = await loop.run_in_executor(_POOL, _check, candidates, value)
        if found:
            self._known[key] = found
            while len(self._known) > _REMEMBERED:
                self._known.popitem(last=False)
        return found
