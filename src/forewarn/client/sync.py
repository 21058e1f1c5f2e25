"""``ScheduledEventsClient``: the blocking twin; decisions live in ``core``, so only the
calls themselves are written here. It sends through a ``transport.Transport``: the
client's own HTTP/1.1 on a socket (``syncwire``) unless a test plugs in another."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Unpack

from forewarn.client import core
from forewarn.client.changes import DocumentChange
from forewarn.client.retrying import Decider, uniform
from forewarn.client.syncwire import SyncWire
from forewarn.contract import Document, Instance

if TYPE_CHECKING:
    from forewarn.client.transport import Transport

__all__ = ["ScheduledEventsClient"]


class ScheduledEventsClient:
    """A client of the Scheduled Events endpoint (real Azure or forewarn).

    Proxies are always bypassed (the environment's ``HTTP_PROXY`` & co. are ignored), the
    first call waits up to ``first_call_timeout`` (enabling Scheduled Events can take two
    minutes), 410 is retried for ``retry_gone_for`` seconds, 429/5xx and refused
    connections ``max_retries`` times with jittered back-off (``ClientOptions``: every
    keyword but the test seams). ``transport`` is the test seam of HTTP (``MockTransport``);
    ``sleep``, ``clock`` and ``jitter`` let tests run the retry rules without waiting.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        transport: Transport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = uniform,
        **options: Unpack[core.ClientOptions],
    ) -> None:
        self._settings = core.Settings.create(
            url, custom_transport=transport is not None, **options
        )
        self._sleep = sleep
        self._decider = functools.partial(Decider, self._settings.policy, clock, jitter)
        self._transport: Transport = transport or SyncWire(
            self._settings.base, options.get("local_address")
        )

    @property
    def url(self) -> str:
        """The endpoint's base URL."""
        return self._settings.base

    @property
    def api_version(self) -> str:
        """The Scheduled Events api-version asked for."""
        return self._settings.api_version

    # ------------------------------------------------------------------ I/O only

    def _send(self, spec: core.RequestSpec) -> core.Answer:
        decider = self._decider()
        while True:
            try:
                return core.settle(self._settings, self._transport.send(spec, self._settings))
            except core.Transient as failure:
                delay = decider.after(failure)
                if delay is None:
                    raise failure.cause from None
            self._sleep(delay)

    # ------------------------------------------------------------------ the API

    def get(self) -> Document:
        """The current document."""
        return core.read_document(self._send(self._settings.document_request()))

    def poll(self, previous: Document | None = None) -> DocumentChange:
        """One watch step: a conditional GET against ``previous``; falsy when nothing changed."""
        return core.watch_step(previous, self._send(self._settings.watch_request(previous)))[1]

    def approve(self, *event_ids: str) -> None:
        """Ask for ``event_ids`` to start now (200 or an ``EndpointError``)."""
        core.read_approval(self._send(self._settings.approve_request(event_ids)))

    def instance(self, api_version: str = core.INSTANCE_API_VERSION) -> Instance:
        """This VM's instance metadata (compute name, scale set, domains, zone)."""
        return core.read_instance(self._send(self._settings.instance_request(api_version)))

    def watch(
        self,
        interval: float = 1.0,
        *,
        since: Document | None = None,
        on_document: core.OnDocument | None = None,
    ) -> Iterator[DocumentChange]:
        """The first document (every event added), then each change, polling every ``interval``.

        With ``since``, changes are relative to that document (resume after an error).
        Errors end the iteration by raising, after the retry rules gave up.
        ``on_document`` gets every document received and its bytes (``--record``).
        """
        watch = core.Watch(since, on_document)
        while True:
            news = watch.take(self._send(watch.request(self._settings)))
            if news is not None:
                yield news
            self._sleep(interval)

    def close(self) -> None:
        """Close the connection."""
        self._transport.close()

    def __enter__(self) -> ScheduledEventsClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
