"""``ScheduledEventsClient``: the blocking twin (httpx.Client); decisions live in ``core``."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from types import TracebackType

import httpx
import tenacity

from forewarn.client.core import (
    DEFAULT_API_VERSION,
    INSTANCE_API_VERSION,
    Answer,
    RequestSpec,
    RetryPolicy,
    Settings,
    Transient,
    approve_request,
    document_request,
    instance_request,
    read_approval,
    read_document,
    read_instance,
    transient,
    watch_step,
)
from forewarn.client.endpoint import resolve_endpoint
from forewarn.client.errors import EndpointTimeout, EndpointUnreachable
from forewarn.client.model import Document, DocumentChange, Instance
from forewarn.client.retrying import Decider

__all__ = ["ScheduledEventsClient"]


def _settings(
    url: str | None,
    api_version: str,
    timeout: float,
    first_call_timeout: float,
    policy: RetryPolicy,
) -> Settings:
    return Settings(resolve_endpoint(url), api_version, timeout, first_call_timeout, policy)


class ScheduledEventsClient:
    """A client of the Scheduled Events endpoint (real Azure or forewarn).

    Proxies are always bypassed (the environment's ``HTTP_PROXY`` & co. are ignored), the
    first call waits up to ``first_call_timeout`` (enabling Scheduled Events can take two
    minutes), 410 is retried for ``retry_gone_for`` seconds, 429/5xx and refused
    connections ``max_retries`` times with jittered back-off. ``transport`` is the test seam;
    ``sleep``, ``clock`` and ``jitter`` let tests run the retry rules without waiting.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        api_version: str = DEFAULT_API_VERSION,
        local_address: str | None = None,
        timeout: float = 10.0,
        first_call_timeout: float = 130.0,
        retry_gone_for: float = 70.0,
        max_retries: int = 5,
        backoff: float = 0.5,
        backoff_max: float = 10.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        if transport is not None and local_address is not None:
            raise ValueError("give local_address or transport, not both")
        policy = RetryPolicy(gone_for=retry_gone_for, max_retries=max_retries,
                             backoff=backoff, backoff_max=backoff_max)  # fmt: skip
        self._settings = _settings(url, api_version, timeout, first_call_timeout, policy)
        self._sleep = sleep
        self._clock = clock
        self._jitter = jitter
        if transport is None:
            transport = httpx.HTTPTransport(local_address=local_address)
        self._http = httpx.Client(transport=transport, trust_env=False, follow_redirects=False)

    @property
    def url(self) -> str:
        """The endpoint's base URL."""
        return self._settings.base

    @property
    def api_version(self) -> str:
        """The Scheduled Events api-version asked for."""
        return self._settings.api_version

    # ------------------------------------------------------------------ I/O only

    def _once(self, spec: RequestSpec) -> Answer:
        settings = self._settings
        timeout = httpx.Timeout(settings.read_timeout(), connect=settings.timeout)
        try:
            response = self._http.request(
                spec.method, spec.url, params=dict(spec.params), headers=dict(spec.headers),
                content=spec.content, timeout=timeout,
            )  # fmt: skip
        except httpx.TimeoutException as exc:
            raise EndpointTimeout(f"{spec.url} did not answer in time ({exc!r})",
                                  url=spec.url) from None  # fmt: skip
        except httpx.TransportError as exc:
            raise Transient(
                EndpointUnreachable(f"cannot reach {spec.url}: {exc}", url=spec.url)
            ) from None
        settings.answered = True
        answer = Answer(
            response.status_code,
            {k.lower(): v for k, v in response.headers.items()},
            response.content,
            str(response.url),
        )
        failure = transient(answer)
        if failure is not None:
            raise failure
        return answer

    def _send(self, spec: RequestSpec) -> Answer:
        decider = Decider(self._settings.policy, self._clock, self._jitter)
        try:
            for attempt in tenacity.Retrying(sleep=self._sleep, **decider.options()):
                with attempt:
                    answer = self._once(spec)
        except Transient as failure:
            raise failure.cause from None
        return answer

    # ------------------------------------------------------------------ the API

    def get(self) -> Document:
        """The current document."""
        settings = self._settings
        return read_document(self._send(document_request(settings.base, settings.api_version)))

    def poll(self, previous: Document | None = None) -> DocumentChange:
        """One watch step: a conditional GET against ``previous``; falsy when nothing changed."""
        answer = self._send(self._settings.watch_request(previous))
        return watch_step(previous, answer)[1]

    def approve(self, *event_ids: str) -> None:
        """Ask for ``event_ids`` to start now (200 or an ``EndpointError``)."""
        settings = self._settings
        read_approval(self._send(approve_request(settings.base, settings.api_version, event_ids)))

    def instance(self, api_version: str = INSTANCE_API_VERSION) -> Instance:
        """This VM's instance metadata (compute name, scale set, domains, zone)."""
        return read_instance(self._send(instance_request(self._settings.base, api_version)))

    def watch(
        self, interval: float = 1.0, *, since: Document | None = None
    ) -> Iterator[DocumentChange]:
        """The first document (every event added), then each change, polling every ``interval``.

        With ``since``, changes are relative to that document (resume after an error).
        Errors end the iteration by raising, after the retry rules gave up.
        """
        previous = since
        first = since is None
        while True:
            change = self.poll(previous)
            if first or change:
                yield change
            first = False
            previous = change.document
            self._sleep(interval)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> ScheduledEventsClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
