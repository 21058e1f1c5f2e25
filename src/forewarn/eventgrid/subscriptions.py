"""An Event Grid subscription as ARM writes it (``Microsoft.EventGrid/eventSubscriptions``):
a webhook destination, the delivery schema, a subject filter and a retry policy; parsed
strictly (a bad one changes nothing) for both the ARM route and the control API."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from forewarn.eventgrid.payloads import EMITTED

__all__ = [
    "SCHEMAS",
    "Slots",
    "Subscription",
    "SubscriptionError",
    "SubscriptionSpec",
    "parse_subscription",
]

SCHEMAS = ("EventGridSchema", "CloudEventSchemaV1_0")
_NAME = re.compile(r"^[A-Za-z0-9-]{3,64}$")
MAX_URL = 2048


class SubscriptionError(ValueError):
    """A subscription body that cannot be accepted (the message names the field)."""


@dataclass(frozen=True, slots=True)
class SubscriptionSpec:
    """What a subscriber asked for."""

    name: str
    endpoint: str
    schema: str = "EventGridSchema"
    scope: str = ""  # an ARM id prefix the subjects must start with ("": all)
    subject_begins_with: str = ""
    subject_ends_with: str = ""
    max_attempts: int = 30
    ttl_minutes: int = 1440

    def wants(self, subject: str) -> bool:
        low = subject.lower()
        return (
            low.startswith(self.scope.lower())
            and low.startswith(self.subject_begins_with.lower())
            and low.endswith(self.subject_ends_with.lower())
        )


@dataclass
class Subscription:
    """A subscription and what became of it: ``state`` is ARM's provisioningState
    (Succeeded, AwaitingManualAction, Failed), ``reason`` why, when not Succeeded."""

    spec: SubscriptionSpec
    state: str = "Creating"
    reason: str = ""
    validation_code: str = ""
    delivered: int = 0
    failed: int = 0
    dropped: int = 0
    pending: int = 0
    last_error: str = ""

    def kept(self) -> str:
        """What a restart needs (``restored`` reads it): the spec and where its handshake
        stands, not the counters (the history keeps every delivery)."""
        return json.dumps({
            "spec": asdict(self.spec), "state": self.state, "reason": self.reason,
            "validation_code": self.validation_code,
        })  # fmt: skip

    @classmethod
    def restored(cls, kept: str) -> Subscription:
        """A subscription as ``kept`` wrote it (``ValueError``: not one)."""
        try:
            data = json.loads(kept)
            return cls(
                SubscriptionSpec(**data["spec"]), str(data["state"]), str(data["reason"]),
                str(data["validation_code"]),
            )  # fmt: skip
        except (TypeError, KeyError, AttributeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a kept subscription: {exc}") from None

    def out(self) -> dict[str, Any]:
        """The subscription as ARM shows it, with forewarn's delivery counters."""
        s = self.spec
        return {
            "name": s.name,
            "type": "Microsoft.EventGrid/eventSubscriptions",
            "properties": {
                "topic": s.scope or None,
                "provisioningState": self.state,
                "destination": {
                    "endpointType": "WebHook",
                    "properties": {"endpointBaseUrl": _base(s.endpoint)},
                },
                "filter": {
                    "includedEventTypes": [EMITTED],
                    "subjectBeginsWith": s.subject_begins_with,
                    "subjectEndsWith": s.subject_ends_with,
                },
                "eventDeliverySchema": s.schema,
                "retryPolicy": {
                    "maxDeliveryAttempts": s.max_attempts,
                    "eventTimeToLiveInMinutes": s.ttl_minutes,
                },
            },
            "forewarn": {
                "endpoint": s.endpoint,
                "reason": self.reason,
                "delivered": self.delivered,
                "failed": self.failed,
                "dropped": self.dropped,
                "pending": self.pending,
                "lastError": self.last_error,
            },
        }


