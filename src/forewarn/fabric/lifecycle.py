"""Lifecycles as data: the allowed steps of events and operations, and one function
that applies them.

    event:      (new) ─create→ Scheduled ─start→ Started ─remove→ (removed)
                (new) ─create_started→ Started          Scheduled ─cancel→ (removed)
    operation:  scheduled ─start→ started ─finish→ completed
                scheduled ─cancel→ canceled
"""

from __future__ import annotations

from enum import StrEnum

from forewarn.fabric.errors import InvalidTransition

__all__ = ["EventPhase", "Step", "next_event_phase", "next_operation_state"]


class EventPhase(StrEnum):
    """An event's place in its life, including before and after it is visible."""

    NEW = "new"
    SCHEDULED = "Scheduled"
    STARTED = "Started"
    REMOVED = "removed"


class Step(StrEnum):
    """Everything that can happen to an event or an operation."""

    CREATE = "create"
    CREATE_STARTED = "create_started"
    START = "start"
    CANCEL = "cancel"
    REMOVE = "remove"
    FINISH = "finish"


_EVENT_STEPS: dict[tuple[EventPhase, Step], EventPhase] = {
    (EventPhase.NEW, Step.CREATE): EventPhase.SCHEDULED,
    (EventPhase.NEW, Step.CREATE_STARTED): EventPhase.STARTED,
    (EventPhase.SCHEDULED, Step.START): EventPhase.STARTED,
    (EventPhase.SCHEDULED, Step.CANCEL): EventPhase.REMOVED,
    (EventPhase.STARTED, Step.REMOVE): EventPhase.REMOVED,
}

_OPERATION_STEPS: dict[tuple[str, Step], str] = {
    ("scheduled", Step.START): "started",
    ("scheduled", Step.CANCEL): "canceled",
    ("started", Step.FINISH): "completed",
}

_WHY = {
    Step.START: "only a Scheduled event can start",
    Step.CANCEL: "only a Scheduled event can be canceled; a Started one can be completed",
    Step.REMOVE: "only a Started event can be completed",
    Step.FINISH: "only a started operation can finish",
}


def next_event_phase(current: EventPhase, step: Step, what: str = "event") -> EventPhase:
    """The phase after ``step``, or InvalidTransition saying why not."""
    try:
        return _EVENT_STEPS[(current, step)]
    except KeyError:
        reason = _WHY.get(step, "not allowed")
        raise InvalidTransition(
            f"cannot {step.value} {what}: it is {current.value}; {reason}"
        ) from None


def next_operation_state(current: str, step: Step, what: str = "operation") -> str:
    """The operation state after ``step``, or InvalidTransition saying why not."""
    try:
        return _OPERATION_STEPS[(current, step)]
    except KeyError:
        reason = _WHY.get(step, "not allowed")
        raise InvalidTransition(f"cannot {step.value} {what}: it is {current}; {reason}") from None
