"""``AsyncScheduledEventsClient``: the asyncio twin; decisions live in ``core``, so only
the awaited calls are written here. It sends through a ``transport.AsyncTransport``: the
client's own HTTP/1.1 on asyncio (``wire``) unless a test plugs in another."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Unpack

from forewarn.client import core
from forewarn.client.changes import DocumentChange
from forewarn.client.retrying import Decider, uniform
from forewarn.client.wire import AsyncWire
from forewarn.contract import Document, Instance

if TYPE_CHECKING:
    from forewarn.client.transport import AsyncTransport

__all__ = ["AsyncScheduledEventsClient"]


class AsyncScheduledEventsClient:
    """The asyncio twin of ``ScheduledEventsClient``: same rules, same answers, same
    keywords (``sleep`` awaits); close it with ``await client.aclose()``.

    ``observer`` is told the status of every answer the endpoint gave (each attempt),
    or None when none came (the agent's poll metrics and readiness).
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        transport: AsyncTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = uniform,
        observer: Callable[[int | None], None] | None = None,
        **options: Unpack[core.ClientOptions],
    ) -> None:
        self._settings = core.Settings.create(
            url, custom_transport=transport is not None, **options
        )
        self._sleep = sleep
        self._decider = functools.partial(Decider, self._settings.policy, clock, jitter)
        self._observer = observer
        self._transport: AsyncTransport = transport or AsyncWire(
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

    async def _once(self, spec: core.RequestSpec) -> core.Answer:
        try:
            answer = core.settle(
                self._settings, await self._transport.send_async(spec, self._settings)
            )
        except core.Transient as failure:
            if self._observer is not None:
                self._observer(failure.status)
            raise
        except BaseException:
            if self._observer is not None:
                self._observer(None)
            raise
        if self._observer is not None:
            self._observer(answer.status)
        return answer

    async def _send(self, spec: core.RequestSpec) -> core.Answer:
        decider = self._decider()
        while True:
            try:
                return await self._once(spec)
            except core.Transient as failure:
                delay = decider.after(failure)
                if delay is None:
                    raise failure.cause from None
            await self._sleep(delay)

    # ------------------------------------------------------------------ the API

    async def get(self) -> Document:
        """The current document."""
        return core.read_document(await self._send(self._settings.document_request()))

    async def poll(self, previous: Document | None = None) -> DocumentChange:
        """One watch step: a conditional GET against ``previous``; falsy when nothing changed."""
        return core.watch_step(previous, await self._send(self._settings.watch_request(previous)))[
            1
        ]

    async def approve(self, *event_ids: str) -> None:
        """Ask for ``event_ids`` to start now (200 or an ``EndpointError``)."""
        core.read_approval(await self._send(self._settings.approve_request(event_ids)))

    async def instance(self, api_version: str = core.INSTANCE_API_VERSION) -> Instance:
        """This VM's instance metadata (compute name, scale set, domains, zone)."""
        return core.read_instance(await self._send(self._settings.instance_request(api_version)))

    async def watch(
        self,
        interval: float = 1.0,
        *,
        since: Document | None = None,
        on_document: core.OnDocument | None = None,
    ) -> AsyncIterator[DocumentChange]:
        """The first document (every event added), then each change, polling every ``interval``.

        With ``since``, changes are relative to that document (resume after an error).
        Errors end the iteration by raising, after the retry rules gave up.
        ``on_document`` gets every document received and its bytes (``--record``).
        """
        watch = core.Watch(since, on_document)
        while True:
            news = watch.take(await self._send(watch.request(self._settings)))
            if news is not None:
                yield news
            await self._sleep(interval)

    async def aclose(self) -> None:
        """Close the idle connections."""
        self._transport.close()

    async def __aenter__(self) -> AsyncScheduledEventsClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
