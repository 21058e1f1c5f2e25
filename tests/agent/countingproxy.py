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
    """``url`` forwards to ``upstream``; ``posts[event_id]`` counts approval POSTs and
    ``answers[event_id]`` says how each was answered."""

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.removeprefix("http://").partition(":")
        self._upstream = (host, int(port))
        self.port = free_port()
        self.posts: Counter[str] = Counter()
        #: Per event, each approval POST's source and the status it was answered (None: no
        #: answer came back, the connection closed first).
        self.answers: dict[str, list[tuple[str, int | None]]] = {}
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
        pending: list[list[str] | None] = []
        await asyncio.gather(
            self._requests(reader, up_writer, source, pending),
            self._responses(up_reader, writer, source, pending),
        )

    async def _responses(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        source: str,
        pending: list[list[str] | None],
    ) -> None:
        """Forward response by response, noting the status of each approval POST."""
        with suppress(OSError, asyncio.IncompleteReadError, ValueError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                status = int(head.split(b" ", 2)[1])
                length, chunked = _framing(head)
                body = b""
                if chunked:
                    while True:
                        size_line = await reader.readuntil(b"\r\n")
                        size = int(size_line.split(b";")[0], 16)
                        body += size_line + await reader.readexactly(size + 2)
                        if size == 0:
                            break
                elif length:
                    body = await reader.readexactly(length)
                ids = pending.pop(0) if pending else None
                if ids is not None:
                    self._answered(ids, source, status)
                writer.write(head + body)
                await writer.drain()
        for ids in pending:
            if ids is not None:
                self._answered(ids, source, None)
        with suppress(OSError):
            writer.close()

    async def _requests(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        source: str,
        pending: list[list[str] | None],
    ) -> None:
        """Forward request by request, noting the event ids of each approval POST."""
        with suppress(OSError, asyncio.IncompleteReadError, ValueError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length, _ = _framing(head)
                body = await reader.readexactly(length) if length else b""
                ids = None
                if head.startswith(b"POST ") and b"scheduledevents" in head.split(b"\r\n")[0]:
                    ids = self._note(body, source)
                pending.append(ids)
                writer.write(head + body)
                await writer.drain()
        with suppress(OSError):
            writer.close()

    def _note(self, body: bytes, source: str) -> list[str]:
        ids: list[str] = []
        with suppress(ValueError, KeyError, TypeError):
            for request in json.loads(body)["StartRequests"]:
                event_id = str(request["EventId"])
                ids.append(event_id)
                with self._lock:
                    self.posts[event_id] += 1
        return ids

    def _answered(self, ids: list[str], source: str, status: int | None) -> None:
        with self._lock:
            for event_id in ids:
                self.answers.setdefault(event_id, []).append((source, status))


def _framing(head: bytes) -> tuple[int, bool]:
    """A message head's Content-Length (0 without one) and whether it is chunked."""
    length, chunked = 0, False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    return length, chunked
