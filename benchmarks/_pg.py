"""PostgreSQL servers of the scale-out benchmarks: schemas, ``a2a-wire serve`` and the SDK.

The database is ``$A2A_WIRE_BENCH_DSN``, else ``$A2A_WIRE_TEST_POSTGRES_DSN``, else
``postgresql://postgres@127.0.0.1:5432/test`` (this project's machines). Every run works in a
schema of its own (:func:`schema`), dropped afterwards, and tags its connections with
``application_name = a2a-bench-<schema>`` so that the PostgreSQL backends serving them can be
found (:func:`backend_cpu`: their CPU time, read from /proc, since the database runs on the
same machine).

* :func:`serve_ours` runs ``a2a-wire serve`` (optionally ``--workers N``) on
  ``storage = "postgresql"`` with an executor of benchmarks/_agents.py, its processes pinned to
  the given CPUs (the supervisor before it starts its workers, which inherit the mask). It is
  ready once it logged ``listening`` (with ``--workers``, once every worker is ready).
* :func:`serve_sdk` runs benchmarks/_servers.py ``sdk-postgresql`` (the SDK's cluster mode).
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import asyncpg

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HOST = "127.0.0.1"
DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"
CLI = "import sys; from a2a_wire.cli import main; sys.argv[0] = 'a2a-wire'; sys.exit(main())"
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def dsn() -> str:
    """The benchmark database (see the module docstring)."""
    return (
        os.environ.get("A2A_WIRE_BENCH_DSN")
        or os.environ.get("A2A_WIRE_TEST_POSTGRES_DSN")
        or DEFAULT_DSN
    )


def app_name(name: str) -> str:
    """The ``application_name`` of the connections of schema ``name``."""
    return f"a2a-bench-{name}"


def tagged(address: str, name: str) -> str:
    """``address`` with the ``application_name`` of schema ``name`` (asyncpg reads it)."""
    return f"{address}{'&' if '?' in address else '?'}application_name={app_name(name)}"


async def _execute(address: str, statement: str) -> None:
    conn = await asyncpg.connect(address)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@contextmanager
def schema(address: str, create: bool = False) -> Iterator[str]:
    """A new schema name (made now if ``create``), dropped with all it holds on exit."""
    name = f"bench_{uuid.uuid4().hex[:12]}"
    if create:
        asyncio.run(_execute(address, f"CREATE SCHEMA {name}"))
    try:
        yield name
    finally:
        asyncio.run(_execute(address, f"DROP SCHEMA IF EXISTS {name} CASCADE"))


async def _facts(address: str) -> str:
    conn = await asyncpg.connect(address)
    try:
        version = await conn.fetchval("SHOW server_version")
        commit = await conn.fetchval("SHOW synchronous_commit")
    finally:
        await conn.close()
    return f"PostgreSQL {version} (synchronous_commit={commit})"


def server_facts(address: str) -> str:
    """The PostgreSQL server's version and ``synchronous_commit``, for a report's header."""
    return asyncio.run(_facts(address))


async def backend_cpu(address: str, name: str) -> dict[int, float]:
    """CPU seconds so far of each PostgreSQL backend serving schema ``name``'s connections."""
    conn = await asyncpg.connect(address)
    try:
        rows = await conn.fetch(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1", app_name(name)
        )
    finally:
        await conn.close()
    found = {row["pid"]: cpu_seconds(row["pid"]) for row in rows}
    return {pid: cpu for pid, cpu in found.items() if cpu is not None}


