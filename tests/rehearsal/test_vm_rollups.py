"""The roll-up by VM read as the roll-up by operation reads it, and which VMs need
attention (the dashboard's VMs panel lists those first). Pure: facts in, verdict out."""

from __future__ import annotations

from forewarn.rehearsal import EventFacts, ReactionData, VmPolls, VmReaction, grade
from forewarn.rehearsal.facts import OperationFacts
from forewarn.rehearsal.grading import ReactionReport
from forewarn.rehearsal.rollups import VM_VERDICTS, VmRollup, needs_attention

T0 = 1_700_000_000.0
NOW = T0 + 1000


def _event(
    event_id: str, vms: tuple[str, ...], *, started: bool, approved_by: str | None = None
) -> EventFacts:
    return EventFacts(
        id=event_id, operation_id="op-reboot", kind="platform-reboot", scope_id="web",
        event_type="Reboot", source="Platform", resources=vms, created_at=T0,
        not_before=T0 + 900, approved_by=approved_by,
        approved_at=T0 + 30 if approved_by else None,
        started_at=T0 + 600 if started else None,
        start_reason=("approved" if approved_by else "not_before") if started else None,
    )  # fmt: skip


def _report() -> ReactionReport:
    """web-1 approves the event it shares with web-2 (who saw it); web-3 saw its event
    and nobody approved it; web-4 saw one still scheduled; web-5 never polled; web-6
    approved then stopped polling; db-1's scope had Scheduled Events off."""
    data = ReactionData(
        events=[
            _event("e-shared", ("web-1", "web-2"), started=True, approved_by="web-1"),
            _event("e-ignored", ("web-3",), started=True),
            _event("e-deciding", ("web-4",), started=False),
            _event("e-unseen", ("web-5",), started=True),
            _event("e-early", ("web-6",), started=True, approved_by="web-6"),
        ],
        vms=[
            VmReaction(event_id="e-shared", vm="web-1", first_seen=T0 + 1, approved_at=T0 + 30),
            VmReaction(event_id="e-shared", vm="web-2", first_seen=T0 + 2),
            VmReaction(event_id="e-ignored", vm="web-3", first_seen=T0 + 1),
            VmReaction(event_id="e-deciding", vm="web-4", first_seen=T0 + 1),
            VmReaction(event_id="e-early", vm="web-6", first_seen=T0 + 1, approved_at=T0 + 30),
        ],
        polls=[
            *(VmPolls(vm=f"web-{n}", first_poll=T0, last_poll=NOW - 1) for n in (1, 2, 3, 4)),
            VmPolls(vm="web-6", first_poll=T0, last_poll=T0 + 40),
        ],
        operations=[
            OperationFacts(id="op-reboot", kind="platform-reboot", target="web",
                           vms=tuple(f"web-{n}" for n in range(1, 7)), created_at=T0),
            OperationFacts(id="op-db", kind="platform-reboot", target="db", vms=("db-1",),
                           unnotified=("db-1",), created_at=T0, started_at=T0 + 5),
        ],
    )  # fmt: skip
    scope_of = {**{f"web-{n}": "web" for n in range(1, 7)}, "db-1": "db"}
    return grade(data, now=NOW, scope_of=scope_of)


def _by_vm(report: ReactionReport) -> dict[str, VmRollup]:
    return {v.vm: v for v in report.vms}


def test_a_vm_whose_peer_approved_did_its_part_and_the_line_names_the_approver() -> None:
    web2 = _by_vm(_report())["web-2"]
    assert (web2.verdict, web2.saw, web2.approved) == ("approved", 1, 1)
    assert web2.lines == ["Reboot of web (platform-reboot): approved by web-1, saw it after 2.0 s"]
    assert not needs_attention(web2)


def test_the_vm_roll_up_agrees_with_the_operation_roll_up() -> None:
    report = _report()
    by_vm = _by_vm(report)
    reboot = next(o for o in report.operations if o.id == "op-reboot")
    approved = sorted(vm for vm, v in by_vm.items() if v.scope == "web" and v.verdict == "approved")
    assert reboot.approved == len(approved) == 3  # web-1, web-2 (by its peer), web-6
    assert reboot.not_approved == [vm for vm, v in by_vm.items() if v.verdict == "detected"]
    assert reboot.missed == [vm for vm, v in by_vm.items() if v.verdict == "missed"]


def test_a_vm_that_saw_an_event_still_scheduled_is_waiting_not_failing() -> None:
    web4 = _by_vm(_report())["web-4"]
    assert (web4.verdict, web4.saw, web4.approved) == ("waiting", 1, 0)
    assert "waiting to approve, saw it after 1.0 s" in web4.lines[0]
    assert not needs_attention(web4)


def test_the_vms_needing_attention_are_named_worst_first_then_failed_first() -> None:
    report = _report()
    by_vm = _by_vm(report)
    # Hit with no notice, never saw it, saw it and nobody approved, stopped polling.
    assert {vm for vm, v in by_vm.items() if needs_attention(v)} == {
        "db-1", "web-5", "web-3", "web-6",
    }  # fmt: skip
    assert (by_vm["web-3"].verdict, by_vm["web-3"].polling) == ("detected", "polling")
    assert (by_vm["web-5"].verdict, by_vm["web-5"].polling) == ("missed", "never polled")
    assert by_vm["web-6"].verdict == "approved"
    assert by_vm["web-6"].polling.startswith("stopped polling")
    # The report's order: the VMs that failed first (db-1 at T0 + 5, web-5 at its start),
    # then the others by verdict; every verdict is one the dashboard ranks.
    assert [v.vm for v in report.vms][:2] == ["db-1", "web-5"]
    assert by_vm["db-1"].first_failed_at == T0 + 5
    assert by_vm["web-5"].first_failed_at == T0 + 600
    assert {v.verdict for v in report.vms} <= set(VM_VERDICTS)
