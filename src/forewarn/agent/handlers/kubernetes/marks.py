"""The marks on a node: which events hold each thing this agent changed on it.

Each mark is an annotation whose value lists the ids of the events holding it, comma
separated, in the order they took it (an older agent's single id reads as a list of one).
Two events may overlap on one VM (a Redeploy days ahead, then a user's reboot): the node
comes back only when the last event holding a mark lets it go, so one event's recovery
never puts the node in service while another still needs it out.
"""

from __future__ import annotations

from collections.abc import Mapping

from forewarn.agent.handlers.kubernetes.objects import CORDONED, LB_EXCLUDED, TAINTED

__all__ = ["MARKS", "Holders", "holders", "mark_args"]

#: Every mark, in the order they are written and removed.
MARKS = (TAINTED, CORDONED, LB_EXCLUDED)

#: Each mark on a node and the events holding it.
Holders = dict[str, list[str]]


def _ids(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def holders(annotations: Mapping[str, str]) -> Holders:
    """The marks ``annotations`` carry, each with its holders."""
    return {key: _ids(str(annotations[key])) for key in MARKS if key in annotations}


def mark_args(before: Holders, after: Holders) -> list[str]:
    """The ``kubectl annotate`` pairs that turn the marks ``before`` into ``after``."""
    args = []
    for key in MARKS:
        now = after.get(key, [])
        if now and now != before.get(key):
            args.append(f"{key}={','.join(now)}")
        elif not now and key in before:
            args.append(f"{key}-")
    return args
