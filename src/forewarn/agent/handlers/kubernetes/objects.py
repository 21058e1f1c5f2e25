"""The Kubernetes objects the agent writes about its node, built as plain data.

The ``VMEventScheduled`` condition copies what AKS's node-problem-detector plugin sets
(reason ``VMEventScheduled``, message ``<Type> <Status>: <NotBefore>. DurationInSeconds:
N. <Description>``; ``NoVMEventScheduled`` when clear), so tools that watch it can be
rehearsed. Events are ``v1`` Events on the node, named as the kubelet names its own.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from forewarn.agent.events import EventView
from forewarn.contract import format_rfc1123

__all__ = [
    "CONDITION",
    "CORDONED",
    "EXCLUDE_LB",
    "LB_EXCLUDED",
    "TAINTED",
    "condition_patch",
    "event_object",
    "npd_message",
]

#: The node condition AKS's node-problem-detector sets for a scheduled event.
CONDITION = "VMEventScheduled"
#: The well-known label that takes a node out of external load balancers.
EXCLUDE_LB = "node.kubernetes.io/exclude-from-external-load-balancers"
#: Annotations marking what this agent did, so it undoes only that, and only once no
#: event holds it (value: the ids of the events holding it, comma-separated).
TAINTED = "forewarn.io/tainted"
CORDONED = "forewarn.io/cordoned"
LB_EXCLUDED = "forewarn.io/excluded-from-lb"
COMPONENT = "forewarn-agent"


def _stamp(moment: float) -> str:
    return datetime.fromtimestamp(int(moment), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def npd_message(event: EventView) -> str:
    """The condition's message, as node-problem-detector words it."""
    not_before = format_rfc1123(event.not_before.timestamp()) if event.not_before else ""
    return (
        f"{event.event_type} {event.status}: {not_before}. "
        f"DurationInSeconds: {event.duration_seconds}. {event.description}"
    )


def condition_patch(event: EventView | None, now: float) -> dict[str, Any]:
    """A strategic-merge patch of node status: the condition set (an event) or clear."""
    if event is None:
        status, reason, message = "False", "NoVMEventScheduled", "VM has no scheduled event"
    else:
        status, reason, message = "True", CONDITION, npd_message(event)
    condition = {
        "type": CONDITION,
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": _stamp(now),
        "lastTransitionTime": _stamp(now),
    }
    return {"status": {"conditions": [condition]}}


def event_object(
    node: str, reason: str, message: str, now: float, warning: bool = False,
    *, namespace: str = "default",
) -> dict[str, Any]:  # fmt: skip
    """A ``v1`` Event about ``node`` (by default in ``default``, where node events live)."""
    name = f"{node}.{int(now * 1e9):x}-{reason.lower()}"  # the kubelet's form, plus the reason
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node},
        "reason": reason,
        "message": message,
        "type": "Warning" if warning else "Normal",
        "source": {"component": COMPONENT, "host": node},
        "reportingComponent": COMPONENT,
        "reportingInstance": node,
        "firstTimestamp": _stamp(now),
        "lastTimestamp": _stamp(now),
        "count": 1,
    }
