"""Tests for the SSRF guard; the only traffic goes to a test server on 127.0.0.1."""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.test_utils import TestServer
from hypothesis import given
from hypothesis import strategies as st

from a2a_wire.netguard import (
    FORBIDDEN_NETWORKS,
    AddressGuardError,
    AddressPolicy,
    ForbiddenAddressError,
    ForbiddenURLError,
    GuardedConnector,
    GuardedResolver,
    check_url,
    forbidden_reason,
    guarded_connector,
)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
ServerFactory = Callable[..., Awaitable[TestServer]]

FORBIDDEN = [
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("::1", "loopback"),
    ("10.1.2.3", "private (RFC 1918)"),
    ("172.16.0.1", "private (RFC 1918)"),
    ("172.31.255.255", "private (RFC 1918)"),
    ("192.168.1.1", "private (RFC 1918)"),
    ("100.64.0.1", "carrier-grade NAT (RFC 6598)"),
    ("100.127.255.255", "carrier-grade NAT (RFC 6598)"),
    ("169.254.1.1", "link-local"),
    ("169.254.169.254", "cloud metadata"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("fc00::1", "unique local (fc00::/7)"),
    ("fd12:3456::1", "unique local (fc00::/7)"),
    ("fd00:ec2::254", "cloud metadata"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("ff02::1", "multicast"),
    ("ff0e::1", "multicast"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "unspecified"),
    ("::", "unspecified"),
    ("255.255.255.255", "broadcast"),
    ("240.0.0.1", "reserved"),
    ("192.0.2.1", "documentation (RFC 5737)"),
    ("2001:db8::1", "documentation (RFC 3849)"),
    ("198.18.0.1", "benchmarking (RFC 2544)"),
    ("::ffff:127.0.0.1", "IPv4-mapped loopback"),
    ("::ffff:10.0.0.1", "IPv4-mapped private (RFC 1918)"),
    ("::ffff:169.254.169.254", "IPv4-mapped cloud metadata"),
    ("::ffff:0.0.0.0", "IPv4-mapped unspecified"),
    ("::127.0.0.1", "IPv4-compatible loopback"),
    ("::8.8.8.8", "IPv4-compatible (deprecated)"),
    ("64:ff9b::192.168.0.1", "NAT64 private (RFC 1918)"),
    ("64:ff9b:1::1", "local-use NAT64 (RFC 8215)"),
    ("2002:7f00:1::", "6to4 (deprecated, RFC 7526)"),
    ("2001::1", "IETF protocol assignments (RFC 2928)"),
    ("fec0::1", "site-local (deprecated)"),
    ("100::1", "discard-only (RFC 6666)"),
    ("4000::1", "reserved (outside 2000::/3)"),
]
PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "100.63.255.255",
    "100.128.0.0",
    "172.32.0.1",
    "169.253.255.255",
    "2001:4860:4860::8888",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::8.8.8.8",
]


@pytest.mark.parametrize(("address", "reason"), FORBIDDEN)
def test_forbidden_ranges(address: str, reason: str) -> None:
    assert forbidden_reason(address) == reason
    assert forbidden_reason(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses(address: str) -> None:
    assert forbidden_reason(address) is None
    AddressPolicy().check("example.com", address)


def test_forbidden_reason_rejects_non_addresses() -> None:
    with pytest.raises(
        ValueError, match="'localhost' does not appear to be an IPv4 or IPv6 address"
    ):
        forbidden_reason("localhost")


def _stdlib_forbids(addr: IPAddress) -> bool:
    """What ipaddress considers non-public, after unwrapping IPv4-mapped and NAT64 forms."""
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            addr = addr.ipv4_mapped
        elif addr in ipaddress.IPv6Network("64:ff9b::/96"):
            addr = ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    flags = (addr.is_private, addr.is_reserved, addr.is_multicast, addr.is_link_local)
    return not addr.is_global or any(flags) or addr.is_loopback or addr.is_unspecified


_INTERESTING = [net for net, _ in FORBIDDEN_NETWORKS] + [
    ipaddress.ip_network(net)
    for net in ("0.0.0.0/0", "::/0", "2000::/3", "::ffff:0:0/96", "64:ff9b::/96", "::/96")
]
_addresses = st.one_of(
    st.ip_addresses(),
    st.sampled_from(_INTERESTING).flatmap(lambda net: st.ip_addresses(network=net)),
)


@given(_addresses)
def test_everything_stdlib_calls_non_public_is_forbidden(addr: IPAddress) -> None:
    if _stdlib_forbids(addr):
        assert forbidden_reason(addr) is not None


_V4_NETWORKS = [net for net in _INTERESTING if net.version == 4]


@given(
    st.ip_addresses(v=4)
    | st.sampled_from(_V4_NETWORKS).flatmap(lambda net: st.ip_addresses(network=net))
)
def test_ipv4_embeddings_follow_the_embedded_address(addr: ipaddress.IPv4Address) -> None:
    verdict = forbidden_reason(addr)
    for prefix in ("::ffff:0:0", "64:ff9b::"):
        wrapped = ipaddress.IPv6Address(int(ipaddress.IPv6Address(prefix)) | int(addr))
        assert (forbidden_reason(wrapped) is None) == (verdict is None)


def test_from_strings_sorts_entries() -> None:
    policy = AddressPolicy.from_strings(
        ["10.0.0.0/8", " 192.0.2.7 ", "[::1]", "fd00::/8", "Hooks.Example.", "localhost", "_svc.a"]
    )
    assert policy.allow_hosts == {"hooks.example", "localhost", "_svc.a"}
    assert policy.allow_networks == tuple(
        map(ipaddress.ip_network, ["10.0.0.0/8", "192.0.2.7/32", "::1/128", "fd00::/8"])
    )


@pytest.mark.parametrize(
    "entry",
    ["", "  ", "10.0.0.1/8", "300.1.1.1", "127.1", "2130706433", "http://x.example", "a b", "a/b"]
    + ["x..y", "-bad.example", "::1/129", "fe80::1%eth0/64", "bücher.example", "a" * 64 + ".x"],
)
def test_from_strings_rejects_garbage(entry: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(entry))):
        AddressPolicy.from_strings(["8.8.8.8", entry])


def test_default_policy_refuses_with_a_descriptive_error() -> None:
    with pytest.raises(ForbiddenAddressError) as info:
        AddressPolicy().check("metadata.internal", "169.254.169.254")
    err = info.value
    assert (err.host, err.address, err.reason) == (
        "metadata.internal",
        "169.254.169.254",
        "cloud metadata",
    )
    assert "metadata.internal" in str(err) and "169.254.169.254" in str(err)
    assert "cloud metadata" in str(err)
    assert isinstance(err, AddressGuardError)


def test_allowlist_by_host_name() -> None:
    policy = AddressPolicy(allow_hosts=frozenset({"Hooks.Internal"}))
    policy.check("HOOKS.internal.", "10.0.0.5")
    with pytest.raises(ForbiddenAddressError, match=r"at 10\.0\.0\.5: private \(RFC 1918\)$"):
        policy.check("evil.hooks.internal", "10.0.0.5")


def test_allowlist_by_network() -> None:
    policy = AddressPolicy.from_strings(["10.1.0.0/16", "fd00::/8"])
    policy.check("a.example", "10.1.2.3")
    policy.check("a.example", "::ffff:10.1.2.3")
    policy.check("a.example", "fd00::5")
    for address in ("10.2.0.1", "fc00::5", "127.0.0.1"):
        with pytest.raises(ForbiddenAddressError, match=f"at {re.escape(address)}: "):
            policy.check("a.example", address)


def test_allow_all_still_refuses_non_addresses() -> None:
    AddressPolicy.allow_all().check("x", "127.0.0.1")
    AddressPolicy.allow_all().check("x", "::1")
    with pytest.raises(ForbiddenAddressError, match="not an IP address"):
        AddressPolicy.allow_all().check("x", "localhost")


@pytest.mark.parametrize(
    ("url", "error", "message"),
    [
        ("ftp://example.com/", ForbiddenURLError, r"^scheme 'ftp' is not allowed \(only http, https\)$"),
        ("file:///etc/passwd", ForbiddenURLError, "^scheme 'file' is not allowed"),
        ("unix:///run/x.sock", ForbiddenURLError, "^scheme 'unix' is not allowed"),
        ("http:///path", ForbiddenURLError, "^URL has no host: 'http:///path'$"),
        ("http://127.1/", ForbiddenURLError, "^host '127.1' is not a canonical IP address$"),
        ("http://2130706433/", ForbiddenURLError, "^host '2130706433' is not a canonical IP address$"),
        ("http://127.0.0.1:8080/", ForbiddenAddressError, "at 127.0.0.1: loopback$"),
        ("https://[::1]/", ForbiddenAddressError, "at ::1: loopback$"),
        ("http://[::ffff:169.254.169.254]/", ForbiddenAddressError, "IPv4-mapped cloud metadata$"),
        ("http://[fe80::1%25eth0]/", ForbiddenAddressError, "at fe80::1%25eth0: link-local$"),
        ("http://0.0.0.0/", ForbiddenAddressError, "at 0.0.0.0: unspecified$"),
    ],
)  # fmt: skip
def test_check_url_refuses(url: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        check_url(url, AddressPolicy())


@pytest.mark.parametrize(
    "url", ["https://example.com/a", "http://8.8.8.8/", "https://[2001:4860::1]/"]
)
def test_check_url_accepts(url: str) -> None:
    check_url(url, AddressPolicy())


class ScriptedResolver(AbstractResolver):
    """Answers each lookup with the next list of addresses from a script."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.calls: list[str] = []
        self.closed = False

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.calls.append(host)
        addresses = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                family=socket.AF_INET6 if ":" in address else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for address in addresses
        ]

    async def close(self) -> None:
        self.closed = True


async def test_resolver_judges_every_answer_not_just_the_first() -> None:
    inner = ScriptedResolver(["93.184.216.34"], ["10.0.0.5"])
    resolver = GuardedResolver(AddressPolicy(), inner)
    first = await resolver.resolve("rebind.test", 80)
    assert [r["host"] for r in first] == ["93.184.216.34"]
    with pytest.raises(ForbiddenAddressError, match="10.0.0.5"):
        await resolver.resolve("rebind.test", 80)
    await resolver.close()
    assert not inner.closed  # a caller-supplied resolver stays the caller's


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (["93.184.216.34", "127.0.0.1"], "at 127.0.0.1: loopback$"),
        (["::1", "93.184.216.34"], "at ::1: loopback$"),
        (["not-an-ip"], "at not-an-ip: not an IP address$"),
    ],
)
async def test_resolver_refuses_if_any_answer_is_bad(answer: list[str], message: str) -> None:
    with pytest.raises(ForbiddenAddressError, match=message):
        await GuardedResolver(AddressPolicy(), ScriptedResolver(answer)).resolve("mixed.test")


async def test_resolver_allowlisted_name_passes() -> None:
    policy = AddressPolicy.from_strings(["db.test"])
    result = await GuardedResolver(policy, ScriptedResolver(["10.0.0.5"])).resolve("db.test")
    assert result[0]["host"] == "10.0.0.5"


@pytest.fixture
async def server(aiohttp_server: ServerFactory) -> TestServer:
    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="hello")

    async def bounce(request: web.Request) -> web.Response:
        raise web.HTTPFound(request.query["to"])

    app = web.Application()
    app.router.add_get("/", hello)
    app.router.add_get("/bounce", bounce)
    return await aiohttp_server(app, host="127.0.0.1")


async def _get(connector: aiohttp.BaseConnector, url: str, **kwargs: Any) -> str:
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.get(url, **kwargs) as response:
            return await response.text()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_loopback_refused_by_default(server: TestServer, host: str) -> None:
    connector = guarded_connector(AddressPolicy(), family=socket.AF_INET)
    with pytest.raises(ForbiddenAddressError, match="loopback"):
        await _get(connector, f"http://{host}:{server.port}/")


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_loopback_allowed_when_allowlisted(server: TestServer, host: str) -> None:
    connector = guarded_connector(AddressPolicy.from_strings([host]), family=socket.AF_INET)
    assert isinstance(connector, GuardedConnector)
    assert await _get(connector, f"http://{host}:{server.port}/") == "hello"


async def test_redirect_to_forbidden_literal_is_refused(server: TestServer) -> None:
    connector = guarded_connector(AddressPolicy.from_strings(["127.0.0.1"]))
    url = f"http://127.0.0.1:{server.port}/bounce"
    with pytest.raises(ForbiddenAddressError, match="127.0.0.2"):
        await _get(connector, url, params=f"to=http://127.0.0.2:{server.port}/")


async def test_dns_rebinding_between_connections_is_refused(server: TestServer) -> None:
    # 127.0.0.1 plays the trusted public address, 127.0.0.2 the rebound internal one.
    inner = ScriptedResolver(["127.0.0.1"], ["127.0.0.2"])
    connector = GuardedConnector(
        AddressPolicy.from_strings(["127.0.0.1"]),
        resolver=inner,
        use_dns_cache=False,
        force_close=True,
    )
    url = f"http://rebind.test:{server.port}/"
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.get(url) as response:
            assert await response.text() == "hello"
        with pytest.raises(ForbiddenAddressError, match="127.0.0.2"):
            await session.get(url)
    assert inner.calls == ["rebind.test", "rebind.test"]


async def test_refused_answers_are_not_served_from_the_dns_cache(server: TestServer) -> None:
    inner = ScriptedResolver(["127.0.0.2"])
    connector = GuardedConnector(AddressPolicy(), resolver=inner)  # DNS cache on (the default)
    async with aiohttp.ClientSession(connector=connector) as session:
        for _ in range(2):
            with pytest.raises(ForbiddenAddressError, match=r"at 127\.0\.0\.2: loopback$"):
                await session.get(f"http://cached.test:{server.port}/")
    assert inner.calls == ["cached.test", "cached.test"]


async def test_proxy_is_refused(server: TestServer) -> None:
    connector = guarded_connector(AddressPolicy.allow_all())
    with pytest.raises(ForbiddenURLError, match="proxy"):
        await _get(connector, "http://example.test/", proxy=f"http://127.0.0.1:{server.port}")


async def test_a_judged_host_does_not_vouch_for_another(server: TestServer) -> None:
    # The connector remembers (scheme, host) pairs it accepted; a refused one is judged again.
    connector = GuardedConnector(AddressPolicy.from_strings(["127.0.0.1"]))
    async with aiohttp.ClientSession(connector=connector) as session:
        for _ in range(2):
            async with session.get(f"http://127.0.0.1:{server.port}/") as response:
                assert await response.text() == "hello"
            with pytest.raises(ForbiddenAddressError, match="127.0.0.2"):
                await session.get(f"http://127.0.0.2:{server.port}/")
            with pytest.raises(ForbiddenURLError, match="canonical"):
                await session.get(f"http://127.1:{server.port}/")


async def test_the_remembered_verdicts_stay_bounded(server: TestServer) -> None:
    connector = GuardedConnector(AddressPolicy.from_strings(["127.0.0.0/8"]))
    async with aiohttp.ClientSession(connector=connector) as session:
        for i in range(300):  # accepted by the guard; nothing listens there
            with pytest.raises(aiohttp.ClientConnectorError):
                await session.get(f"http://127.0.{1 + i // 250}.{1 + i % 250}:9/")
    assert 0 < len(connector._passed) <= 256
