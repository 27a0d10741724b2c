"""A server process for the push restart test (run as a script, not collected by pytest).

Usage: ``python push_server_app.py DB_PATH``. It serves the scripted agent with push
notifications, an SQLite store at DB_PATH and fast retries (webhooks on 127.0.0.1 allowed),
prints ``PORT <n>`` once it listens on 127.0.0.1, and runs until SIGTERM (clean stop) or SIGKILL.
"""

from __future__ import annotations

import asyncio
import signal
import sys

from aiohttp import web
from push_support import local_settings
from server_support import ScriptedAgent, make_card

from a2a_wire.server import ServerSettings, create_app
from a2a_wire.server.store import SQLiteTaskStore


async def main(path: str) -> None:
    settings = ServerSettings(push=local_settings(max_attempts=10_000))
    store = SQLiteTaskStore(path)
    app = create_app(make_card(push=True), ScriptedAgent(), store=store, settings=settings)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print(f"PORT {runner.addresses[0][1]}", flush=True)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
