"""Read a server-sent event stream in the background, and wait for the events a test
expects (the stream also carries a tick every second, which tests mostly skip)."""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

__all__ = ["Stream"]

Event = tuple[str, Any]


class Stream:
    """``GET url`` as a stream of (kind, data) events, read on a thread of its own."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self._events: queue.Queue[Event | None] = queue.Queue()
        self._client = httpx.Client(timeout=httpx.Timeout(10, read=30), trust_env=False)
        self._response = self._client.send(
            self._client.build_request("GET", url, headers=headers or {}), stream=True
        )
        self.status_code = self._response.status_code
        self.headers = self._response.headers
        self.ended = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        if self.status_code == 200:
            self._thread.start()

    def _read(self) -> None:
        kind, data = "message", ""
        try:
            for line in self._response.iter_lines():
                if line.startswith("event:"):
                    kind = line[6:].strip()
                elif line.startswith("data:"):
                    data += line[5:].strip()
                elif line == "" and data:
                    self._events.put((kind, json.loads(data)))
                    kind, data = "message", ""
        except httpx.HTTPError:
            pass
        finally:
            self.ended.set()
            self._events.put(None)

    def next(
        self, kind: str, where: Callable[[Any], bool] = lambda _: True, timeout: float = 30
    ) -> Any:
        """The next event of ``kind`` that ``where`` accepts (others are skipped)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {kind} event within {timeout} s")
            try:
                item = self._events.get(timeout=left)
            except queue.Empty:
                continue
            if item is None:
                raise AssertionError(f"the stream ended before a {kind} event")
            if item[0] == kind and where(item[1]):
                return item[1]

    def close(self) -> None:
        self._response.close()
        self._client.close()
