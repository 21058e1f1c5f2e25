"""The client's one transport seam: what carries a request to the endpoint and back.

Both twins hand a ``RequestSpec`` to a transport and get an ``Answer`` (the core then
decides what it means: ``settle``). The default transports are the client's own HTTP/1.1
(``syncwire`` for the blocking twin, ``wire`` for the async one); a test plugs in another
with ``transport=`` (``MockTransport``: answers from a function, for both twins).

A transport says that no answer came by raising ``EndpointTimeout`` (none in time) or a
``Transient`` of ``EndpointUnreachable`` (refused, reset, not HTTP: worth another try);
``failure`` makes those of an ``OSError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from forewarn.client.origin import request_target, unreachable
from forewarn.client.urlparts import split

if TYPE_CHECKING:
    from forewarn.client.core import Answer, RequestSpec, Settings
    from forewarn.client.errors import ClientError

__all__ = ["AsyncTransport", "MockTransport", "Transport", "failure", "url_of"]


class Transport(Protocol):
    """What the blocking twin sends through."""

    def send(self, spec: RequestSpec, settings: Settings) -> Answer:
        """The endpoint's answer to ``spec`` (any status); raises when none came."""
        ...

    def close(self) -> None:
        """Drop what the transport holds open."""
        ...


class AsyncTransport(Protocol):
    """What the async twin sends through."""

    async def send_async(self, spec: RequestSpec, settings: Settings) -> Answer:
        """The endpoint's answer to ``spec`` (any status); raises when none came."""
        ...

    def close(self) -> None:
        """Drop what the transport holds open."""
        ...


def url_of(spec: RequestSpec) -> str:
    """The URL ``spec`` asks (its query included): what errors name."""
    return request_target(spec, split(spec.url)[1])[1]


def failure(url: str, exc: Exception) -> ClientError:
    """What no answer means: a timeout is final, anything else worth another try."""
    if isinstance(exc, TimeoutError):
        from forewarn.client.errors import EndpointTimeout

        return EndpointTimeout(f"{url} did not answer in time", url=url)
    return unreachable(url, exc)


class MockTransport:
    """A transport for tests, of both twins: each request is answered by ``handler``.

    ``handler`` gets the ``RequestSpec`` and returns an ``Answer`` (its header names in
    any case; an empty ``url`` is the request's), or raises an ``OSError``: a
    ``TimeoutError`` is a time-out, any other a connection that failed, as on a socket.
    """

    def __init__(self, handler: Callable[[RequestSpec], Answer]) -> None:
        self.handler = handler

    def send(self, spec: RequestSpec, settings: Settings) -> Answer:
        from forewarn.client.core import Answer

        url = url_of(spec)
        try:
            given = self.handler(spec)
        except OSError as exc:
            raise failure(url, exc) from None
        headers = {name.lower(): value for name, value in given.headers.items()}
        return Answer(given.status, headers, given.body, given.url or url)

    async def send_async(self, spec: RequestSpec, settings: Settings) -> Answer:
        return self.send(spec, settings)

    def close(self) -> None:
        """Nothing to drop."""
