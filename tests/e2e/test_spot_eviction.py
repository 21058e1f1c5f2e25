"""Spot eviction: a Preempt event with 30 s notice, then the VM is gone."""

from __future__ import annotations

from tests.e2e.conftest import SCOPES, SPOT_HOLD, SPOT_NOTICE, Platform, rfc1123

WORKERS = SCOPES["workers"]
SURVIVORS = [vm for vm in WORKERS if vm != "workers_1"]


def test_spot_eviction_preempts_then_deletes_the_vm(platform: Platform) -> None:
    platform.enable("workers_0")
    before = platform.scope_doc("workers")
    created = platform.now()
    op = platform.trigger("spot-eviction", "workers_1")
    [event_id] = op["event_ids"]

    scheduled = platform.scope_doc("workers")  # all four VMs, identical documents
    assert scheduled["DocumentIncarnation"] > before["DocumentIncarnation"]
    [event] = scheduled["Events"]
    assert event["EventId"] == event_id
    assert (event["EventType"], event["EventStatus"], event["EventSource"]) == (
        "Preempt",
        "Scheduled",
        "Platform",
    )
    assert event["Resources"] == ["workers_1"]
    assert event["NotBefore"] == rfc1123(created + SPOT_NOTICE)

    # Preempt exists from 2017-11-01 on; older versions do not show it.
    for version in ("2017-11-01", "2019-01-01", "2019-04-01", "2019-08-01", "2020-07-01"):
        for vm in WORKERS:
            assert [e["EventType"] for e in platform.doc(vm, version)["Events"]] == ["Preempt"]
    for version in ("2017-03-01", "2017-08-01"):
        doc = platform.doc("workers_0", version)
        assert doc["Events"] == []
        assert doc["DocumentIncarnation"] == scheduled["DocumentIncarnation"]
    # Other scopes are untouched.
    assert platform.scope_doc("web")["Events"] == []

    platform.advance(SPOT_NOTICE - 1)
    assert platform.scope_doc("workers") == scheduled
    platform.advance(1)
    started = platform.scope_doc("workers")
    assert [(e["EventId"], e["EventStatus"], e["NotBefore"]) for e in started["Events"]] == [
        (event_id, "Started", "")
    ]
    assert platform.vm_status("workers_1") == "running"  # eviction has no impact window
    platform.advance(SPOT_HOLD - 1)
    assert platform.scope_doc("workers") == started
    assert platform.get("workers_1").status_code == 200

    platform.advance(1)
    gone = platform.get("workers_1")
    assert gone.status_code == 404
    assert "error" in gone.json()
    for vm in SURVIVORS:
        assert platform.get(vm).status_code == 200
    final = platform.observe(SURVIVORS)["workers_0"]
    assert final["Events"] == []
    assert final["DocumentIncarnation"] > started["DocumentIncarnation"]
    assert platform.vm_status("workers_1") == "deleted"
    assert platform.operation(op["id"])["state"] == "completed"

    # A deleted VM cannot be evicted again, nor even approve anything.
    response = platform.call(
        "POST",
        "/api/v1/operations",
        expect=400,
        json={"kind": "spot-eviction", "target": "workers_1"},
    )
    assert "deleted" in response["error"]
    assert platform.imds("POST", "workers_1", json={"StartRequests": []}).status_code == 404
