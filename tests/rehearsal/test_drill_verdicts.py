"""What a 1,000-VM drill got wrong, graded from facts (issue 28): a late approval counted
as one, a deleted VM that never polled shown as polling, a VM whose requests injected
faults answered blamed for not polling, a report since a reset counting the faults of the
drill before it, names cut from an operation's progress. Pure: facts in, verdict out."""

from __future__ import annotations

import msgspec

from forewarn.cli.junit import report_cases
from forewarn.rehearsal import EventFacts, ReactionData, VmPolls, VmReaction, grade
from forewarn.rehearsal.coping import KEPT_TIMES, FaultTally
from forewarn.rehearsal.facts import OperationFacts
from forewarn.rehearsal.report import render_report
from forewarn.rehearsal.rollups import FAULTED, needs_attention
from tests.rehearsal.conftest import Rehearsal

T0 = 1_700_000_000.0


def _preempt(vm: str, *, event_id: str = "e-spot", created: float = T0) -> EventFacts:
    """A Preempt that nobody approved: it started at its NotBefore, 30 s on."""
    return EventFacts(
        id=event_id, operation_id=f"op-{event_id}", kind="spot-eviction", scope_id="spot",
        event_type="Preempt", source="Platform", resources=(vm,), created_at=created,
        not_before=created + 30, started_at=created + 30, start_reason="not_before",
    )  # fmt: skip


def _operation(vm: str, *, event_id: str = "e-spot", created: float = T0) -> OperationFacts:
    return OperationFacts(id=f"op-{event_id}", kind="spot-eviction", target=vm, vms=(vm,),
                          event_ids=(event_id,), created_at=created)  # fmt: skip


def _json(report: object) -> dict[str, object]:
    out: dict[str, object] = msgspec.to_builtins(report)
    return out


def test_an_approval_after_the_start_is_not_an_approval_anywhere() -> None:
    data = ReactionData(
        events=[_preempt("spot-0")],
        operations=[_operation("spot-0")],
        vms=[VmReaction(event_id="e-spot", vm="spot-0", first_seen=T0 + 1, approved_at=T0 + 30.57)],
        polls=[VmPolls(vm="spot-0", first_poll=T0, last_poll=T0 + 31)],
    )
    report = grade(data, now=T0 + 35, scope_of={"spot-0": "spot"})
    (event,) = report.events
    assert event.verdict == "warn" and "nobody approved: it started at NotBefore" in event.summary
    (vm,) = event.vms
    assert (vm.verdict, vm.approved_in_time) == ("detected", False)
    assert "approved too late: 0.6 s after it started" in vm.note
    (op,) = report.operations
    assert op.approved == 0 and op.not_approved == ["spot-0"]
    assert op.progress == "0 of 1 approved, 1 saw it but did not approve: spot-0"
    (rollup,) = report.vms
    assert rollup.verdict == "detected" and rollup.approved == 0 and needs_attention(rollup)
    assert report.approval.count == 0  # a late approval is no approval latency
    cases = report_cases(_json(report))
    assert [c.message for c in cases if c.classname == "forewarn.operations"] == [
        "warn: 0 of 1 approved, 1 saw it but did not approve: spot-0"
    ]


def test_a_deleted_vm_that_never_polled_never_polled() -> None:
    data = ReactionData(events=[_preempt("spot-1")], operations=[_operation("spot-1")])
    report = grade(data, now=T0 + 600, deleted={"spot-1"}, scope_of={"spot-1": "spot"})
    assert report.never_polled == ["spot-1"]
    (rollup,) = report.vms
    assert rollup.polling == "never polled"
    assert "never polled" in rollup.lines[0]
    assert report.stopped_polling == []


def _faulted_drill(*, since: float | None = None) -> tuple[ReactionData, dict[str, FaultTally]]:
    """spot-2 polled, then asked every 8 s while injected 500s answered it (the event
    came and started meanwhile)."""
    tally = FaultTally(T0 - 10, T0 - 10)
    for i in range(10):
        tally.add("status", T0 - 10 + 8 * i)
    data = ReactionData(
        events=[_preempt("spot-2")],
        operations=[_operation("spot-2")],
        polls=[VmPolls(vm="spot-2", first_poll=T0 - 100, last_poll=T0 - 11)],
    )
    return data, {"spot-2": tally}


def test_a_vm_whose_requests_faults_answered_is_not_blamed_for_not_polling() -> None:
    data, faults = _faulted_drill()
    now = T0 + 75
    report = grade(data, now=now, faults=faults, scope_of={"spot-2": "spot"})
    (vm,) = report.events[0].vms
    assert vm.verdict == "missed"
    assert "injected endpoint faults answered all 4 of its requests (4 status)" in vm.note
    assert "did not poll" not in vm.note
    assert report.stopped_polling == [] and report.never_polled == []
    (rollup,) = report.vms
    assert rollup.polling.startswith(FAULTED) and "10 status" in rollup.polling
    (op,) = report.operations
    assert "stopped or never polled" not in op.progress
    assert "never saw it: spot-2" in op.progress
    (coped,) = report.faults
    assert coped.vm == "spot-2" and coped.requests == 10


def test_a_report_since_a_reset_counts_only_the_faults_since() -> None:
    data, faults = _faulted_drill()
    reset = T0 + 200
    report = grade(data, now=reset + 10, since=reset, faults=faults)
    assert report.faults == [] and report.events == []
    everything = grade(data, now=reset + 10, faults=faults)
    assert [f.vm for f in everything.faults] == ["spot-2"]
    halfway = grade(data, now=reset + 10, since=T0 + 30, faults=faults)
    assert [f.requests for f in halfway.faults] == [5]  # T0+30 .. T0+62


