"""Maintenance of one host touches VMs of several scopes: one event per scope, started together."""

from __future__ import annotations

from typing import Any

from tests.e2e.conftest import DEMO, FREEZE_HOLD, FREEZE_NOTICE, SCOPES, Platform, rfc1123


def find_shared_host(platform: Platform) -> tuple[str, dict[str, list[str]]]:
    """A host running VMs of the most scopes, then the most VMs: (host, scope -> its VMs)."""
    topology = platform.call("GET", "/api/v1/topology")
    scope_of = {vm["name"]: s["id"] for s in topology["scopes"] for vm in s["vms"]}
    best: tuple[str, dict[str, list[str]]] | None = None
    for host, vms in topology["hosts"].items():
        by_scope: dict[str, list[str]] = {}
        for vm in vms:
            by_scope.setdefault(scope_of[vm], []).append(vm)
        if best is None or (len(by_scope), len(vms)) > (
            len(best[1]),
            sum(map(len, best[1].values())),
        ):
            best = (host, by_scope)
    assert best is not None and len(best[1]) >= 2
    return best


def test_host_update_gives_each_scope_its_own_event_and_they_start_together(
    platform: Platform,
) -> None:
    host, on_host = find_shared_host(platform)
    assert (host, on_host) == (
        "host-2",
        {"web": ["web-1", "web-4"], "workers": ["workers_2"], "shop": ["FrontEnd_IN_1"]},
    )
    # Switch on the scopes on this host, one request from one VM each.
    platform.enable(*(vms[0] for vms in on_host.values()))
    before = {scope: platform.scope_doc(scope) for scope in SCOPES}
    created = platform.now()
    op = platform.trigger("host-update", host)
    assert sorted(op["vms"]) == sorted(vm for vms in on_host.values() for vm in vms)

    scheduled: dict[str, dict[str, Any]] = {}
    for scope, vms in on_host.items():
        doc = platform.scope_doc(scope)
        assert doc["DocumentIncarnation"] > before[scope]["DocumentIncarnation"]
        # Only this scope's VMs on this host. A host holds one update domain of a scope,
        # so each scope gets exactly one event (web-1 and web-4 are both in UD 1).
        assert len(doc["Events"]) == 1
        assert sorted(vm for e in doc["Events"] for vm in e["Resources"]) == sorted(vms)
        for event in doc["Events"]:
            assert len({DEMO[vm][2] for vm in event["Resources"]}) == 1
            assert (event["EventType"], event["EventSource"], event["EventStatus"]) == (
                "Freeze",
                "Platform",
                "Scheduled",
            )
            assert event["NotBefore"] == rfc1123(created + FREEZE_NOTICE)
            assert event["DurationInSeconds"] == 9
        scheduled[scope] = doc
    assert sorted(e for d in scheduled.values() for e in (x["EventId"] for x in d["Events"])) == (
        sorted(op["event_ids"])
    )
    # jumpbox is on another host and sees nothing.
    assert platform.scope_doc("jumpbox") == before["jumpbox"]

    # A VM cannot approve another scope's event: 400, nothing changes.
    foreign = scheduled["workers"]["Events"][0]["EventId"]
    platform.approve("web-1", foreign, expect=400)

    # Approve every event but the shop's, each from a VM of its own scope (not on host-2).
    approver = {"web": "web-2", "workers": "workers_0", "shop": "BackEnd_IN_0"}
    assert not {DEMO[vm][1] for vm in approver.values()} & {host}
    last_scope = "shop"
    for scope, doc in scheduled.items():
        if scope != last_scope:
            platform.approve(approver[scope], *(e["EventId"] for e in doc["Events"]))
    for scope, doc in scheduled.items():
        assert platform.scope_doc(scope) == doc  # still Scheduled, same incarnation
    assert platform.operation(op["id"])["state"] == "scheduled"
    approved = {e["id"]: e["approved_by"] for e in platform.events()}
    assert sum(by is not None for by in approved.values()) == len(op["event_ids"]) - 1

    # The last approval starts every event of the operation, in every scope.
    platform.approve(approver[last_scope], scheduled[last_scope]["Events"][0]["EventId"])
    started_at = platform.now()
    for scope, doc in scheduled.items():
        now = platform.scope_doc(scope)
        assert now["DocumentIncarnation"] > doc["DocumentIncarnation"]
        assert [e["EventId"] for e in now["Events"]] == [e["EventId"] for e in doc["Events"]]
        assert {(e["EventStatus"], e["NotBefore"]) for e in now["Events"]} == {("Started", "")}
    assert platform.operation(op["id"])["started_at"] == started_at
    assert {platform.vm_status(vm) for vms in on_host.values() for vm in vms} == {"frozen"}

    platform.advance(FREEZE_HOLD)
    for scope in on_host:
        assert platform.scope_doc(scope)["Events"] == []
    assert platform.operation(op["id"])["state"] == "completed"
    assert platform.events() == []
