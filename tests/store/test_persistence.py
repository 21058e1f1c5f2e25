"""A fabric rebuilt from its database shows exactly what it showed before, and carries on."""

from __future__ import annotations

import pytest

from forewarn.contract import EventStatus
from forewarn.fabric import Fabric, OperationRequest
from tests.store.conftest import Database
from tests.support.fabrics import MINUTE, T0, live, observable, only_event, status, submit


def busy(fabric: Fabric) -> dict[str, str]:
    """Leave the fabric with one event in every interesting state; returns their ids."""
    approved = only_event(fabric, submit(fabric, "user-reboot", "web-0")).id
    fabric.approve(fabric.topology.vm("web-3"), [approved.lower()])  # Started now
    host = submit(fabric, "host-update", host="host-3")
    partly, *waiting = live(fabric, host)
    fabric.approve(fabric.topology.vm(partly.resources[0]), [partly.id])  # still Scheduled
    evicted = only_event(fabric, submit(fabric, "spot-eviction", "workers_1")).id
    fabric.start_event(evicted)
    canceled = only_event(fabric, submit(fabric, "platform-redeploy", "FrontEnd_IN_1")).id
    fabric.cancel_event(canceled)
    fabric.submit(OperationRequest(kind="platform-reboot", scope="shop"))
    fabric.advance(MINUTE)  # the eviction completes: workers_1 is deleted
    return {
        "approved": approved,
        "partly": partly.id,
        "waiting": waiting[0].id,
        "canceled": canceled,
    }


def test_restart_shows_the_same_documents_and_records(database: Database) -> None:
    fabric = database.open()
    ids = busy(fabric)
    before = observable(fabric)
    assert fabric.is_deleted("workers_1")
    again = database.restart()
    assert observable(again) == before
    assert again.is_deleted("workers_1")
    assert status(again, ids["approved"]) is EventStatus.STARTED
    assert status(again, ids["partly"]) is EventStatus.SCHEDULED
    assert again.event(ids["partly"]).approved_by == "web-2"
    assert again.event(ids["waiting"]).approved_by is None
    assert status(again, ids["canceled"]) is None
    assert again.view("web").incarnation == fabric.view("web").incarnation > 1


def test_timers_resume_after_restart(database: Database) -> None:
    fabric = database.open()
    ids = busy(fabric)
    again = database.restart()
    again.advance(9 * MINUTE - 1)  # the approved reboot started at T0: removed at 10 min
    assert status(again, ids["approved"]) is EventStatus.STARTED
    again.advance(1)
    assert status(again, ids["approved"]) is None
    again.advance(5 * MINUTE - 1)  # the host update is due at 15 min
    assert status(again, ids["partly"]) is EventStatus.SCHEDULED
    again.advance(1)
    assert {status(again, ids[k]) for k in ("partly", "waiting")} == {EventStatus.STARTED}


def test_approval_after_restart_completes_a_partly_approved_operation(
    database: Database,
) -> None:
    ids = busy(database.open())
    again = database.restart()
    host_op = again.event(ids["partly"]).operation_id
    rest = [e for e in again.events() if e.operation_id == host_op and e.id != ids["partly"]]
    assert len(rest) == 2
    for event in rest:
        assert status(again, ids["partly"]) is EventStatus.SCHEDULED
        again.approve(again.topology.vm(event.resources[0]), [event.id])
    assert {status(again, e) for e in (ids["partly"], *(e.id for e in rest))} == {
        EventStatus.STARTED
    }


def test_rollout_continues_after_restart(database: Database) -> None:
    fabric = database.open()
    fabric.submit(OperationRequest(kind="host-update", scope="web"))
    first = {e.event_id for e in fabric.view("web").events}
    again = database.restart()
    again.advance(20 * MINUTE)  # UD 0 started at 15 min, removed at 20: UD 1 is announced
    shown = again.view("web").events
    assert {e.event_id for e in shown}.isdisjoint(first)
    assert sorted(n for e in shown for n in e.resources) == ["web-1", "web-4"]
    assert {e.not_before for e in shown} == {T0 + 35 * MINUTE}


def test_incarnations_never_decrease_across_restarts(database: Database) -> None:
    fabric = database.open()
    seen = []
    for _ in range(3):
        only_event(fabric, submit(fabric, "user-reboot", "jumpbox"))
        fabric.advance(25 * MINUTE)
        seen.append(fabric.view("jumpbox").incarnation)
        fabric = database.restart()
        assert fabric.view("jumpbox").incarnation == seen[-1]
    assert seen == [4, 7, 10]


def test_deleted_vms_stay_deleted(database: Database) -> None:
    fabric = database.open()
    submit(fabric, "scale-in", "workers_0")
    fabric.advance(6 * MINUTE)
    again = database.restart()
    assert again.is_deleted("workers_0")
    assert again.vm_status("workers_0") == "deleted"
    op = again.submit(OperationRequest(kind="host-update", host="host-4"))  # workers_0's host
    assert "workers_0" not in op.vms
    assert op.vms == ("web-3", "jumpbox")


@pytest.mark.parametrize(("idle", "enabled"), [(10 * MINUTE, True), (25 * 3600.0, False)])
def test_enablement_survives_restart(database: Database, idle: float, enabled: bool) -> None:
    fabric = database.open(enablement="on-first-request")
    fabric.note_request(fabric.topology.vm("web-1"))
    again = database.restart(enablement="on-first-request")
    again.advance(idle)
    assert again.is_enabled("web") is enabled
    assert not again.is_enabled("jumpbox")


def test_history_continues_after_restart(database: Database) -> None:
    fabric = database.open()
    busy(fabric)
    before = fabric.history(limit=100_000)
    again = database.restart()
    submit(again, "live-migration", "web-5")
    after = again.history(limit=100_000)
    assert after[: len(before)] == before
    assert [h.seq for h in after] == list(range(1, len(after) + 1))
    assert [h.kind for h in after[len(before) :]] == ["operation.created", "event.scheduled"]
