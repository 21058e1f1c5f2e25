"""Every error the client raises, in one tree (drawn in ``forewarn.client``'s docstring).

Each error carries what a caller needs to act: the HTTP ``status`` (None when no answer
came), the raw ``body`` and the ``url`` asked.
"""

from __future__ import annotations

import json

__all__ = [
    "BadRequestError",
    "ClientError",
    "DocumentError",
    "EndpointError",
    "EndpointTimeout",
    "EndpointUnreachable",
    "GoneError",
    "InvalidEndpoint",
    "NotFoundError",
    "RateLimitedError",
    "ServerError",
    "error_for_status",
]


class ClientError(Exception):
    """Base of everything ``forewarn.client`` raises."""

    def __init__(
        self, message: str, *, status: int | None = None, body: bytes = b"", url: str = ""
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.body = body
        self.url = url


class InvalidEndpoint(ClientError, ValueError):
    """An endpoint URL (argument or environment variable) that cannot be used."""


class EndpointUnreachable(ClientError):
    """No HTTP answer at all: connection refused or reset, no route (retries exhausted)."""


class EndpointTimeout(EndpointUnreachable):
    """The endpoint accepted the request but did not answer in time."""


class DocumentError(ClientError):
    """A 200 whose body is not what the path serves (not a document, not JSON)."""


class EndpointError(ClientError):
    """The endpoint answered with an error status; ``status`` and ``body`` say which."""

    @property
    def error(self) -> str:
        """The ``error`` text of an IMDS error body, else the body as text."""
        return _error_text(self.body)


class BadRequestError(EndpointError):
    """400: missing/unknown api-version, missing Metadata header, a rejected approval."""


class NotFoundError(EndpointError):
    """404: a path this endpoint does not serve."""


class GoneError(EndpointError):
    """410: the endpoint is not ready (still answering 410 after the retry window)."""


class RateLimitedError(EndpointError):
    """429: too many requests (still, after every retry)."""


class ServerError(EndpointError):
    """5xx: the endpoint failed (still, after every retry)."""


_BY_STATUS: dict[int, type[EndpointError]] = {
    400: BadRequestError,
    404: NotFoundError,
    410: GoneError,
    429: RateLimitedError,
}


def _error_text(body: bytes) -> str:
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):
        return body.decode("utf-8", "replace").strip()
    if isinstance(decoded, dict) and isinstance(decoded.get("error"), str):
        return str(decoded["error"])
    return body.decode("utf-8", "replace").strip()


def error_for_status(status: int, body: bytes, url: str) -> EndpointError:
    """The error for an HTTP error answer, its message naming status, URL and error text."""
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else EndpointError)
    text = _error_text(body)
    message = f"HTTP {status} from {url}" + (f": {text}" if text else "")
    return cls(message, status=status, body=body, url=url)