class Slots:
    """At most ``limit`` subscriptions, counting those whose handshake is still awaited:
    a creation reserves its name before it awaits anything, so concurrent creations
    cannot all pass the check and be acknowledged beyond what is kept and resumed."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._reserved: set[str] = set()

    @contextmanager
    def reserve(self, key: str, existing: Collection[str], *, replace: bool) -> Iterator[None]:
        """Hold ``key`` while a creation runs (released however it ends); refused
        (``SubscriptionError``) when it is being created already, exists and may not be
        replaced, or would pass the limit."""
        if key in self._reserved:
            raise SubscriptionError(f"a subscription called {key!r} is being created already")
        if key in existing and not replace:
            raise SubscriptionError(f"a subscription called {key!r} exists already")
        taken = len(existing) + len(self._reserved - set(existing))
        if key not in existing and taken >= self.limit:
            raise SubscriptionError(
                f"at most {self.limit} subscriptions (counting those being created): "
                "delete one first"
            )
        self._reserved.add(key)
        try:
            yield
        finally:
            self._reserved.discard(key)


def _base(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def _object(value: Any, path: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SubscriptionError(f"{path} must be an object")
    return value


def _text(value: Any, path: str, limit: int = 1024) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > limit:
        raise SubscriptionError(f"{path} must be a string of at most {limit} characters")
    return value


def _int(value: Any, path: str, low: int, high: int, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SubscriptionError(f"{path} must be an integer from {low} to {high}")
    return value


def check_endpoint(url: Any, path: str) -> str:
    if not isinstance(url, str) or not url:
        raise SubscriptionError(f"{path} is required: the webhook's http(s) URL")
    if len(url) > MAX_URL:
        raise SubscriptionError(f"{path} is longer than {MAX_URL} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise SubscriptionError(f"{path} is not a valid URL: {exc}") from None
    del port
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SubscriptionError(f"{path} must be an http:// or https:// URL with a host")
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise SubscriptionError(f"{path} must not contain spaces or control characters")
    return url


def parse_subscription(name: Any, body: Any, scope: str = "") -> SubscriptionSpec:
    """``body`` is ARM's ``{"properties": {"destination": ..., ...}}``."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise SubscriptionError(
            "name must be 3 to 64 letters, digits and hyphens (an Event Grid subscription name)"
        )
    props = _object(_object(body, "body").get("properties"), "properties")
    dest = _object(props.get("destination"), "properties.destination")
    kind = dest.get("endpointType")
    if kind != "WebHook":
        raise SubscriptionError(
            "properties.destination.endpointType must be WebHook (the only destination "
            f"forewarn delivers to), got {str(kind)[:40]!r}"
        )
    dprops = _object(dest.get("properties"), "properties.destination.properties")
    endpoint = check_endpoint(
        dprops.get("endpointUrl"), "properties.destination.properties.endpointUrl"
    )
    schema = props.get("eventDeliverySchema", "EventGridSchema")
    if schema not in SCHEMAS:
        raise SubscriptionError(
            f"properties.eventDeliverySchema must be one of {', '.join(SCHEMAS)}"
        )
    flt = _object(props.get("filter"), "properties.filter")
    types = flt.get("includedEventTypes")
    if types is not None and (
        not isinstance(types, list) or any(t != EMITTED for t in types) or not types
    ):
        raise SubscriptionError(f"properties.filter.includedEventTypes may only list {EMITTED}")
    retry = _object(props.get("retryPolicy"), "properties.retryPolicy")
    return SubscriptionSpec(
        name=name,
        endpoint=endpoint,
        schema=str(schema),
        scope=scope,
        subject_begins_with=_text(flt.get("subjectBeginsWith"), "filter.subjectBeginsWith"),
        subject_ends_with=_text(flt.get("subjectEndsWith"), "filter.subjectEndsWith"),
        max_attempts=_int(
            retry.get("maxDeliveryAttempts"), "properties.retryPolicy.maxDeliveryAttempts",
            1, 30, 30,
        ),
        ttl_minutes=_int(
            retry.get("eventTimeToLiveInMinutes"),
            "properties.retryPolicy.eventTimeToLiveInMinutes", 1, 1440, 1440,
        ),
    )  # fmt: skip
