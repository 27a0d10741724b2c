"""Address guard against server-side request forgery (SSRF) for outgoing HTTP (spec 13.2, 14.1.1).

The client and push delivery both connect through it. It judges the socket address aiohttp
actually connects to (IP literals in :class:`GuardedConnector`, every resolver answer in
:class:`GuardedResolver`), never a name looked up beforehand, so DNS rebinding has nothing to
exploit. The rules: docs/client.md ("Loopback and ``allow``"); why this way:
docs/internals/protocol.md.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

import aiohttp
import yarl
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.client import ClientTimeout
from aiohttp.client_reqrep import ClientRequest
from aiohttp.connector import Connection
from aiohttp.tracing import Trace

from a2a_wire.errors import A2AError

IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Forbidden ranges, one "network reason" per line; the most specific match names the reason.
#: Cloud metadata: 169.254.169.254 (most clouds), 169.254.170.2 (AWS ECS), 100.100.100.200
#: (Alibaba), fd00:ec2::254 (AWS IPv6).
_TABLE: Final = """
0.0.0.0/8           unspecified
10.0.0.0/8          private (RFC 1918)
100.64.0.0/10       carrier-grade NAT (RFC 6598)
100.100.100.200/32  cloud metadata
127.0.0.0/8         loopback
169.254.0.0/16      link-local
169.254.169.254/32  cloud metadata
169.254.170.2/32    cloud metadata
172.16.0.0/12       private (RFC 1918)
192.0.0.0/24        IETF protocol assignments (RFC 6890)
192.0.2.0/24        documentation (RFC 5737)
192.168.0.0/16      private (RFC 1918)
198.18.0.0/15       benchmarking (RFC 2544)
198.51.100.0/24     documentation (RFC 5737)
203.0.113.0/24      documentation (RFC 5737)
224.0.0.0/4         multicast
240.0.0.0/4         reserved
255.255.255.255/32  broadcast
::/128              unspecified
::1/128             loopback
64:ff9b:1::/48      local-use NAT64 (RFC 8215)
100::/64            discard-only (RFC 6666)
2001::/23           IETF protocol assignments (RFC 2928)
2001:db8::/32       documentation (RFC 3849)
2002::/16           6to4 (deprecated, RFC 7526)
3fff::/20           documentation (RFC 9637)
fc00::/7            unique local (fc00::/7)
fd00:ec2::254/128   cloud metadata
fe80::/10           link-local
fec0::/10           site-local (deprecated)
ff00::/8            multicast
"""
FORBIDDEN_NETWORKS: Final[tuple[tuple[IPNetwork, str], ...]] = tuple(
    sorted(
        (
            (ipaddress.ip_network(net), reason)
            for net, reason in (line.split(maxsplit=1) for line in _TABLE.strip().splitlines())
        ),
        key=lambda row: -row[0].prefixlen,
    )
)
#: IPv6 prefixes whose low 32 bits are an IPv4 address, and whether a public one is acceptable.
EMBEDDING_NETWORKS: Final[tuple[tuple[ipaddress.IPv6Network, str, bool], ...]] = (
    (ipaddress.IPv6Network("::ffff:0:0/96"), "IPv4-mapped", True),
    (ipaddress.IPv6Network("64:ff9b::/96"), "NAT64", True),
    (ipaddress.IPv6Network("::/96"), "IPv4-compatible", False),
)
_GLOBAL_UNICAST_V6: Final = ipaddress.IPv6Network("2000::/3")
_SCHEMES: Final = frozenset({"http", "https"})
_PASSED_SIZE: Final = 256  # (scheme, host) verdicts a GuardedConnector remembers
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOST_NAME: Final = re.compile(rf"(?:{_LABEL}\.)*(?![0-9]+\.?$){_LABEL}\.?", re.IGNORECASE)


class AddressGuardError(A2AError):
    """An outgoing request was refused by the guard before anything was sent. Abstract.

    The branch is drawn with the rest of the tree in :mod:`a2a_wire.errors`.
    """

    _abstract = True


class ForbiddenAddressError(AddressGuardError):
    """The target resolved to (or is) an address the policy forbids."""

    def __init__(self, host: str, address: str, reason: str) -> None:
        super().__init__(f"refused to connect to {host!r} at {address}: {reason}")
        self.host = host
        self.address = address
        self.reason = reason


class ForbiddenURLError(AddressGuardError):
    """The URL itself is unacceptable: scheme, missing or malformed host, or a proxy."""


def forbidden_reason(ip: str | IPAddress) -> str | None:
    """Classify an address against :data:`FORBIDDEN_NETWORKS` and the IPv6 embeddings.

    Args:
        ip: An IPv4 or IPv6 address, or its text form (an IPv6 scope such as ``%eth0`` is allowed).

    Returns:
        A short reason such as ``"loopback"`` if the address must not be connected to, else
        None for a public address.

    Raises:
        ValueError: ``ip`` is a string that is not an IP address.
    """
    addr = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
    for network, reason in FORBIDDEN_NETWORKS:
        if addr in network:
            return reason
    if isinstance(addr, ipaddress.IPv4Address):
        return None
    for prefix, label, public_ok in EMBEDDING_NETWORKS:
        if addr in prefix:
            inner = forbidden_reason(ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF))
            if inner is not None:
                return f"{label} {inner}"
            return None if public_ok else f"{label} (deprecated)"
    if addr not in _GLOBAL_UNICAST_V6:
        return "reserved (outside 2000::/3)"
    return None


def _normalize_host(host: str) -> str:
    host = host.lower().removesuffix(".")
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def _parse_entry(entry: str) -> IPNetwork | str:
    text = _normalize_host(entry.strip())
    looks_numeric = "/" in text or ":" in text or text.replace(".", "").isdigit()
    try:
        return ipaddress.ip_network(text)  # a bare address becomes a /32 or /128
    except ValueError as exc:
        if looks_numeric:
            raise ValueError(f"invalid address or network in allowlist: {entry!r} ({exc})") from exc
    if len(text) > 253 or not _HOST_NAME.fullmatch(text):
        raise ValueError(f"not an IP address, network or host name: {entry!r}")
    return text


@dataclass(frozen=True)
class AddressPolicy:
    """Exceptions to the forbidden ranges; the default instance allows none.

    A host name in ``allow_hosts`` is trusted whatever it resolves to, so prefer networks where the
    addresses are known. Host names are compared case-insensitively, exactly (no subdomains),
    ignoring one trailing dot. An IPv4-mapped address also matches the IPv4 networks.
    """

    allow_hosts: frozenset[str] = frozenset()
    allow_networks: tuple[IPNetwork, ...] = ()

    def __post_init__(self) -> None:
        hosts = frozenset(_normalize_host(host) for host in self.allow_hosts)
        object.__setattr__(self, "allow_hosts", hosts)

    @classmethod
    def from_strings(cls, entries: Iterable[str]) -> AddressPolicy:
        """Build a policy from entries such as ``"10.0.0.0/8"``, ``"::1"`` or ``"hooks.local"``.

        Args:
            entries: CIDR networks, single IP addresses (IPv6 optionally in brackets) and host names.

        Returns:
            A policy allowing exactly those networks and host names.

        Raises:
            ValueError: An entry is none of these; the message quotes it.
        """
        hosts: set[str] = set()
        networks: list[IPNetwork] = []
        for entry in entries:
            parsed = _parse_entry(entry)
            if isinstance(parsed, str):
                hosts.add(parsed)
            else:
                networks.append(parsed)
        return cls(frozenset(hosts), tuple(networks))

    @classmethod
    def allow_all(cls) -> AddressPolicy:
        """Return a policy trusting every address (``0.0.0.0/0``, ``::/0``); schemes still count."""
        return cls(allow_networks=(ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0")))

    def allows(self, host: str, ip: IPAddress) -> bool:
        """Tell whether the host name (as in the URL) or the address is allowlisted."""
        if _normalize_host(host) in self.allow_hosts:
            return True
        mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
        return any(
            ip in net or (mapped is not None and mapped in net) for net in self.allow_networks
        )

    def check(self, host: str, ip: str | IPAddress) -> None:
        """Refuse a connection to ``ip`` (found for ``host``) unless allowed.

        Args:
            host: The host name as in the URL (or an IP literal), named in the error.
            ip: The address that would be connected to.

        Raises:
            ForbiddenAddressError: The address is forbidden and neither host nor address is
                allowlisted, or ``ip`` is not an IP address at all.
        """
        try:
            addr = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
        except ValueError:
            raise ForbiddenAddressError(host, str(ip), "not an IP address") from None
        if self.allows(host, addr):
            return
        reason = forbidden_reason(addr)
        if reason is not None:
            raise ForbiddenAddressError(host, str(addr), reason)


def check_url(url: yarl.URL | str, policy: AddressPolicy) -> None:
    """Check what can be checked without DNS: the scheme and an IP-literal host.

    Host names pass and are judged at connect time by :class:`GuardedResolver`. Use it to vet a
    webhook URL when it is configured; :class:`GuardedConnector` runs it on every request.

    Args:
        url: The absolute URL about to be requested.
        policy: The allowlist to apply.

    Raises:
        ForbiddenURLError: The scheme is not http(s), the host is missing, or it looks like an IP
            literal without being a canonical one (``127.1``, ``2130706433``).
        ForbiddenAddressError: The host is a forbidden IP literal.
    """
    parsed = yarl.URL(url) if isinstance(url, str) else url
    if parsed.scheme not in _SCHEMES:
        raise ForbiddenURLError(f"scheme {parsed.scheme!r} is not allowed (only http, https)")
    host = parsed.raw_host
    if not host:
        raise ForbiddenURLError(f"URL has no host: {str(parsed)!r}")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        # Same heuristic as aiohttp's is_ip_address: such hosts never reach the resolver.
        if ":" in host or host.replace(".", "").isdigit():
            raise ForbiddenURLError(f"host {host!r} is not a canonical IP address") from None
        return
    policy.check(host, ip)


class GuardedResolver(AbstractResolver):
    """Resolver that refuses a lookup if any address it yields is forbidden by the policy."""

    def __init__(self, policy: AddressPolicy, inner: AbstractResolver | None = None) -> None:
        """Wrap ``inner``, by default a new ``aiohttp.ThreadedResolver`` (owned and closed here)."""
        self._policy = policy
        self._owns_inner = inner is None
        self._inner = inner if inner is not None else aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """Resolve with the inner resolver; raise ForbiddenAddressError if any answer is forbidden."""
        results = await self._inner.resolve(host, port, family)
        for result in results:
            self._policy.check(host, result["host"])
        return results

    async def close(self) -> None:
        """Close the inner resolver if this instance created it."""
        if self._owns_inner:
            await self._inner.close()


class GuardedConnector(aiohttp.TCPConnector):
    """``TCPConnector`` that only connects to addresses the policy accepts."""

    def __init__(
        self, policy: AddressPolicy, *, resolver: AbstractResolver | None = None, **kwargs: Any
    ) -> None:
        """Like ``TCPConnector``; ``resolver`` (kept open, caller-owned) is wrapped in the guard."""
        super().__init__(resolver=GuardedResolver(policy, resolver), **kwargs)
        self._policy = policy
        # (scheme, host) pairs check_url accepted: its verdict depends on nothing else, and the
        # policy is fixed, so a pair is judged once. Bounded: cleared when full.
        self._passed: set[tuple[str, str | None]] = set()

    async def connect(
        self, req: ClientRequest, traces: list[Trace], timeout: ClientTimeout
    ) -> Connection:
        """Refuse proxies, run :func:`check_url` (once per redirect hop too), then connect."""
        if req.proxy is not None:
            raise ForbiddenURLError("requests through a proxy cannot be guarded; proxy refused")
        url = req.url
        key = (url.scheme, url.raw_host)
        if key not in self._passed:
            check_url(url, self._policy)
            if len(self._passed) >= _PASSED_SIZE:
                self._passed.clear()
            self._passed.add(key)
        return await super().connect(req, traces, timeout)


def guarded_connector(policy: AddressPolicy, **kwargs: Any) -> aiohttp.TCPConnector:
    """Create a :class:`GuardedConnector` (inside a running loop) for ``ClientSession(connector=)``.

    Args:
        policy: The allowlist to apply.
        **kwargs: Passed to ``aiohttp.TCPConnector``; ``resolver`` becomes the inner resolver.
    """
    return GuardedConnector(policy, **kwargs)
