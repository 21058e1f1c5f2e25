"""The I/O-free core both twins share: what to send, what an answer means, when to retry.

Nothing here touches a socket, a clock or a random source; the sync and async clients
only carry out what these functions decide, so both behave identically by construction.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, TypedDict, TypeVar

from forewarn.client.changes import DocumentChange, diff_documents
from forewarn.client.endpoint import resolve_endpoint
from forewarn.client.errors import (
    ClientError,
    DocumentError,
    EndpointError,
    GoneError,
    error_for_status,
)
from forewarn.contract import (
    Document,
    DocumentFormatError,
    Instance,
    parse_document,
    parse_instance,
)

_T = TypeVar("_T")

__all__ = [
    "DEFAULT_API_VERSION",
    "INSTANCE_API_VERSION",
    "Answer",
    "ClientOptions",
    "OnDocument",
    "RequestSpec",
    "RetryPolicy",
    "Settings",
    "Transient",
    "Watch",
    "approve_request",
    "document_request",
    "instance_request",
    "read_approval",
    "read_document",
    "read_instance",
    "settle",
    "transient",
    "watch_step",
]

DEFAULT_API_VERSION = "2020-07-01"
INSTANCE_API_VERSION = "2021-02-01"
SCHEDULED_EVENTS_PATH = "/metadata/scheduledevents"
INSTANCE_PATH = "/metadata/instance"


class RequestSpec:
    """One HTTP request, described; the twins send it. (A plain slotted class, as ``Answer``
    and ``Settings``: nothing compares or copies them, and they are made on every poll.)"""

    __slots__ = ("content", "headers", "method", "params", "url")

    def __init__(
        self,
        method: str,
        url: str,
        params: Mapping[str, str],
        headers: Mapping[str, str],
        content: bytes | None = None,
    ) -> None:
        self.method: Final = method
        self.url: Final = url
        self.params: Final = params
        self.headers: Final = headers
        self.content: Final = content


class Answer:
    """What came back, reduced to what the interpretation needs."""

    __slots__ = ("body", "headers", "status", "url")

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes, url: str) -> None:
        self.status: Final = status
        self.headers: Final = headers
        self.body: Final = body
        self.url: Final = url


def document_request(base: str, api_version: str, etag: str | None = None) -> RequestSpec:
    """GET the document; with ``etag`` it is conditional (If-None-Match, 304 when unchanged)."""
    headers = {"Metadata": "true"}
    if etag is not None:
        headers["If-None-Match"] = etag
    return RequestSpec("GET", base + SCHEDULED_EVENTS_PATH, {"api-version": api_version}, headers)


def approve_request(base: str, api_version: str, event_ids: tuple[str, ...]) -> RequestSpec:
    """POST StartRequests for ``event_ids`` (one call for all, as the endpoint allows)."""
    if not event_ids:
        raise ValueError("approve() needs at least one event id")
    for event_id in event_ids:
        if not isinstance(event_id, str) or not event_id.strip():
            raise ValueError(f"event ids must be non-empty strings, got {event_id!r}")
    ids = [{"EventId": i.strip()} for i in event_ids]
    body = json.dumps({"StartRequests": ids}, separators=(",", ":")).encode()
    headers = {"Metadata": "true", "Content-Type": "application/json"}
    return RequestSpec(
        "POST", base + SCHEDULED_EVENTS_PATH, {"api-version": api_version}, headers, body
    )


def instance_request(base: str, api_version: str = INSTANCE_API_VERSION) -> RequestSpec:
    """GET ``/metadata/instance`` (compute name, scale set, domains, zone)."""
    return RequestSpec("GET", base + INSTANCE_PATH, {"api-version": api_version},
                       {"Metadata": "true"})  # fmt: skip


def _raise_for_status(answer: Answer) -> None:
    if answer.status >= 400:
        raise error_for_status(answer.status, answer.body, answer.url)


def _expect_ok(answer: Answer, meaning: str) -> None:
    """An error status raises its error; any status but 200 says ``meaning``."""
    _raise_for_status(answer)
    if answer.status != 200:
        raise EndpointError(
            f"HTTP {answer.status} from {answer.url}: {meaning}",
            status=answer.status, body=answer.body, url=answer.url,
        )  # fmt: skip


def _parsed(answer: Answer, parse: Callable[[bytes], _T]) -> _T:
    """``parse(answer.body)``; a body that is not what was asked for is a DocumentError."""
    try:
        return parse(answer.body)
    except DocumentFormatError as exc:
        raise DocumentError(
            f"{answer.url} answered {answer.status} with {exc}",
            status=answer.status, body=answer.body, url=answer.url,
        ) from None  # fmt: skip


def read_document(answer: Answer, previous: Document | None = None) -> Document:
    """The document an answer carries; a 304 means ``previous`` still holds."""
    if answer.status == 304 and previous is not None:
        return previous
    _expect_ok(answer, "expected a document")
    return _parsed(answer, lambda body: parse_document(body, etag=answer.headers.get("etag")))


def read_approval(answer: Answer) -> None:
    """An approval succeeded (200) or raises the endpoint's error."""
    _expect_ok(answer, "approval not confirmed")


