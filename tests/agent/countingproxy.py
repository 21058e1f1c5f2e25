"""A TCP proxy in front of the metadata endpoint that counts approval POSTs per event.

The server keeps only the first approval of an event, so its history cannot show a second
POST; this proxy sees every request. It connects upstream from the client's own source
address, so the server still tells the VMs apart.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from contextlib import suppress

from tests.support.serverproc import free_port

__all__ = ["CountingProxy"]


class CountingProxy:
    """``url`` forwards to ``upstream``; ``posts[event_id]`` counts approval POSTs."""

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.removeprefix("http://").partition(":")
        self._upstream = (host, int(port))
        self.port = free_port()
        self.posts: Counter[str] = Counter()
        self.posters: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()
        self._ready.wait(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", self.port)
        )
        self._ready.set()
        with suppress(RuntimeError):
            self._loop.run_forever()
        server.close()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        source = writer.get_extra_info("peername")[0]
        try:
            up_reader, up_writer = await asyncio.open_connection(
                *self._upstream, local_addr=(source, 0)
            )
        except OSError:
            writer.close()
            return
        await asyncio.gather(
            self._requests(reader, up_writer, source), self._pipe(up_reader, writer)
        )

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with suppress(OSError, asyncio.IncompleteReadError):
            while chunk := await reader.read(65536):
                writer.write(chunk)
                await writer.drain()
        with suppress(OSError):
            writer.close()

    async def _requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, source: str
    ) -> None:
        """Forward request by request, noting the event ids of each approval POST."""
        with suppress(OSError, asyncio.IncompleteReadError, ValueError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = await reader.readexactly(length) if length else b""
                if head.startswith(b"POST ") and b"scheduledevents" in head.split(b"\r\n")[0]:
                    self._note(body, source)
                writer.write(head + body)
                await writer.drain()
        with suppress(OSError):
            writer.close()

    def _note(self, body: bytes, source: str) -> None:
        with suppress(ValueError, KeyError, TypeError):
            for request in json.loads(body)["StartRequests"]:
                event_id = str(request["EventId"])
                with self._lock:
                    self.posts[event_id] += 1
                    self.posters.setdefault(event_id, []).append(source)
