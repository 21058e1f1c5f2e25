"""Approval: whether an event may start early, decided from the rule and the outcomes.

Pure logic. ``plan`` turns (mode, did every handler succeed, the event) into one step:
approve now, vote in the coordination backend, or leave the event alone (it then starts
at NotBefore, as without an agent). ``group`` reads a coordinated event's votes.
Nothing here ever approves an event whose handlers failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from forewarn.agent.config_schema import Approval
from forewarn.agent.coordination import Vote
from forewarn.agent.events import EventView
from forewarn.contract import resource_matches

__all__ = ["Group", "GroupState", "Plan", "Step", "group", "plan"]


class Step(StrEnum):
    APPROVE = "approve"
    VOTE = "vote"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class Plan:
    """The approval step for an event, and why."""

    step: Step
    reason: str
    ready: bool = False


def plan(mode: Approval, handlers_ok: bool, failure: str, event: EventView, vm: str) -> Plan:
    """What to do once the event's handlers are done (``failure`` says which failed)."""
    if mode == Approval.NEVER:
        return Plan(Step.SKIP, "the rule never approves")
    if mode == Approval.COORDINATED:
        if not event.affects(vm):
            return Plan(Step.SKIP, "this VM is not listed, so it has no vote")
        if handlers_ok:
            return Plan(Step.VOTE, "handlers succeeded", ready=True)
        return Plan(Step.VOTE, failure or "a handler failed", ready=False)
    if not handlers_ok:
        return Plan(Step.SKIP, failure or "a handler failed")
    if mode == Approval.SOLO and not (len(event.resources) == 1 and event.affects(vm)):
        return Plan(Step.SKIP, f"solo: the event lists {len(event.resources)} VM(s)")
    return Plan(Step.APPROVE, "handlers succeeded")


class GroupState(StrEnum):
    COMPLETE = "complete"
    BLOCKED = "blocked"
    WAITING = "waiting"


@dataclass(frozen=True, slots=True)
class Group:
    """Where a coordinated event stands: complete, blocked by a no, or waiting for VMs."""

    state: GroupState
    detail: str
    missing: tuple[str, ...] = ()


def group(resources: tuple[str, ...], votes: Mapping[str, Vote]) -> Group:
    """Complete only when every listed VM voted ready; one "not ready" blocks for good."""
    missing: list[str] = []
    for resource in resources:
        vote = next((v for vm, v in votes.items() if resource_matches(resource, vm)), None)
        if vote is None:
            missing.append(resource)
        elif not vote.ready:
            return Group(GroupState.BLOCKED, f"{vote.vm} is not ready: {vote.reason}")
    if missing:
        return Group(GroupState.WAITING, f"waiting for {', '.join(missing)}", tuple(missing))
    return Group(GroupState.COMPLETE, f"all {len(resources)} VM(s) ready")