def test_every_name_of_a_progress_is_kept_for_report_all() -> None:
    vms = tuple(f"batch_{n}" for n in range(450, 458))
    event = EventFacts(
        id="e-roll", operation_id="op-roll", kind="platform-reboot", scope_id="batch",
        event_type="Reboot", source="Platform", resources=vms, created_at=T0,
        not_before=T0 + 900, started_at=T0 + 900, start_reason="not_before",
    )  # fmt: skip
    data = ReactionData(
        events=[event],
        operations=[OperationFacts(id="op-roll", kind="platform-reboot", target="batch",
                                   vms=vms, event_ids=("e-roll",), created_at=T0)],
        polls=[VmPolls(vm=vm, first_poll=T0 - 5, last_poll=T0 - 1) for vm in vms],
    )  # fmt: skip
    (op,) = grade(data, now=T0 + 901).operations
    assert "and 3 more" in op.progress
    assert op.head == ["0 of 8 approved"]
    assert [(g.label, g.vms) for g in op.groups] == [("never saw it", list(vms))]


def test_a_vm_a_drill_evicted_is_not_said_to_stop_polling_once_a_reset_brings_it_back() -> None:
    evicted = OperationFacts(id="op-e", kind="spot-eviction", target="spot-3", vms=("spot-3",),
                             created_at=T0, started_at=T0 + 30, ended_at=T0 + 60)  # fmt: skip
    data = ReactionData(
        operations=[evicted],
        polls=[VmPolls(vm="spot-3", first_poll=T0 - 100, last_poll=T0 + 29)],
    )
    before = grade(data, now=T0 + 900, deleted={"spot-3"})  # before the reset: deleted
    after = grade(data, now=T0 + 900)  # after it: back, and silent since its eviction
    assert before.stopped_polling == after.stopped_polling == []
    assert _json(before) == _json(after)
    reset = T0 + 800
    round_two = grade(data, now=T0 + 900, since=reset)  # the drill after: silent in it
    assert [p.vm for p in round_two.stopped_polling] == ["spot-3"]


def test_the_html_report_names_faulted_vms_as_the_progress_does() -> None:
    data, faults = _faulted_drill()
    report = grade(data, now=T0 + 75, faults=faults, scope_of={"spot-2": "spot"})
    page = render_report(report)
    assert "<strong>1 never saw it:</strong> spot-2" in page
    assert "stopped or never polled" not in page


def test_on_a_virtual_clock_an_instant_shared_with_the_start_or_creation_is_told_apart() -> None:
    """A frozen clock puts two things at one instant: an approval at the instant the
    platform started the event on its own came after the start; a poll at the instant of
    the creation of an event the VM was not shown came before it."""
    late = VmReaction(event_id="e-spot", vm="spot-0", first_seen=T0, seen_started=T0 + 30,
                      approved_at=T0 + 30)  # fmt: skip
    data = ReactionData(
        events=[_preempt("spot-0"), _preempt("spot-2", event_id="e-two")],
        operations=[_operation("spot-0"), _operation("spot-2", event_id="e-two")],
        vms=[late, VmReaction(event_id="e-two", vm="spot-2", last_poll_before_start=T0)],
        polls=[VmPolls(vm=vm, first_poll=T0 - 50, last_poll=T0) for vm in ("spot-0", "spot-2")],
    )
    _, faults = _faulted_drill()
    faults["spot-2"].add("status", T0 + 20)
    report = grade(data, now=T0 + 35, faults=faults)
    zero, two = (e.vms[0] for e in report.events)
    assert (zero.verdict, zero.approved_in_time) == ("detected", False)
    assert two.verdict == "missed" and "injected endpoint faults answered" in two.note


def test_a_tally_keeps_a_bounded_number_of_times_and_is_exact_since_a_seal() -> None:
    tally = FaultTally(T0, T0)
    for i in range(1000):  # a fault for 1,000 s of polls
        tally.add("status", T0 + i)
    assert len(tally.times) < KEPT_TIMES and tally.kinds == {"status": 1000}
    reset = T0 + 1000.5
    tally.seal()  # the tracker seals at a reset
    for i in range(300):
        tally.add("status", reset + 1 + i)
    after = tally.window(reset)
    assert after is not None and after.kinds == {"status": 300} and after.first == reset + 1
    whole = tally.window(None)
    assert whole is not None and whole.kinds == {"status": 1300}
    # Within sealed segments, a window counts its share of them.
    assert 90 <= tally.answered(T0 + 100, T0 + 200)["status"] <= 110


async def test_the_tracker_seals_every_tally_at_a_fleet_reset(rehearsal: Rehearsal) -> None:
    tracker = rehearsal.reactions
    tracker.faulted("web-0", "status")
    tracker.faulted("web-0", "status")
    rehearsal.fabric.reset()
    tally = tracker.fault_tallies["web-0"]
    assert len(tally.times) == 0 and [s.kinds for s in tally.sealed] == [{"status": 2}]
    (sealed,) = tally.sealed
    assert sealed.times is not None and len(sealed.times) == 2  # exact after the reset
    assert tally.answered(None, None) == {"status": 2}


def test_a_segment_sealed_at_a_reset_is_cut_exactly_by_a_later_since() -> None:
    tally = FaultTally(T0, T0)
    for i in range(10):
        tally.add("reset", T0 + i)
    tally.seal(keep_times=True)
    later = tally.window(T0 + 6.5)
    assert later is not None and later.kinds == {"reset": 3} and later.first == T0 + 7
