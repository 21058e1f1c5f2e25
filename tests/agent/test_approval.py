"""Approval logic: never approve after a failure; coordinated waits for the whole group."""

from __future__ import annotations

import pytest

from forewarn.agent.approval import GroupState, Step, group, plan
from forewarn.agent.config_schema import Approval
from forewarn.agent.coordination import Vote
from tests.agent.helpers import event

SOLO = event(resources=("web-0",))
PAIR = event(resources=("web-0", "web-3"))
OTHERS = event(resources=("web-1", "web-4"))


@pytest.mark.parametrize(
    ("mode", "ok", "ev", "step", "ready"),
    [
        (Approval.NEVER, True, SOLO, Step.SKIP, False),
        (Approval.AFTER_HANDLERS, True, PAIR, Step.APPROVE, False),
        (Approval.AFTER_HANDLERS, False, SOLO, Step.SKIP, False),
        (Approval.SOLO, True, SOLO, Step.APPROVE, False),
        (Approval.SOLO, True, PAIR, Step.SKIP, False),
        (Approval.SOLO, True, OTHERS, Step.SKIP, False),
        (Approval.SOLO, False, SOLO, Step.SKIP, False),
        (Approval.COORDINATED, True, PAIR, Step.VOTE, True),
        (Approval.COORDINATED, False, PAIR, Step.VOTE, False),
        (Approval.COORDINATED, True, OTHERS, Step.SKIP, False),
    ],
)
def test_plan(mode: Approval, ok: bool, ev: object, step: Step, ready: bool) -> None:
    result = plan(mode, ok, "handler drain failed", ev, "web-0")  # type: ignore[arg-type]
    assert (result.step, result.ready) == (step, ready)
    if not ok and step == Step.SKIP:
        assert "handler drain failed" in result.reason


def vote(vm: str, ready: bool = True) -> Vote:
    return Vote(vm, ready, "" if ready else "drain failed", 0.0)


def test_group_completes_only_with_every_listed_vm_ready() -> None:
    listed = ("web-0", "web-3", "web-6")
    assert group(listed, {}).state == GroupState.WAITING
    partial = group(listed, {"web-0": vote("web-0"), "web-6": vote("web-6")})
    assert partial.state == GroupState.WAITING and partial.missing == ("web-3",)
    extra = {"web-0": vote("web-0"), "web-6": vote("web-6"), "web-9": vote("web-9")}
    assert group(listed, extra).state == GroupState.WAITING  # a stranger's vote counts nothing
    done = {vm: vote(vm) for vm in listed}
    assert group(listed, done).state == GroupState.COMPLETE


def test_one_not_ready_blocks_the_group_for_good() -> None:
    listed = ("web-0", "web-3")
    blocked = group(listed, {"web-3": vote("web-3", ready=False)})
    assert blocked.state == GroupState.BLOCKED
    assert "web-3 is not ready: drain failed" in blocked.detail


def test_group_tolerates_the_2017_underscore() -> None:
    assert group(("_web-0", "_web-3"), {"web-0": vote("web-0"), "web-3": vote("web-3")}).state == (
        GroupState.COMPLETE
    )