def read_instance(answer: Answer) -> Instance:
    """The instance metadata an answer carries."""
    _raise_for_status(answer)
    return _parsed(answer, parse_instance)


class Transient(ClientError):
    """Marks a failure the policy may retry; never escapes the twins (``cause`` does)."""

    def __init__(self, cause: ClientError, retry_after: float | None = None) -> None:
        super().__init__(cause.message, status=cause.status, body=cause.body, url=cause.url)
        self.cause = cause
        self.retry_after = retry_after


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after", "").strip()
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def transient(answer: Answer) -> Transient | None:
    """410, 429 and 5xx are worth another try; anything else is final."""
    if answer.status == 410 or answer.status == 429 or answer.status >= 500:
        return Transient(
            error_for_status(answer.status, answer.body, answer.url), _retry_after(answer.headers)
        )
    return None


def settle(settings: Settings, answer: Answer) -> Answer:
    """``answer`` came (every later call waits only ``timeout``); raises Transient when it
    is worth another try. Every transport's answer ends here."""
    settings.answered = True
    failure = transient(answer)
    if failure is not None:
        raise failure
    return answer


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When to try again, as the Scheduled Events articles advise.

    410 (the endpoint is getting ready) is retried for ``gone_for`` seconds; 429, 5xx and
    connection failures ``max_retries`` times, with full-jitter exponential back-off from
    ``backoff`` up to ``backoff_max`` seconds (a 429's Retry-After wins when it is longer).
    """

    gone_for: float = 70.0
    max_retries: int = 5
    backoff: float = 0.5
    backoff_max: float = 10.0
    gone_interval: float = 1.0

    def __post_init__(self) -> None:
        for name in ("gone_for", "backoff", "backoff_max", "gone_interval"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries!r}")

    def delay(
        self, failure: Transient, attempt: int, elapsed: float, jitter: float
    ) -> float | None:
        """Seconds to wait before attempt ``attempt + 1``, or None to give up.

        ``attempt`` counts attempts made so far (1 after the first), ``elapsed`` is the
        time since the first, and ``jitter`` a uniform draw from [0, 1).
        """
        if isinstance(failure.cause, GoneError):
            left = self.gone_for - elapsed
            if left <= 0:
                return None
            step = min(self.gone_interval * (0.5 + jitter), left)
            return max(step, 0.0)
        if attempt > self.max_retries:
            return None
        ceiling = min(self.backoff_max, self.backoff * 2.0 ** (attempt - 1))
        wait = ceiling * jitter
        if failure.retry_after is not None:
            wait = max(wait, min(failure.retry_after, self.backoff_max))
        return wait


class ClientOptions(TypedDict, total=False):
    """What both twins take as keywords (defaults in ``Settings.create``).

    ``api_version`` of Scheduled Events (default 2020-07-01); ``local_address`` to bind
    (a VM with several NICs); ``timeout`` of each call (10 s) and ``first_call_timeout``
    until the endpoint first answers (130 s: enabling Scheduled Events can take two
    minutes); ``retry_gone_for`` (70 s of 410 retries); ``max_retries`` (5), ``backoff``
    (0.5 s) and ``backoff_max`` (10 s) for 429, 5xx and refused connections.
    """

    api_version: str
    local_address: str | None
    timeout: float
    first_call_timeout: float
    retry_gone_for: float
    max_retries: int
    backoff: float
    backoff_max: float


class Settings:
    """What a client was configured with, plus the one bit of state timeouts depend on."""

    __slots__ = ("answered", "api_version", "base", "first_call_timeout", "policy", "timeout")

    def __init__(
        self,
        base: str,
        api_version: str,
        timeout: float,
        first_call_timeout: float,
        policy: RetryPolicy,
        answered: bool = False,
    ) -> None:
        for name, value in (("timeout", timeout), ("first_call_timeout", first_call_timeout)):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        self.base = base
        self.api_version = api_version
        self.timeout = timeout
        self.first_call_timeout = first_call_timeout
        self.policy = policy
        self.answered = answered

    @classmethod
    def create(
        cls,
        url: str | None,
        *,
        custom_transport: bool,
        api_version: str = DEFAULT_API_VERSION,
        local_address: str | None = None,
        timeout: float = 10.0,
        first_call_timeout: float = 130.0,
        retry_gone_for: float = 70.0,
        max_retries: int = 5,
        backoff: float = 0.5,
        backoff_max: float = 10.0,
    ) -> Settings:
        """A twin's settings from its ``ClientOptions`` (the defaults of both twins)."""
        if custom_transport and local_address is not None:
            raise ValueError("give local_address or transport, not both")
        policy = RetryPolicy(gone_for=retry_gone_for, max_retries=max_retries,
                             backoff=backoff, backoff_max=backoff_max)  # fmt: skip
        return cls(resolve_endpoint(url), api_version, timeout, first_call_timeout, policy)

    def read_timeout(self) -> float:
        """Long until the endpoint first answers (enablement may take two minutes)."""
        return self.timeout if self.answered else max(self.timeout, self.first_call_timeout)

    def document_request(self) -> RequestSpec:
        """GET the document (unconditionally)."""
        return document_request(self.base, self.api_version)

    def approve_request(self, event_ids: tuple[str, ...]) -> RequestSpec:
        """POST StartRequests for ``event_ids``."""
        return approve_request(self.base, self.api_version, event_ids)

    def instance_request(self, api_version: str) -> RequestSpec:
        """GET the instance metadata at ``api_version``."""
        return instance_request(self.base, api_version)

    def watch_request(self, previous: Document | None) -> RequestSpec:
        """A watch step's request: conditional when the last document had an ETag."""
        etag = previous.etag if previous is not None else None
        return document_request(self.base, self.api_version, etag)


def watch_step(previous: Document | None, answer: Answer) -> tuple[Document, DocumentChange]:
    """The document after one watch poll and what changed (falsy when nothing did).

    A 304, or a document with the incarnation and events already seen, is no change.
    """
    document = read_document(answer, previous)
    if (
        previous is not None
        and document.incarnation == previous.incarnation
        and (document.events == previous.events)
    ):
        return document, DocumentChange(document=document, previous=previous)
    return document, diff_documents(previous, document)


#: Called with each document a watch receives (not a 304) and the bytes it came as.
OnDocument = Callable[[Document, bytes], None]


class Watch:
    """A watch's progress: the first poll reports every event, later ones only changes.

    The twins loop ``request`` → send → ``take`` → sleep; ``take`` is the news to hand
    on, or None when nothing changed.
    """

    def __init__(self, since: Document | None, on_document: OnDocument | None = None) -> None:
        self.previous = since
        self.first = since is None
        self.on_document = on_document
        #: The last 200's body when it came with no ETag (such an endpoint answers every
        #: poll with the whole document): the same bytes again are the same document,
        #: unparsed. With an ETag, a 304 says so and the bytes are not kept.
        self._body: bytes | None = None

    def request(self, settings: Settings) -> RequestSpec:
        """The next poll's request."""
        return settings.watch_request(self.previous)

    def take(self, answer: Answer) -> DocumentChange | None:
        """The change this answer brings (None when nothing changed after the first)."""
        previous = self.previous
        same = self._body is not None and answer.status == 200 and answer.body == self._body
        if same and previous is not None:
            document, change = previous, DocumentChange(document=previous, previous=previous)
        else:
            document, change = watch_step(previous, answer)
            if answer.status == 200:
                self._body = None if "etag" in answer.headers else answer.body
        if self.on_document is not None and answer.status == 200:
            self.on_document(document, answer.body)
        news = change if self.first or change else None
        self.first = False
        self.previous = document
        return news
