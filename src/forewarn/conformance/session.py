"""A run's shared state: the wire, the VM it speaks as, every document received.

Every request of a run goes through ``Session.send``, which keeps each Scheduled Events
document that came back (for the document rules) and each rule's exchange (for the rules
that compare answers).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

from forewarn.conformance.documents import Sample
from forewarn.conformance.results import Result, failed, passed
from forewarn.conformance.rules import SCHEDULED, UNKNOWN, Send, rule
from forewarn.conformance.wire import Exchange, Wire
from forewarn.contract import lookup_version

__all__ = ["Session", "document_version"]


def document_version(exchange: Exchange) -> str | None:
    """The api-version of the Scheduled Events document ``exchange`` brought (a GET at a
    known version, answered 200), or None."""
    answer = exchange.answer
    if answer is None or answer.status != 200 or exchange.method != "GET":
        return None
    parts = urlsplit(exchange.target)
    if parts.path.lower().rstrip("/") != SCHEDULED:
        return None
    version = {k.lower(): v for k, v in parse_qsl(parts.query)}.get("api-version", "")
    return version if lookup_version(version) is not None else None


@dataclass
class Session:
    """One run against one endpoint."""

    wire: Wire
    #: The VM the endpoint takes us for (compute.name), once known.
    vm: str | None = None
    #: A fresh EventId no endpoint knows, for approvals that must approve nothing.
    unknown: str = field(default_factory=lambda: str(uuid.uuid4()).upper())
    samples: list[Sample] = field(default_factory=list)
    answers: dict[str, Exchange] = field(default_factory=dict)
    results: list[Result] = field(default_factory=list)

    def send(self, rule_id: str, send: Send, *, each: bool = False) -> Exchange:
        """Send ``send`` for ``rule_id`` (``{unknown}`` filled in) and keep what came."""
        body = send.body.replace(UNKNOWN, self.unknown).encode() if send.body is not None else None
        exchange = self.wire.send(rule_id, send.method, send.target(), send.headers, body,
                                  absolute=send.absolute)  # fmt: skip
        self.answers[rule_id] = exchange
        self.note(exchange, each=each)
        return exchange

    def note(self, exchange: Exchange, *, each: bool = False) -> Sample | None:
        """Keep the document ``exchange`` brought, if it brought one."""
        version, answer = document_version(exchange), exchange.answer
        if version is None or answer is None:
            return None
        raw = answer.json()
        if not isinstance(raw, dict):  # NOT_JSON too
            return None
        sample = Sample(version, raw, answer.body, answer.header("ETag"), each)
        self.samples.append(sample)
        return sample

    def verdict(self, rule_id: str, problem: str | None, note: str = "") -> None:
        """``rule_id`` failed with ``problem`` (what came instead), or passed (None)."""
        r = rule(rule_id)
        self.results.append(failed(r, problem) if problem is not None else passed(r, note))
