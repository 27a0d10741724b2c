"""Shared test configuration: Hypothesis profiles, the app the server and functional tests serve,
a PostgreSQL server with a schema per test (``postgres_dsn``, ``postgres_schema``; see
tests/pg_support.py for where the server comes from and when the tests skip or fail), and a
throwaway cluster a module's fault tests may restart and stop (``pg_cluster``).

Profiles: ``dev`` (default) explores with fresh random examples; ``ci`` (selected when the ``CI``
environment variable is set, or with ``HYPOTHESIS_PROFILE=ci``) is derandomized so that a failure
reproduces exactly, has no deadline (shared runners are slow) and prints the reproduction blob.
``thorough`` (``HYPOTHESIS_PROFILE=thorough``) is for hunting bugs locally.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import subprocess
from collections.abc import AsyncIterator, Generator, Iterator
from typing import Any

import pg_support
import pytest
import store_support
from aiohttp import web
from hypothesis import HealthCheck, settings
from server_support import ScriptedAgent, make_card
from store_support import ServerStores

from a2a_wire.server import create_app

settings.register_profile(
    "dev",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "ci",
    max_examples=50,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("thorough", parent=settings.get_profile("dev"), max_examples=2000)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Options of this suite (declared here, at the root, so they parse for any selection)."""
    parser.addoption(
        "--write-interop-table",
        action="store_true",
        help="write docs/interop.md from the interop tests' outcomes (make interop-table)",
    )


@pytest.fixture(autouse=True)
def _fresh_shared_card_cache() -> Iterator[None]:
    """Tests reuse ports, so a card cached by URL in one test must not leak into the next."""
    from a2a_wire.client._client import SHARED_CARD_CACHE

    SHARED_CARD_CACHE.clear()
    yield
    SHARED_CARD_CACHE.clear()


@pytest.fixture
def agent() -> ScriptedAgent:
    """The executor of ``app``, a fresh :class:`ScriptedAgent` (tests/client/ overrides ``agent``
    with the fake HTTP agent its client talks to)."""
    return ScriptedAgent()


@pytest.fixture
def store_kind() -> str:
    """The task store of the apps a test builds with ``store_for``: memory here; the folders of
    the server's method tests run theirs on each of ``store_support.SERVER_BACKENDS``."""
    return "memory"


@pytest.fixture
async def store_for(store_kind: str, request: pytest.FixtureRequest) -> AsyncIterator[ServerStores]:
    """``store_for(settings)``: the store of an app under test, of ``store_kind`` (``None`` for
    memory, ``create_app``'s default), closed and its schema recycled after the test."""
    dsn = str(request.getfixturevalue("postgres_dsn")) if store_kind == "postgresql" else ""
    stores = ServerStores(store_kind, dsn)
    await stores.prepare()
    yield stores
    await stores.close_all()


@pytest.fixture
def app(agent: ScriptedAgent, store_for: ServerStores) -> web.Application:
    """The server under test: ``agent`` behind the default card and settings, on a store of
    ``store_kind``. A module that needs other settings, a security config or another executor
    overrides this fixture."""
    return create_app(make_card(), agent, store=store_for())


def _group(item: pytest.Item) -> str | None:
    """The ``xdist_group`` of ``item``, if it has one."""
    marker = item.get_closest_marker("xdist_group")
    if marker is None:
        return None
    return str(marker.args[0] if marker.args else marker.kwargs.get("name", "default"))


