"""Server cost per request in CPU instructions (callgrind), repeatable on a busy machine.

Run ``.venv/bin/python benchmarks/server_instructions.py`` (about a minute; needs ``valgrind``)
or ``--tool cpu`` (CPU time from /proc instead, no valgrind; noisy when the machine is shared).
``--modes`` and ``--kinds`` pick a subset; ``--requests`` sets the measured count.

Each cell starts one server of benchmarks/_servers.py (``ours-sqlite`` and ``ours-memory`` by
default) under ``valgrind --tool=callgrind --instr-atstart=no``, sends a warm-up of blocking
SendMessage or SendStreamingMessage requests at concurrency 16 with the load generator of
benchmarks/server.py (every answer checked), switches instrumentation on
(``callgrind_control -i on``), sends the measured requests, and reads the instructions the
server executed in between, all threads included (the SQLite store's connection thread too).
Under valgrind the server runs some 50 times slower, so the figure is a count, not a time, and
it does not move with other load: two runs of the same code agree within about 1 %. It is the
figure to compare two versions of the code by; benchmarks/server.py gives the times.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import server_load as load
import server_threads
from server import Before, add_before_options, before_of, server_command

HERE = Path(__file__).resolve().parent
MODES = ("ours-sqlite", "ours-memory")
KINDS = {"send": load.SEND, "stream": load.STREAM}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _cpu_seconds(pid: int) -> float:
    """CPU seconds of every thread of the process."""
    counters = server_threads.read(pid)
    return counters.loop + counters.others


async def _ready(url: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            async with aiohttp.ClientSession() as session:
                async with session.get(url + ".well-known/agent-card.json") as response:
                    if response.status == 200:
                        return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.2)
    raise SystemExit("the server did not start")


def _total(path: str) -> int:
    """The instruction count of one callgrind dump (its ``totals:`` line)."""
    lines = Path(path).read_text().splitlines()
    return max((int(line.split()[1]) for line in lines if line.startswith("totals:")), default=0)


def measure(
    mode: str, kind: str, requests: int, warmup: int, tool: str, before: Before | None = None
) -> float:
    """Instructions (thousands) or CPU microseconds per request of one cell.

    ``before-sqlite`` and ``before-memory`` are an earlier checkout's servers (``before``), as
    in benchmarks/server.py.
    """
    port, work = _free_port(), tempfile.mkdtemp(prefix="a2a-instr-")
    url = f"http://127.0.0.1:{port}/"
    command, cwd = server_command(mode, port, before)
    if mode.endswith("sqlite"):
        command += ["--db", f"{work}/tasks.db"]
    out = f"{work}/callgrind.out"
    if tool == "callgrind":
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}",
            *command,
        ]
    server = subprocess.Popen(
        command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        asyncio.run(_ready(url, time.monotonic() + 120))
        asyncio.run(load.run_checked(url, KINDS[kind], warmup))
        control = ["callgrind_control", "-i"]
        if tool == "callgrind":
            subprocess.run([*control, "on", str(server.pid)], check=True, capture_output=True)
        before = _cpu_seconds(server.pid)
        asyncio.run(load.run_checked(url, KINDS[kind], requests))
        if tool != "callgrind":
            return (_cpu_seconds(server.pid) - before) / requests * 1e6
        subprocess.run([*control, "off", str(server.pid)], check=True, capture_output=True)
        subprocess.run(
            ["callgrind_control", "-d", str(server.pid)], check=True, capture_output=True
        )
        deadline = time.monotonic() + 60
        while not (counts := [_total(dump) for dump in glob.glob(out + ".*")]) or not max(counts):
            if time.monotonic() > deadline:
                raise SystemExit("callgrind wrote no counts")
            time.sleep(0.2)  # the dump is written by the server's own thread, a little later
        return max(counts) / requests / 1000
    finally:
        server.terminate()
        server.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated servers")
    parser.add_argument("--kinds", default="send,stream", help="send, stream or both")
    parser.add_argument("--requests", type=int, default=300, help="measured requests per cell")
    parser.add_argument("--warmup", type=int, default=100, help="requests before measuring")
    parser.add_argument("--tool", choices=("callgrind", "cpu"), default="callgrind")
    add_before_options(parser)
    args = parser.parse_args()
    before = before_of(parser, args)
    if before is not None:
        if args.modes == ",".join(MODES):
            args.modes += ",before-sqlite,before-memory"
    unit = "thousand instructions" if args.tool == "callgrind" else "CPU µs"
    print(f"| server | workload | {unit} per request |\n|---|---|---:|")
    for mode in args.modes.split(","):
        for kind in args.kinds.split(","):
            figure = measure(mode, kind, args.requests, args.warmup, args.tool, before)
            print(f"| {mode} | {KINDS[kind]} | {figure:,.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
