"""A small TCP proxy that cuts or stalls connections on demand (toxiproxy's model, written small).

:class:`FaultProxy` listens on 127.0.0.1 (a free port) and forwards each connection to a
target. :meth:`~FaultProxy.cut` closes every connection and refuses new ones (the listening
socket is closed, so connecting gets ECONNREFUSED) until :meth:`~FaultProxy.heal`;
:meth:`~FaultProxy.stall` stops forwarding bytes in both directions but keeps every socket
open, and accepts new connections without forwarding them either: what a peer sees of a
network that drops packets. :meth:`~FaultProxy.heal` ends either fault.
"""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit


class FaultProxy:
    """A proxy from ``127.0.0.1:port`` to ``target_host:target_port``.

    Args:
        target_host: Where to forward to.
        target_port: Its port.
    """

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._server: asyncio.Server | None = None
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._pumps: set[asyncio.Task[None]] = set()
        self.port = 0

    async def start(self) -> FaultProxy:
        """Listen (on a free port the first time, on the same one after a cut)."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def dsn(self, database: str = "postgres", user: str = "postgres") -> str:
        """A PostgreSQL DSN through the proxy."""
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    async def cut(self) -> None:
        """Close every connection and refuse new ones until :meth:`heal`."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        self._drop_all()
        if server is not None:
            await server.wait_closed()

    def stall(self) -> None:
        """Stop forwarding bytes, keeping every socket open, until :meth:`heal`."""
        self._flowing.clear()

    async def heal(self) -> None:
        """End a cut or a stall: forward again (what a stall held back is sent now)."""
        self._flowing.set()
        if self._server is None:
            await self.start()

    async def close(self) -> None:
        """Stop listening and close every connection."""
        await self.cut()
        for pump in list(self._pumps):
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)

    def _drop_all(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.transport.abort()
            self._writers.discard(writer)
            return
        self._writers.add(up_writer)
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            pump = asyncio.create_task(self._pump(source, sink, (writer, up_writer)))
            self._pumps.add(pump)
            pump.add_done_callback(self._pumps.discard)

    async def _pump(
        self,
        source: asyncio.StreamReader,
        sink: asyncio.StreamWriter,
        pair: tuple[asyncio.StreamWriter, asyncio.StreamWriter],
    ) -> None:
        """Read ``source`` always (so a close is seen during a stall); forward while flowing."""
        held = bytearray()
        more = asyncio.Event()

        async def forward() -> None:
            while True:
                await self._flowing.wait()
                if not held:
                    more.clear()
                    await more.wait()
                    continue
                chunk = bytes(held)
                held.clear()
                sink.write(chunk)
                await sink.drain()

        forwarder = asyncio.create_task(forward())
        try:
            while data := await source.read(65536):
                held += data
                more.set()
            if held and self._flowing.is_set():
                sink.write(bytes(held))  # the last bytes before a clean close
        except OSError:
            pass
        finally:
            forwarder.cancel()
            await asyncio.gather(forwarder, return_exceptions=True)
            for end in pair:  # one side gone: the connection is over for both
                with contextlib.suppress(Exception):
                    end.transport.abort()
                self._writers.discard(end)


def through(proxy: FaultProxy, dsn: str) -> str:
    """``dsn`` with the proxy's address in place of the server's."""
    where = urlsplit(dsn)
    return where._replace(netloc=f"{where.username}@127.0.0.1:{proxy.port}").geturl()
