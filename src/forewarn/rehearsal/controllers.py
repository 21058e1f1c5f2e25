"""Grading a central controller: a service outside the VMs that learns of maintenance from
Event Grid and acknowledges it through ARM (the Maintenance provider's acknowledge),
graded as the VMs are: when it was told (the first time its webhook took the event's
Scheduled notice), how long after the event's creation, and whether the event was
acknowledged through ARM before NotBefore, too late, or never (the platform started it).

A controller is known by its Event Grid subscription; ARM does not say who acknowledged,
so an acknowledgement through ARM after a subscription was told counts for it. Pure, like
``verdicts``: it reads the facts the tracker recorded.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from forewarn.rehearsal.facts import DeliveryFacts
from forewarn.rehearsal.verdicts import (
    CREATED_STARTED,
    EventVerdict,
    LatencyStats,
    seconds,
    stats,
)

__all__ = [
    "CONTROLLER_VERDICTS",
    "ControllerEvent",
    "ControllerRollup",
    "controller_event",
    "controller_rollups",
]

#: What a controller did about one event, and the grade each verdict gets.
CONTROLLER_VERDICTS = {
    "acknowledged": "ok",  # through ARM, before NotBefore
    "late": "warn",  # through ARM, after NotBefore (or after it started)
    "not-acknowledged": "warn",  # told in time; the platform started it at NotBefore
    "missed": "fail",  # not told before it started
    "approved-elsewhere": "info",  # approved before the controller did (a VM, the operator)
    "delivered": "pending",  # told; still Scheduled, not acknowledged yet
    "waiting": "pending",  # Scheduled, not told yet
    "created-started": "info",  # nothing to acknowledge
    "canceled": "info",  # canceled before it started
    "forced": "info",  # started by the operator before anyone acknowledged it
}
_GRADES = ("fail", "warn", "pending", "ok", "info")


class ControllerEvent(msgspec.Struct, kw_only=True):
    """What one subscription's controller was told of one event and did about it.

    ``delivered_at``: its webhook first took the Scheduled notice (``detected_after``
    from the event's creation); ``acknowledged_at``: the event's approval through ARM
    (``acknowledged_after`` from its creation, ``acknowledged_in_time``: at or before
    NotBefore and before it started)."""

    subscription: str
    event_id: str
    type: str | None
    scope: str | None
    status: str
    created_at: float | None
    not_before: float | None
    started_at: float | None
    first_attempt: float | None
    delivered_at: float | None
    detected_after: float | None
    attempts: int | None
    failed_at: float | None
    acknowledged_at: float | None
    acknowledged_after: float | None
    acknowledged_in_time: bool | None
    approved_by: str | None
    approved_via: str | None
    verdict: str
    grade: str
    note: str


class ControllerRollup(msgspec.Struct, kw_only=True):
    """One subscription (one controller) over the rehearsal: its worst grade, how many
    events it acknowledged in time, its latencies, each event."""

    subscription: str
    verdict: str
    summary: str
    totals: dict[str, int]
    detection: LatencyStats
    acknowledgement: LatencyStats
    events: list[ControllerEvent]


def _created_started(event: EventVerdict) -> bool:
    """As ``verdicts`` says it of an event's facts: there was no notice to act on."""
    if event.start_reason in CREATED_STARTED:
        return True
    started, created = event.started_at, event.created_at
    return (
        started is not None and created is not None and started <= created
        and event.start_reason is None
    )  # fmt: skip


def controller_event(event: EventVerdict, delivery: DeliveryFacts) -> ControllerEvent:
    """The verdict on one subscription's controller for one event."""
    created, not_before, started = event.created_at, event.not_before, event.started_at
    told = delivery.scheduled_at
    detected_after = told - created if told is not None and created is not None else None
    by_arm = event.approved_via == "arm" and event.approved_at is not None
    acked = event.approved_at if by_arm else None
    in_time = None
    if acked is not None and not_before is not None:
        in_time = acked <= not_before and (started is None or acked <= started)
    told_in_time = told is not None and (started is None or told <= started)
    if _created_started(event):
        verdict, note = "created-started", "created Started: nothing to acknowledge"
    elif acked is not None and told is not None and acked >= told:
        if in_time:
            assert not_before is not None
            verdict = "acknowledged"
            note = (
                f"acknowledged through ARM {seconds(acked - told)} after it was told, "
                f"{seconds(not_before - acked)} before NotBefore"
            )
        else:
            verdict, note = "late", "acknowledged through ARM after NotBefore"
    elif event.approved_by is not None and (told is None or (event.approved_at or 0.0) < told):
        who = "the operator" if event.approved_by == "control" else event.approved_by
        via = f" via {event.approved_via}" if event.approved_via else ""
        verdict, note = "approved-elsewhere", f"approved by {who}{via} before it was told"
    elif event.status == "scheduled":
        verdict, note = (
            ("delivered", "not acknowledged yet") if told is not None
            else ("waiting", "not told yet")
        )  # fmt: skip
    elif event.status == "canceled" and started is None:
        verdict, note = "canceled", "canceled before it started"
    elif not told_in_time:
        verdict = "missed"
        if told is not None and started is not None:
            note = f"told {seconds(told - started)} after it started"
        elif delivery.failed_at is not None:
            note = f"never told: delivery given up after {delivery.attempts or 0} attempts"
        else:
            note = "never told before it started"
    elif event.start_reason == "forced" and event.approved_by is None:
        verdict, note = "forced", "started early by the operator"
    elif event.approved_by is not None:
        who = "the operator" if event.approved_by == "control" else event.approved_by
        verdict = "approved-elsewhere"
        note = f"not acknowledged through ARM; approved by {who} via {event.approved_via}"
    else:
        verdict = "not-acknowledged"
        note = "never acknowledged: the platform started it at NotBefore"
    if detected_after is not None and verdict not in ("created-started", "missed"):
        note = f"told after {seconds(max(0.0, detected_after))}; {note}"
    return ControllerEvent(
        subscription=delivery.subscription, event_id=event.id, type=event.type,
        scope=event.scope, status=event.status, created_at=created, not_before=not_before,
        started_at=started, first_attempt=delivery.first_attempt, delivered_at=told,
        detected_after=detected_after, attempts=delivery.attempts,
        failed_at=delivery.failed_at, acknowledged_at=acked,
        acknowledged_after=acked - created if acked is not None and created is not None
        else None,
        acknowledged_in_time=in_time, approved_by=event.approved_by,
        approved_via=event.approved_via, verdict=verdict,
        grade=CONTROLLER_VERDICTS[verdict], note=note,
    )  # fmt: skip


def controller_rollups(
    events: Iterable[EventVerdict], deliveries: Iterable[DeliveryFacts]
) -> list[ControllerRollup]:
    """Every subscription that was sent any of ``events``, worst first, then by name
    (none: no Event Grid subscription, nothing to grade)."""
    by_id = {e.id: e for e in events}
    graded: dict[str, list[ControllerEvent]] = {}
    for delivery in deliveries:
        event = by_id.get(delivery.event_id)
        if event is not None:
            graded.setdefault(delivery.subscription, []).append(controller_event(event, delivery))
    out = []
    for name, rows in graded.items():
        rows.sort(key=lambda r: (r.created_at or 0.0, r.event_id))
        totals = dict.fromkeys(CONTROLLER_VERDICTS, 0)
        for row in rows:
            totals[row.verdict] += 1
        worst = min((r.grade for r in rows), key=_GRADES.index)
        detection = stats(
            r.detected_after for r in rows if r.detected_after is not None and r.verdict != "missed"
        )
        acks = stats(r.acknowledged_after for r in rows if r.acknowledged_after is not None)
        out.append(ControllerRollup(
            subscription=name, verdict=worst, summary=_summary(rows, totals, detection),
            totals=totals, detection=detection, acknowledgement=acks, events=rows,
        ))  # fmt: skip
    out.sort(key=lambda r: (_GRADES.index(r.verdict), r.subscription))
    return out


_SAID = {
    "acknowledged": "acknowledged through ARM before NotBefore",
    "late": "acknowledged late",
    "not-acknowledged": "never acknowledged",
    "missed": "not told before it started",
    "approved-elsewhere": "approved by others first",
    "delivered": "told, not acknowledged yet",
    "waiting": "not told yet",
    "created-started": "created Started",
    "canceled": "canceled",
    "forced": "started by the operator",
}


def _summary(rows: list[ControllerEvent], totals: dict[str, int], detection: LatencyStats) -> str:
    parts = [f"{n} {_SAID[v]}" for v, n in totals.items() if n]
    line = f"{len(rows)} event{'' if len(rows) == 1 else 's'}: " + ", ".join(parts)
    if detection.median is not None and detection.max is not None:
        line += f"; told after {seconds(detection.median)} (median), {seconds(detection.max)} max"
    return line
