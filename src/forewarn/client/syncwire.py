"""The blocking twin's HTTP/1.1 for the endpoint: the standard library's ``http.client``.

The VM commands (``forewarn watch``, ``events --url``, ``approve --url``) ask a plain
http:// endpoint a handful of times; importing httpx cost them more start-up than all
the rest of their work. One kept-alive connection, as ``wire`` keeps for the async twin;
a GET that finds it closed by the server meanwhile is sent once more on a new one.
"""

from __future__ import annotations

import http.client

from forewarn.client.core import Answer, RequestSpec, Settings, settle
from forewarn.client.errors import EndpointTimeout
from forewarn.client.origin import USER_AGENT, http_origin, request_target, unreachable

__all__ = ["SyncWire"]


class SyncWire:
    """Requests to one endpoint on one kept-alive ``http.client`` connection."""

    def __init__(self, base: str, local_address: str | None = None) -> None:
        self.host, self.port, self.authority = http_origin(base)
        self.local_address = local_address
        self._connection: http.client.HTTPConnection | None = None

    def request(self, spec: RequestSpec, settings: Settings) -> Answer:
        """Send ``spec``; the answer (raises ``Transient`` when it is worth another try,
        ``EndpointTimeout`` when none came in time)."""
        target, url = request_target(spec, self.authority)
        try:
            status, headers, body = self._exchange(spec, target, settings)
        except TimeoutError:
            self.close()
            raise EndpointTimeout(f"{url} did not answer in time", url=url) from None
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise unreachable(url, exc) from None
        return settle(settings, Answer(status, headers, body, url))

    def _exchange(
        self, spec: RequestSpec, target: str, settings: Settings
    ) -> tuple[int, dict[str, str], bytes]:
        reused = self._connection is not None
        try:
            return self._once(spec, target, settings)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            if not (reused and spec.method == "GET"):
                raise
            self.close()  # the server closed the kept-alive connection meanwhile
            return self._once(spec, target, settings)

    def _once(
        self, spec: RequestSpec, target: str, settings: Settings
    ) -> tuple[int, dict[str, str], bytes]:
        connection = self._connection
        if connection is None:
            source = (self.local_address, 0) if self.local_address else None
            connection = http.client.HTTPConnection(
                self.host, self.port, timeout=settings.timeout, source_address=source
            )
            connection.connect()
            self._connection = connection
        assert connection.sock is not None
        connection.sock.settimeout(settings.read_timeout())
        headers = {"Host": self.authority, "Accept": "*/*", "User-Agent": USER_AGENT,
                   **spec.headers}  # fmt: skip
        connection.request(spec.method, target, body=spec.content, headers=headers)
        response = connection.getresponse()
        body = response.read()
        if response.will_close:
            self.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body

    def close(self) -> None:
        """Drop the connection (the next request opens another)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None
