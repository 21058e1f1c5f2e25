"""Read a server-sent event stream in the background, and wait for the events a test
expects (the stream also carries a tick every second, which tests mostly skip). A tick's
poll times are read as the page reads them (packed in the last snapshot's VM order, or by
name) into ``tick["poll_times"]``."""

from __future__ import annotations

import base64
import json
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

__all__ = ["Stream", "poll_times"]

Event = tuple[str, Any]


def poll_times(tick: dict[str, Any], order: list[str]) -> dict[str, float]:
    """Every poll time a tick moves: one byte per VM of ``order`` (0: not moved, else 1 +
    tenths of a second before the tick's ``now``), then those given by name."""
    out: dict[str, float] = {}
    packed = base64.b64decode(tick["polled"])
    if packed:
        assert len(packed) == len(order), "a tick packs one byte per VM of the snapshot"
        for name, step in zip(order, packed, strict=True):
            if step:
                out[name] = tick["now"] - (step - 1) / 10
    out.update(tick["polls"])
    return out


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
        order: list[str] = []
        try:
            for line in self._response.iter_lines():
                if line.startswith("event:"):
                    kind = line[6:].strip()
                elif line.startswith("data:"):
                    data += line[5:].strip()
                elif line == "" and data:
                    message = json.loads(data)
                    if kind == "snapshot":
                        order = [vm["name"] for vm in message["vms"]]
                    elif kind == "tick":
                        message["poll_times"] = poll_times(message, order)
                    self._events.put((kind, message))
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
