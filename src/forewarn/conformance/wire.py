"""The kit's HTTP: exactly the bytes a rule asks for, paced under the rate limit.

The standard library's ``http.client`` rather than the project's client: a rule must send
a header in lower case, leave Content-Type out, or put the request line in absolute form,
and see whether the connection stayed open; a client library normalises all of that
away. One connection is kept alive between requests, as real clients keep it; requests
are spaced ``1/rate`` seconds apart (the endpoint allows 5 a second per VM, shared with
every agent on the VM); a 429 or 410 is waited out and sent again, as the articles say.
"""

from __future__ import annotations

import http.client
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from forewarn.contract.parse import json_value

__all__ = ["NOT_JSON", "Answer", "Exchange", "Wire", "WireError"]

#: Seconds to wait for an answer, and for the first answer on a path (the first call of
#: Scheduled Events switches them on for the scope, which may take two minutes).
TIMEOUT = 10.0
FIRST_TIMEOUT = 130.0
#: How long 410 (the endpoint getting ready) is retried, and how often a 429.
GONE_FOR = 70.0
RATE_LIMITED_TRIES = 4

#: What ``Answer.json`` returns for a body that is not JSON (None is JSON's null).
NOT_JSON = object()


class WireError(Exception):
    """The endpoint cannot be used at all (a URL that is not http(s)://host)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A status, the headers as received and the body."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str) -> str | None:
        """The first header called ``name`` (any case), or None."""
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), None)

    def json(self) -> Any:
        """The body as JSON, or ``NOT_JSON``."""
        try:
            return json_value(self.body)
        except ValueError:
            return NOT_JSON

    def short(self, limit: int = 120) -> str:
        """``status body`` on one line, the body cut at ``limit`` characters."""
        text = self.body.decode("utf-8", "replace").replace("\r", " ").replace("\n", " ")
        if len(text) > limit:
            text = text[: limit - 1] + "…"
        return f"{self.status} {text}".rstrip()


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request as sent and what came back (``answer`` None: ``error`` says why)."""

    t: float
    rule: str
    method: str
    target: str
    headers: tuple[tuple[str, str], ...]
    body: bytes | None
    answer: Answer | None
    error: str | None = None
    #: Sent on a connection that had served a request before.
    reused: bool = False

    def seen(self) -> str:
        """What came back, in a line."""
        return self.answer.short() if self.answer is not None else f"no answer: {self.error}"


class Wire:
    """Requests to one endpoint, paced, on a kept-alive connection."""

    def __init__(
        self,
        url: str,
        *,
        source_address: str | None = None,
        rate: float = 4.0,
        on_exchange: Callable[[Exchange], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise WireError(f"{url!r} is not an http:// or https:// URL with a host")
        self.base = f"{parts.scheme}://{parts.netloc}".rstrip("/")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._source = (source_address, 0) if source_address else None
        self._gap = 1.0 / rate
        self._sleep = sleep
        #: Told every exchange, as it ends (``--record``).
        self.on_exchange = on_exchange
        self._last_sent = -math.inf
        self._conn: http.client.HTTPConnection | None = None
        self._served = 0  # requests answered on the current connection
        self._answered: set[str] = set()  # paths that answered once
        self.exchanges: list[Exchange] = []

    def close(self) -> None:
        self._drop()

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        self._served = 0

    def _connection(self, path: str) -> http.client.HTTPConnection:
        timeout = TIMEOUT if path in self._answered else FIRST_TIMEOUT
        if self._conn is None:
            kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            self._conn = kind(self._host, self._port, timeout=timeout,
                              source_address=self._source)  # fmt: skip
        elif self._conn.sock is not None:
            self._conn.sock.settimeout(timeout)
        return self._conn

    def _pace(self) -> None:
        wait = self._last_sent + self._gap - time.monotonic()
        if wait > 0:
            self._sleep(wait)
        self._last_sent = time.monotonic()

    def send(
        self,
        rule: str,
        method: str,
        target: str,
        headers: tuple[tuple[str, str], ...] = (),
        body: bytes | None = None,
        *,
        absolute: bool = False,
        paced: bool = True,
        retry: bool = True,
    ) -> Exchange:
        """Send one request (``target``: path and query); 429 and 410 are sent again
        unless ``retry`` is False. Never raises for what the endpoint does."""
        started = time.monotonic()
        tries = 0
        while True:
            exchange = self._once(rule, method, target, headers, body, absolute, paced)
            tries += 1
            status = exchange.answer.status if exchange.answer is not None else None
            if not retry or status not in (410, 429):
                return exchange
            if status == 429 and tries >= RATE_LIMITED_TRIES:
                return exchange
            if status == 410 and time.monotonic() - started > GONE_FOR:
                return exchange
            assert exchange.answer is not None
            self._sleep(_retry_after(exchange.answer))

    def _once(
        self,
        rule: str,
        method: str,
        target: str,
        headers: tuple[tuple[str, str], ...],
        body: bytes | None,
        absolute: bool,
        paced: bool,
    ) -> Exchange:
        if paced:
            self._pace()
        line = self.base + target if absolute else target
        path = target.partition("?")[0].lower()
        for attempt in (1, 2):
            conn = self._connection(path)
            reused = self._served > 0
            sent_at = time.time()
            try:
                answer, closes = _exchange(conn, method, line, headers, body)
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                if reused and attempt == 1:
                    continue  # a kept-alive connection the server had closed: a new one
                exchange = Exchange(sent_at, rule, method, line, headers, body, None,
                                    f"{type(exc).__name__}: {exc}", reused)  # fmt: skip
                break
            self._answered.add(path)
            self._served += 1
            if closes:
                self._drop()
            exchange = Exchange(sent_at, rule, method, line, headers, body, answer, None, reused)
            break
        self.exchanges.append(exchange)
        if self.on_exchange is not None:
            self.on_exchange(exchange)
        return exchange


def _exchange(
    conn: http.client.HTTPConnection,
    method: str,
    line: str,
    headers: tuple[tuple[str, str], ...],
    body: bytes | None,
) -> tuple[Answer, bool]:
    conn.putrequest(method, line, skip_accept_encoding=True)
    for name, value in headers:
        conn.putheader(name, value)
    if body is not None:
        conn.putheader("Content-Length", str(len(body)))
    conn.endheaders(body)
    response = conn.getresponse()
    data = response.read()
    return Answer(response.status, tuple(response.getheaders()), data), response.will_close


def _retry_after(answer: Answer) -> float:
    """Retry-After when it is a short number of seconds, else one second."""
    try:
        seconds = float(answer.header("Retry-After") or "1")
    except ValueError:
        return 1.0
    return min(max(seconds, 0.2), 10.0) if math.isfinite(seconds) else 1.0
