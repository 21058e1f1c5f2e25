"""Fault steps of scenario files: an endpoint fault (``forewarn fault add``) injected at a
point of the timeline, checked on load as the control API would check it.

    - {at: 0s, fault: {kind: status, status: 410, scope: web, for: 70s}}
    - {at: +5m, clear_faults: true}

Kept apart from ``model.py`` (which calls ``check_fault`` for a step's ``fault:``) so that
each step kind stays small; the runner sends ``fault_body`` to ``/api/v1/faults``.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from forewarn.contract.durations import parse_duration

__all__ = [
    "FAULT_KINDS",
    "FAULT_STATUSES",
    "FaultSpec",
    "FaultStepError",
    "check_fault",
    "fault_body",
    "fault_summary",
]

#: The endpoint faults a step may inject (the control API's ``/api/v1/faults``).
FAULT_KINDS = ("status", "latency", "timeout", "reset", "cotenant")
#: What a status fault may answer.
FAULT_STATUSES = (410, 429, 500, 503)
#: What each kind needs (and only it takes).
_NEEDS = {"status": "status", "latency": "latency", "cotenant": "rate"}
#: The largest latency (real seconds) and co-tenant rate (requests/s) the server takes.
_LIMITS = {"latency": 300.0, "rate": 1000.0}

Duration = float | str


def _doc(text: str) -> msgspec.Meta:
    return msgspec.Meta(description=text)


class FaultSpec(
    msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, rename={"for_": "for"}
):
    """An endpoint fault a step injects: on ``vm``, on ``scope`` or (neither) on the whole
    fleet, ``for`` a while of platform time (none: until a ``clear_faults`` step)."""

    kind: Annotated[str, _doc("status, latency, timeout, reset or cotenant.")]
    vm: Annotated[str | None, _doc("Only this VM.")] = None
    scope: Annotated[str | None, _doc("Only the VMs of this scope.")] = None
    status: Annotated[int | None, _doc("What a status fault answers: 410, 429, 500, 503.")] = None
    for_: Annotated[Duration | None, _doc("How long it lasts (default: until cleared).")] = None
    share: Annotated[float | None, _doc("Share of the requests hit, over 0 up to 1.")] = None
    latency: Annotated[float | None, _doc("Real seconds added to each answer (latency).")] = None
    rate: Annotated[float | None, _doc("Requests/s a co-tenant makes of the VM's 5.")] = None


class FaultStepError(ValueError):
    """A fault that cannot be injected; ``key`` is the path under ``fault`` (``.status``)."""

    def __init__(self, message: str, key: str = "") -> None:
        super().__init__(message)
        self.key = key


def check_fault(fault: FaultSpec) -> float | None:
    """FaultStepError naming the first rule ``fault`` breaks; else how long it lasts
    (platform seconds; None: until cleared)."""
    if fault.kind not in FAULT_KINDS:
        raise FaultStepError(
            f"unknown fault kind {fault.kind!r}; known: {', '.join(FAULT_KINDS)}", ".kind"
        )
    if fault.vm is not None and fault.scope is not None:
        raise FaultStepError("give vm or scope (or neither, for the whole fleet), not both")
    for kind, key in _NEEDS.items():
        given = getattr(fault, key) is not None
        if given and fault.kind != kind:
            raise FaultStepError(f"{key} is only for {kind} faults, not {fault.kind}", f".{key}")
        if not given and fault.kind == kind:
            raise FaultStepError(f"a {kind} fault needs {key}")
    if fault.status is not None and fault.status not in FAULT_STATUSES:
        shown = ", ".join(str(s) for s in FAULT_STATUSES)
        raise FaultStepError(f"status {fault.status} is not one of {shown}", ".status")
    if fault.share is not None and fault.kind == "cotenant":
        raise FaultStepError("a co-tenant polls all the time: share is not for cotenant", ".share")
    if fault.share is not None and not 0 < fault.share <= 1:
        raise FaultStepError(f"share {fault.share:g} must be over 0, up to 1", ".share")
    for key, top in _LIMITS.items():
        value = getattr(fault, key)
        if value is not None and not 0 < value <= top:
            raise FaultStepError(f"{key} {value:g} must be over 0, up to {top:g}", f".{key}")
    if fault.for_ is None:
        return None
    try:
        lasts = parse_duration(fault.for_, "for")
    except ValueError as exc:
        raise FaultStepError(str(exc), ".for") from None
    if lasts <= 0:
        raise FaultStepError("for: must be longer than 0s", ".for")
    return lasts


def fault_body(fault: FaultSpec, lasts: float | None) -> dict[str, Any]:
    """The ``POST /api/v1/faults`` body: ``lasts`` in platform time, as the control API
    takes a fault's window (the server divides it by its ``--time-scale``)."""
    body: dict[str, Any] = {"kind": fault.kind}
    given = {"vm": fault.vm, "scope": fault.scope, "status": fault.status, "share": fault.share,
             "latency_seconds": fault.latency, "rate": fault.rate,
             "duration_seconds": lasts}  # fmt: skip
    return body | {k: v for k, v in given.items() if v is not None}


def fault_summary(fault: FaultSpec, lasts: float | None) -> str:
    """What the fault step does, in a few words."""
    shown = {
        "status": f"HTTP {fault.status}",
        "latency": f"+{fault.latency or 0:g}s latency",
        "cotenant": f"a co-tenant at {fault.rate or 0:g}/s",
    }
    what = shown.get(fault.kind, fault.kind)
    on = fault.vm or fault.scope or "the fleet"
    share = "" if fault.share is None else f" on {fault.share:g} of requests"
    window = "until cleared" if lasts is None else f"for {lasts:g}s"
    return f"fault: {what} on {on}{share} {window}"
