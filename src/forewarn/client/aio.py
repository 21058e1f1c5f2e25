"""``AsyncScheduledEventsClient``: the asyncio twin; decisions live in ``core``, so only
the awaited calls are written here. It speaks to an http:// endpoint itself (``wire``: a
poll costs a fraction of httpx's CPU, and httpx is never imported); a custom httpx
transport (the test seam) or an https:// endpoint goes through httpx (``exchange``)."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Unpack

from forewarn.client import core
from forewarn.client.changes import DocumentChange
from forewarn.client.retrying import Decider, uniform
from forewarn.client.wire import AsyncWire
from forewarn.contract import Document, Instance

if TYPE_CHECKING:
    import httpx

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
        transport: httpx.AsyncBaseTransport | None = None,
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
        self._wire: AsyncWire | None = None
        self._http: Any = None
        local_address = options.get("local_address")
        if transport is None and self._settings.base.startswith("http://"):
            self._wire = AsyncWire(self._settings.base, local_address)
            return
        import httpx

        from forewarn.client.exchange import HTTPX_OPTIONS

        if transport is None:
            transport = httpx.AsyncHTTPTransport(local_address=local_address)
        self._http = httpx.AsyncClient(transport=transport, **HTTPX_OPTIONS)

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
            answer = await self._exchange(spec)
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

    async def _exchange(self, spec: core.RequestSpec) -> core.Answer:
        if self._wire is not None:
            return await self._wire.request(spec, self._settings)
        import httpx

        from forewarn.client.exchange import answer_of, failure_of, request_options

        try:
            response = await self._http.request(**request_options(spec, self._settings))
        except httpx.TransportError as exc:
            raise failure_of(spec, exc) from None
        return answer_of(response, self._settings)

    async def _send(self, spec: core.RequestSpec) -> core.Answer:
        decider = self._decider()
        try:
            return await self._once(spec)  # nearly always: no retry machinery at all
        except core.Transient as failure:
            delay = decider.after_first(failure)
            if delay is None:
                raise failure.cause from None
        await self._sleep(delay)
        import tenacity  # loaded by the first retry: most processes never need it

        try:
            async for attempt in tenacity.AsyncRetrying(sleep=self._sleep, **decider.options()):
                with attempt:
                    answer = await self._once(spec)
        except core.Transient as failure:
            raise failure.cause from None
        return answer

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
        """Close the connection pool."""
        if self._wire is not None:
            self._wire.close()
        else:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncScheduledEventsClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
