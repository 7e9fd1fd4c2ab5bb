"""A TCP relay in front of a real Redis that counts connections and round trips,
for the tests and the benchmarks: how many times a client waited for Redis."""

from __future__ import annotations

import asyncio
import contextlib


class RoundTripProxy:
    """A TCP relay in front of a real Redis that counts connections and round trips.

    A round trip starts whenever the client sends after the server has answered
    (or first on a connection). With `drop`, every connection is closed at once.
    """

    def __init__(self, target_port: int, drop: bool = False) -> None:
        self.target_port = target_port
        self.drop = drop
        self.connections = 0
        self.round_trips = 0
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            if self.drop:
                return
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
            client_turn = [False]  # True while the client is sending
            try:
                await asyncio.gather(
                    self._pump(reader, up_writer, client_turn, from_client=True),
                    self._pump(up_reader, writer, client_turn, from_client=False),
                )
            finally:
                up_writer.close()
                with contextlib.suppress(OSError):
                    await up_writer.wait_closed()
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            self._handlers.discard(task)

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, client_turn: list[bool], from_client: bool
    ) -> None:
        with contextlib.suppress(OSError):
            while data := await source.read(65536):
                if from_client and not client_turn[0]:
                    self.round_trips += 1
                client_turn[0] = from_client
                sink.write(data)
                await sink.drain()
        if sink.can_write_eof():
            with contextlib.suppress(OSError):
                sink.write_eof()

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()
        for task in list(self._handlers):
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), timeout=5)
