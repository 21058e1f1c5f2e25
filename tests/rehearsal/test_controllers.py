"""Central controllers graded as VMs are: each Event Grid subscription's deliveries (the
``eventgrid.delivery`` history entries the hub writes, written here as the hub writes
them) against the event's approval through ARM, on the virtual clock.

Read from ``GET /api/v1/reactions`` (``controllers``) and the HTML report."""

from __future__ import annotations

from typing import Any

from tests.rehearsal.conftest import Rehearsal
from tests.support.fabrics import T0

MINUTE = 60.0


def _deliver(
    rehearsal: Rehearsal, subscription: str, event_id: str, status: str, outcome: str,
    attempt: int = 1,
) -> None:  # fmt: skip
    """One attempt's outcome in the history, as the Event Grid hub writes it."""
    scope = rehearsal.fabric.topology.vms["web-0"].scope_id
    detail = {
        "subscription": subscription, "status": status, "attempt": attempt,
        "outcome": outcome, "answer": "200" if outcome == "delivered" else "500",
        "id": f"eg-{event_id[:8]}-{status}-{attempt}",
    }  # fmt: skip
    rehearsal.fabric.note("eventgrid.delivery", [(scope, event_id, detail)])


def _arm_ack(rehearsal: Rehearsal, vm: str, event_id: str) -> None:
    """What the Maintenance provider's acknowledge does (``ArmApp``)."""
    rehearsal.fabric.approve(rehearsal.fabric.topology.vms[vm], [event_id], via="arm")


def _row(controller: dict[str, Any], event_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(r for r in controller["events"] if r["event_id"] == event_id)
    return found


async def test_no_subscription_no_controller_block(rehearsal: Rehearsal) -> None:
    await rehearsal.poll("web-0")
    op = rehearsal.submit("user-reboot", "web-0")
    (event_id,) = rehearsal.event_ids(op)
    await rehearsal.poll("web-0")
    await rehearsal.approve("web-0", event_id)
    report = await rehearsal.report()
    assert report["controllers"] == []
    assert report["totals"]["ok"] == 1
    page = (await rehearsal.control_get("/api/v1/report")).text
    assert "Central controllers" not in page


async def test_acknowledged_in_time_never_acknowledged_and_missed(rehearsal: Rehearsal) -> None:
    # On time: told after 2 s (a retry first), acknowledged through ARM 30 s later.
    first = rehearsal.event_ids(rehearsal.submit("user-reboot", "web-0"))[0]
    rehearsal.advance(1)
    _deliver(rehearsal, "ops", first, "Scheduled", "retrying", 1)
    rehearsal.advance(1)
    _deliver(rehearsal, "ops", first, "Scheduled", "delivered", 2)
    rehearsal.advance(30)
    _arm_ack(rehearsal, "web-0", first)
    _deliver(rehearsal, "ops", first, "Started", "delivered")
    # Never acknowledged: told at once, the platform starts it at NotBefore.
    second = rehearsal.event_ids(rehearsal.submit("user-reboot", "web-1"))[0]
    _deliver(rehearsal, "ops", second, "Scheduled", "delivered")
    # Missed: every attempt at its Scheduled notice failed.
    third = rehearsal.event_ids(rehearsal.submit("user-reboot", "web-2"))[0]
    _deliver(rehearsal, "ops", third, "Scheduled", "failed", 3)
    rehearsal.advance(16 * MINUTE)

    report = await rehearsal.report()
    [ops] = report["controllers"]
    assert ops["subscription"] == "ops"
    assert ops["verdict"] == "fail"
    assert ops["totals"]["acknowledged"] == 1
    assert ops["totals"]["not-acknowledged"] == 1
    assert ops["totals"]["missed"] == 1
    on_time = _row(ops, first)
    assert (on_time["verdict"], on_time["grade"]) == ("acknowledged", "ok")
    assert on_time["delivered_at"] == T0 + 2
    assert on_time["detected_after"] == 2.0
    assert on_time["attempts"] == 2
    assert on_time["acknowledged_after"] == 32.0
    assert on_time["acknowledged_in_time"] is True
    assert on_time["approved_via"] == "arm"
    assert on_time["note"] == (
        "told after 2.0 s; acknowledged through ARM 30 s after it was told, "
        "14 min 28 s before NotBefore"
    )
    never = _row(ops, second)
    assert (never["verdict"], never["grade"]) == ("not-acknowledged", "warn")
    assert never["detected_after"] == 0.0
    assert never["acknowledged_at"] is None and never["acknowledged_in_time"] is None
    assert never["note"].endswith("never acknowledged: the platform started it at NotBefore")
    missed = _row(ops, third)
    assert (missed["verdict"], missed["grade"]) == ("missed", "fail")
    assert missed["delivered_at"] is None
    assert missed["note"] == "never told: delivery given up after 3 attempts"
    assert ops["detection"]["values"] == [0.0, 2.0]
    assert ops["acknowledgement"]["values"] == [32.0]
    assert ops["summary"] == (
        "3 events: 1 acknowledged through ARM before NotBefore, 1 never acknowledged, "
        "1 not told before it started; told after 0.0 s (median), 2.0 s max"
    )
    # The VMs' grading is what it was: no VM polled, so each missed its event.
    assert report["totals"]["fail"] == 3

    page = (await rehearsal.control_get("/api/v1/report")).text
    assert 'id="controller-ops"' in page
    assert f'data-event="{first}" data-verdict="acknowledged"' in page
    assert f'data-event="{second}" data-verdict="not-acknowledged"' in page


async def test_each_subscription_is_graded_on_its_own(rehearsal: Rehearsal) -> None:
    event_id = rehearsal.event_ids(rehearsal.submit("user-reboot", "web-0"))[0]
    _deliver(rehearsal, "early", event_id, "Scheduled", "delivered")
    rehearsal.advance(5)
    _arm_ack(rehearsal, "web-0", event_id)
    rehearsal.advance(5)  # this one was told only after the event was acknowledged
    _deliver(rehearsal, "slow", event_id, "Scheduled", "delivered")
    report = await rehearsal.report()
    by_name = {c["subscription"]: c for c in report["controllers"]}
    assert _row(by_name["early"], event_id)["verdict"] == "acknowledged"
    slow = _row(by_name["slow"], event_id)
    assert (slow["verdict"], slow["detected_after"]) == ("approved-elsewhere", 10.0)
    assert [c["subscription"] for c in report["controllers"]] == ["early", "slow"]


async def test_a_vm_approval_is_not_the_controllers_and_late_delivery_is_missed(
    rehearsal: Rehearsal,
) -> None:
    await rehearsal.poll("web-0")
    approved = rehearsal.event_ids(rehearsal.submit("user-reboot", "web-0"))[0]
    await rehearsal.approve("web-0", approved)  # the VM itself, on its endpoint
    rehearsal.advance(1)
    _deliver(rehearsal, "ops", approved, "Scheduled", "delivered")
    late = rehearsal.event_ids(rehearsal.submit("user-reboot", "web-1"))[0]
    rehearsal.advance(16 * MINUTE)  # it starts at NotBefore before the webhook takes it
    _deliver(rehearsal, "ops", late, "Scheduled", "delivered", 9)
    report = await rehearsal.report()
    [ops] = report["controllers"]
    first = _row(ops, approved)
    assert first["verdict"] == "approved-elsewhere"
    assert "approved by web-0 via endpoint" in first["note"]
    second = _row(ops, late)
    assert (second["verdict"], second["grade"]) == ("missed", "fail")
    assert second["note"] == "told 60 s after it started"
