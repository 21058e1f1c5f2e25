"""httpx at the edge, shared by both twins: the arguments of one request, and what an
httpx answer or failure means in the core's terms.

Only the call itself (``client.request`` or ``await client.request``) differs between the
twins; everything around it lives here, so their behaviour cannot drift apart.
"""

from __future__ import annotations

from typing import Any

import httpx

from forewarn.client.core import Answer, RequestSpec, Settings, Transient, settle
from forewarn.client.errors import ClientError, EndpointTimeout, EndpointUnreachable

__all__ = ["HTTPX_OPTIONS", "answer_of", "failure_of", "request_options"]

#: Options of both twins' httpx clients: proxies never apply (the endpoint is link-local)
#: and a redirect is an answer, not something to follow.
HTTPX_OPTIONS: dict[str, Any] = {"trust_env": False, "follow_redirects": False}


def request_options(spec: RequestSpec, settings: Settings) -> dict[str, Any]:
    """Keyword arguments of ``httpx.Client.request`` for ``spec`` under ``settings``."""
    return {
        "method": spec.method,
        "url": spec.url,
        "params": dict(spec.params),
        "headers": dict(spec.headers),
        "content": spec.content,
        "timeout": httpx.Timeout(settings.read_timeout(), connect=settings.timeout),
    }


def failure_of(spec: RequestSpec, exc: httpx.TransportError) -> ClientError:
    """What no answer means: a timeout is final, a refused or reset connection transient."""
    if isinstance(exc, httpx.TimeoutException):
        return EndpointTimeout(f"{spec.url} did not answer in time ({exc!r})", url=spec.url)
    return Transient(EndpointUnreachable(f"cannot reach {spec.url}: {exc}", url=spec.url))


def answer_of(response: httpx.Response, settings: Settings) -> Answer:
    """The core's Answer of ``response``; raises Transient when it is worth another try."""
    answer = Answer(
        response.status_code,
        {k.lower(): v for k, v in response.headers.items()},
        response.content,
        str(response.url),
    )
    return settle(settings, answer)