def _shares_a_fixture(item: pytest.Item) -> bool:
    """Whether ``item`` uses a fixture of module or package scope."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    return any(d and d[-1].scope in ("module", "package") for d in defs)


SLOW_VARIABLE = "A2A_WIRE_SLOW_TESTS"
"""Set (or ``CI``, which ``.ci/run`` sets) to run the ``slow`` tests: ``make test`` leaves them out."""


def _run_slow() -> bool:
    return bool(os.environ.get("CI") or os.environ.get(SLOW_VARIABLE))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Groups and order for ``-n`` (``make test``; ``--dist loadgroup`` in pyproject.toml).

    The suites that load the machine and measure latencies under faults name the group
    ``heavy`` (the scale-out soak, the store's fault tests, the benchmark smokes with pinned
    processes): they run on one worker, one after the other; the database fault suite is marked
    ``alone`` and runs after all of them, by itself (the Makefile's ``test``). A module with a fixture of module scope (a cluster, a built wheel, a benchmark run, a
    browser) is a group of its own unless it names one, so that the fixture is made once and
    never beside itself. Then the ``slow`` tests, and every group holding one, go first (in
    their order). Without the slow tests (``make test``) the other groups come next, the largest
    first: a group runs on one worker, and started last it would keep that worker busy after
    the others are done (the inspector's browser tests take about a minute of one worker). With
    them (CI) the groups keep their place, so that the heavy suites, which measure how long
    requests are held during database faults, do not share the machine with the browser.
    ``tryfirst``: pytest-xdist reads the groups in its own hook. Outside CI the ``slow`` tests
    are deselected (one summary line says how to run them).
    """
    if not _run_slow():
        slow_items = [item for item in items if item.get_closest_marker("slow") is not None]
        if slow_items:
            config.hook.pytest_deselected(items=slow_items)
            items[:] = [item for item in items if item.get_closest_marker("slow") is None]
    for item in items:
        if _group(item) is None and _shares_a_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    slow = {id(item) for item in items if item.get_closest_marker("slow") is not None}
    first = {_group(item) for item in items if id(item) in slow} - {None}
    sizes = collections.Counter(_group(item) for item in items)
    grouped_first = not _run_slow()  # in CI the heavy suites' latency bounds want no browser beside

    def rank(item: pytest.Item) -> tuple[int, int]:
        group = _group(item)
        if id(item) in slow or group in first:
            return (0, 0)
        if grouped_first and group is not None:
            return (1, -sizes[group])
        return (2, 0)

    items.sort(key=rank)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line saying that the slow tests were left out, and how to run them."""
    if not _run_slow():
        terminalreporter.write_line(
            f"the slow tests were left out (CI runs them): set {SLOW_VARIABLE}=1 to run them here"
        )


def pytest_collection_finish(session: pytest.Session) -> None:
    """On a pytest-xdist worker, fail if the groups were lost (pytest-xdist marks a grouped
    test by its id; see the pin of pytest in pyproject.toml), rather than run them apart."""
    if getattr(session.config.option, "loadgroup", False):
        lost = [i.nodeid for i in session.items if _group(i) is not None and "@" not in i.nodeid]
        if lost:
            raise pytest.UsageError(f"pytest-xdist ignored the xdist_group of {lost[0]}")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport() -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Fold every skip for want of PostgreSQL into one summary line (pytest puts a skip raised
    in a fixture at each test's own line)."""
    report = yield
    longrepr = report.longrepr
    missing = (pg_support.MISSING, pg_support.CLUSTER_MISSING)
    if report.skipped and isinstance(longrepr, tuple) and any(m in longrepr[2] for m in missing):
        report.longrepr = (pg_support.__file__, 1, longrepr[2])  # its docstring says how
    return report


def _skip_or_fail(reason: str | None, require: str) -> None:
    """Skip the test for ``reason`` (nothing to run it on), or fail it when ``require`` is 1."""
    if reason is not None:
        if os.environ.get(require) == "1":
            pytest.fail(f"{require}=1 but {reason}", pytrace=False)
        pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """A PostgreSQL server for the session (see tests/pg_support.py for where it comes from)."""
    dsn = os.environ.get(pg_support.DSN_VARIABLE)
    if dsn:
        store_support.use_postgres(dsn)
        yield dsn
        asyncio.run(pg_support.drop_spare_schemas(dsn))
        return
    _skip_or_fail(pg_support.Cluster.unavailable(), pg_support.REQUIRE_VARIABLE)
    cluster = pg_support.Cluster.start()
    try:
        store_support.use_postgres(cluster.dsn)
        yield cluster.dsn
        asyncio.run(pg_support.drop_spare_schemas(cluster.dsn))
    finally:
        cluster.stop()


@pytest.fixture
async def postgres_schema(postgres_dsn: str) -> AsyncIterator[str]:
    """A fresh PostgreSQL schema name for one test, dropped after it."""
    schema = pg_support.new_schema()
    yield schema
    await pg_support.drop_schema(postgres_dsn, schema)


@pytest.fixture(scope="module")
def pg_cluster() -> Iterator[pg_support.Cluster]:
    """A throwaway cluster of the module's own, which its tests may restart and stop.

    Skips (one summary line) without the binaries, or fails with
    ``A2A_WIRE_REQUIRE_POSTGRES_CLUSTER=1``; see tests/pg_support.py.
    """
    reason = pg_support.Cluster.unavailable(pg_support.CLUSTER_MISSING)
    _skip_or_fail(reason, pg_support.REQUIRE_CLUSTER_VARIABLE)
    cluster = pg_support.Cluster.start()
    try:
        yield cluster
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # a test left it stopped
            cluster.start_server()
        cluster.stop()
