"""``--follow``: wait for events, follow each to its end, approve only when told.

Polls the document as real clients do (once a second by default, conditionally with the
last ETag), notes for each EventId when it was first seen, Started and removed, and what
went wrong on the way: an incarnation that did not move with the document, a status that
went backwards, an event replaced by a new EventId when its status changed. With
``approve`` it approves the Scheduled events listing this VM, all in one POST, and tells
an endpoint that honours only the first id of a StartRequests from one whose event waits
for another tenant: it approves the laggards again, alone, and sees whether they start.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from forewarn.conformance.documents import Sample
from forewarn.conformance.lifecycle import Approval, Sighting, hms
from forewarn.conformance.rules import Send
from forewarn.conformance.session import Session
from forewarn.contract import parse_not_before
from forewarn.contract.model import resource_matches

__all__ = ["Follower"]

_JSON = (("Metadata", "true"), ("Content-Type", "application/json"))


def _not_before(event: dict[str, Any]) -> datetime | None:
    value = event.get("NotBefore")
    try:
        return parse_not_before(value) if isinstance(value, str) else None
    except ValueError:
        return None


class Follower:
    """Follows the events of one endpoint, as the VM of ``session``."""

    def __init__(
        self,
        session: Session,
        *,
        interval: float,
        timeout: float,
        approve: bool,
        tell: Callable[[str], None],
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.session = session
        self.interval = interval
        self.timeout = timeout
        self.approve = approve
        self.tell = tell
        self.sleep = sleep
        #: How long an approval gets to take effect before the kit looks again (P1).
        self.settle = max(3 * interval, 2.0)
        self.sightings: dict[str, Sighting] = {}
        self.approvals: list[Approval] = []
        self.steps: list[str] = []
        self.replaced: list[str] = []
        self.deleted = False
        self._last: tuple[Any, str] | None = None  # (incarnation, events as JSON)
        self._etag: str | None = None
        self._checks: list[tuple[float, Approval, list[str]]] = []

    # ---- the loop

    def run(self) -> None:
        """Poll until every event seen is removed (or the VM deleted), or ``timeout``."""
        deadline = time.monotonic() + self.timeout
        self.tell(f"following events for up to {self.timeout:g} s (Ctrl-C stops): trigger "
                  "one, or wait")  # fmt: skip
        first = True
        while time.monotonic() < deadline:
            sample = self._poll()
            now = time.time()
            if self.deleted:
                self._gone(now)
                break
            if sample is not None:
                self._update(sample, now, first)
                first = False
            if self.approve:
                self._approve(now)
            self._check_laggards(now)
            if self.sightings and not self._live() and not self._checks:
                break
            self.sleep(self.interval)
        else:
            self.tell(f"{hms(time.time())} --timeout ({self.timeout:g} s) reached")

    def _live(self) -> list[Sighting]:
        return [s for s in self.sightings.values() if s.removed_at is None]

    def _poll(self) -> Sample | None:
        headers: tuple[tuple[str, str], ...] = (("Metadata", "true"),)
        if self._etag:
            headers += (("If-None-Match", self._etag),)
        count = len(self.session.samples)
        exchange = self.session.send("follow", Send(headers=headers))
        answer = exchange.answer
        if answer is not None and answer.status == 404:
            self.deleted = True
        if len(self.session.samples) == count:
            return None
        sample = self.session.samples[-1]
        self._etag = sample.etag
        return sample

    def _gone(self, now: float) -> None:
        self.tell(f"{hms(now)} the endpoint answers 404: the platform deleted this VM")
        for s in self._live():
            s.removed_at = now

    # ---- what a document says

    def _update(self, sample: Sample, now: float, first: bool) -> None:
        incarnation = sample.incarnation()
        events = [e for e in sample.events()
                  if isinstance(e, dict) and isinstance(e.get("EventId"), str)]  # fmt: skip
        key = json.dumps(events, sort_keys=True)
        if self._last is not None and key != self._last[1]:
            before = self._last[0]
            if not (isinstance(incarnation, int) and isinstance(before, int)
                    and incarnation > before):  # fmt: skip
                self.steps.append(f"the events changed, DocumentIncarnation {before!r} -> "
                                  f"{incarnation!r}")  # fmt: skip
        self._last = (incarnation, key)
        current = {e["EventId"]: e for e in events}
        if first and not current:
            self.tell(f"{hms(now)} #{incarnation} no event yet: waiting")
        gone = [s for s in self._live() if s.event_id not in current]
        for s in gone:
            s.removed_at = now
            self.tell(f"{hms(now)} #{incarnation} {s.event_id} removed")
        new = [e for i, e in current.items() if i not in self.sightings]
        for event in new:
            self._seen(event, now, first, incarnation)
        self._replacements(gone, new)
        for event_id, event in current.items():
            self._status(self.sightings[event_id], str(event.get("EventStatus")), now,
                         incarnation)  # fmt: skip

    def _seen(self, event: dict[str, Any], now: float, first: bool, incarnation: Any) -> None:
        duration = event.get("DurationInSeconds")
        status = str(event.get("EventStatus"))
        resources = event.get("Resources")
        s = Sighting(
            event_id=event["EventId"],
            event_type=str(event.get("EventType")),
            source=str(event.get("EventSource", "-")),
            resources=[str(r) for r in resources] if isinstance(resources, list) else [],
            duration=duration if isinstance(duration, int) else None,
            first_seen=now,
            first_status=status,
            at_start=first,
            not_before=_not_before(event),
            started_at=now if status == "Started" else None,
        )
        self.sightings[s.event_id] = s
        when = ""
        if s.not_before is not None:
            when = f" in {s.not_before.timestamp() - now:.0f}s"
        self.tell(f"{hms(now)} #{incarnation} {s.event_id} {s.event_type} {status}{when}")

    def _status(self, s: Sighting, status: str, now: float, incarnation: Any) -> None:
        before = s.status
        if status == before:
            return
        s.status = status
        if before == "Started" and status == "Scheduled":
            s.backwards.append(f"Started, then Scheduled again at incarnation {incarnation}")
        if status == "Started" and s.started_at is None:
            s.started_at = now
        self.tell(f"{hms(now)} #{incarnation} {s.event_id} {status}")

    def _replacements(self, gone: list[Sighting], new: list[dict[str, Any]]) -> None:
        """An event removed as another appears, same type and VMs, another status: the
        same event under a new EventId."""
        for old in gone:
            for event in new:
                same = (str(event.get("EventType")) == old.event_type
                        and event.get("Resources") == old.resources
                        and str(event.get("EventStatus")) != old.status)  # fmt: skip
                if same:
                    self.replaced.append(
                        f"{old.event_id} ({old.status}) came back as "
                        f"{event['EventId']} ({event.get('EventStatus')})"
                    )

    # ---- approving

    def _mine(self, s: Sighting) -> bool:
        vm = self.session.vm
        return vm is None or any(resource_matches(r, vm) for r in s.resources)

    def _post(self, ids: list[str], now: float) -> Approval:
        body = json.dumps({"StartRequests": [{"EventId": i} for i in ids]})
        exchange = self.session.send("approve", Send("POST", headers=_JSON, body=body))
        answer = exchange.answer
        approval = Approval(now, ids, answer.status if answer else None,
                            answer.body if answer else b"")  # fmt: skip
        self.tell(f"{hms(now)} approved {', '.join(ids)}: {exchange.seen()}")
        return approval

    def _approve(self, now: float) -> None:
        todo = [s for s in self._live() if s.status == "Scheduled"
                and s.approved_at is None and self._mine(s)]  # fmt: skip
        if not todo:
            return
        approval = self._post([s.event_id for s in todo], now)
        self.approvals.append(approval)
        for s in todo:
            s.approved_at = now
        if len(todo) > 1:
            self._checks.append((now + self.settle, approval, []))

    def _started(self, event_id: str) -> bool:
        s = self.sightings[event_id]
        return s.status == "Started" or s.removed_at is not None

    def _check_laggards(self, now: float) -> None:
        """P1: approved together, started apart? Approve the laggards alone and see."""
        keep = []
        for due, approval, alone in self._checks:
            if now < due:
                keep.append((due, approval, alone))
                continue
            if alone:  # the second look: did approving alone start them?
                for event_id in alone:
                    s = self.sightings[event_id]
                    passed_nb = s.not_before is not None and s.not_before.timestamp() <= now
                    if self._started(event_id) and not passed_nb:
                        approval.alone_started.append(event_id)
                    else:
                        approval.alone_waited.append(event_id)
                continue
            started = [i for i in approval.ids if self._started(i)]
            waiting = [i for i in approval.ids if not self._started(i)]
            if started and waiting:
                for event_id in waiting:
                    self._post([event_id], now)
                keep.append((now + self.settle, approval, waiting))
        self._checks = keep