def cpu_delta(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds the backends used between two :func:`backend_cpu` readings."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


# --- processes -----------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of one process (all its threads), from /proc."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(c) for c in (task / "children").read_text().split()]
    except OSError:
        pass
    return found


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (``/proc/PID/task/TID/children``)."""
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        todo += _children(current)
    return pids


def tree_stats(pid: int) -> tuple[float | None, int | None]:
    """CPU seconds and RSS bytes of ``pid`` and its descendants (``None`` once it is gone)."""
    cpu, rss = cpu_seconds(pid), 0
    if cpu is None:
        return None, None
    for child in tree(pid)[1:]:
        cpu += cpu_seconds(child) or 0.0
    for each in tree(pid):
        try:
            rss += int(Path(f"/proc/{each}/statm").read_text().split()[1]) * PAGE
        except OSError:
            pass
    return cpu, rss


def machine_busy() -> float:
    """Seconds all CPUs of the machine have been busy since boot (not idle, not iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) / TICK


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on (now)."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _pinned(cores: Sequence[int] | None) -> object:
    if not cores or not hasattr(os, "sched_setaffinity"):
        return None
    mask = set(cores) & os.sched_getaffinity(0)
    return (lambda: os.sched_setaffinity(0, mask)) if mask else None


def _wait_log(process: subprocess.Popen[bytes], log: Path, word: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if word in text:
            return
        if process.poll() is not None:
            raise RuntimeError(f"server exited with status {process.returncode}:\n{text[-2000:]}")
        time.sleep(0.05)
    raise RuntimeError(f"server did not log {word!r} within {timeout:.0f} s")


def wait_port(process: subprocess.Popen[bytes], port: int, timeout: float) -> None:
    """Wait until ``process`` accepts connections on ``port``; raises if it exits or is late."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with status {process.returncode} during startup")
        try:
            with socket.create_connection((HOST, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server did not listen on port {port} within {timeout:.0f} s")


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 20 s; waits for the process."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _config(
    folder: Path, port: int, address: str, name: str, skill: str, extra: str, options: str
) -> Path:
    path = folder / "serve.toml"
    path.write_text(
        f"""[server]
host = "{HOST}"
port = {port}
storage = "postgresql"
data_dir = "{folder / "data"}"
log_level = "warning"

[postgresql]
dsn = "{tagged(address, name)}"
schema = "{name}"
{extra}
[[skills]]
id = "bench"
executor = "{skill}"
{options}"""
    )
    return path


@contextmanager
def serve_ours(
    folder: Path,
    address: str,
    name: str,
    *,
    skill: str = "_agents:TrivialAgent",
    workers: int = 1,
    cores: Sequence[int] | None = None,
    postgresql: str = "",
    skill_extra: str = "",
    launcher: Sequence[str] = (),
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``a2a-wire serve`` on schema ``name``; yields the process and its JSON-RPC URL.

    Args:
        folder: An empty folder for the configuration, the data directory and the log.
        address: The PostgreSQL DSN.
        name: The schema.
        skill: The ``executor`` of the one skill (``module:attribute``, from benchmarks/).
        workers: ``--workers`` (1: a single process, no supervisor).
        cores: CPUs the processes may run on (``None``: any).
        postgresql: More lines of the ``[postgresql]`` table (``key = value``).
        skill_extra: More lines after the skill's table (e.g. its ``[skills.options]``).
        launcher: Python arguments in place of ``-c CLI`` (the ``a2a-wire`` command) (benchmarks/_no_notify.py).
    """
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = _config(folder, port, address, name, skill, postgresql, skill_extra)
    command = [sys.executable, *(launcher or ("-c", CLI)), "serve", "--config"]
    command += [str(config), *(["--workers", str(workers)] if workers > 1 else [])]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    log = folder / "serve.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink,
            preexec_fn=_pinned(cores),  # type: ignore[arg-type]
        )  # fmt: skip
    try:
        _wait_log(process, log, "listening", 60.0)
        yield process, f"http://{HOST}:{port}/"
    finally:
        stop(process)


@contextmanager
def serve_sdk(
    address: str, name: str, *, agent: str = "done", core: int | None = None, gate_dir: str = ""
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """The SDK's cluster mode on the existing schema ``name``; yields the process and its URL."""
    port = free_port()
    command = [sys.executable, str(HERE / "_servers.py"), "sdk-postgresql", "--port", str(port)]
    command += ["--dsn", address, "--schema", name, "--agent", agent]
    command += [*(["--core", str(core)] if core is not None else [])]
    command += [*(["--gate-dir", gate_dir] if gate_dir else [])]
    process = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.DEVNULL)
    try:
        wait_port(process, port, 60.0)
        yield process, f"http://{HOST}:{port}/"
    finally:
        stop(process)
