"""A platform reboot of an availability set walks its update domains one at a time."""

from __future__ import annotations

import itertools
from typing import Any

from tests.e2e.conftest import DEMO, MINUTE, REBOOT_HOLD, REBOOT_NOTICE, SCOPES, Platform

WEB = SCOPES["web"]


def domains(doc: dict[str, Any]) -> set[int]:
    """Update domains of the VMs named by a document's events."""
    return {DEMO[vm][2] for e in doc["Events"] for vm in e["Resources"]}


def test_rolling_platform_reboot_walks_update_domains_in_order(platform: Platform) -> None:
    platform.enable("web-1")
    op = platform.trigger("platform-reboot", "web")
    assert op["rollout_id"]
    walked: list[int] = []
    approved_early = False
    docs: list[dict[str, Any]] = []

    def look() -> dict[str, Any]:
        doc = platform.observe(WEB)["web-0"]
        seen = domains(doc)
        assert len(seen) <= 1, f"events of several update domains at once: {doc}"
        if seen:
            [ud] = seen
            if not walked or walked[-1] != ud:
                walked.append(ud)
            # An update domain's events cover all its VMs, one event per host, and all
            # share one status.
            members = [vm for vm in WEB if DEMO[vm][2] == ud]
            assert sorted(vm for e in doc["Events"] for vm in e["Resources"]) == sorted(members)
            assert len(doc["Events"]) == len({DEMO[vm][1] for vm in members})
            assert len({e["EventStatus"] for e in doc["Events"]}) == 1
            assert {(e["EventType"], e["EventSource"]) for e in doc["Events"]} == {
                ("Reboot", "Platform")
            }
        docs.append(doc)
        return doc

    doc = look()
    assert walked == [0]
    # One event per (host, update domain): web-0 (host-1) and web-3 (host-4).
    assert sorted(tuple(e["Resources"]) for e in doc["Events"]) == [("web-0",), ("web-3",)]
    # UD 1 (web-1, web-4) and UD 2 (web-2, web-5) each sit on one host: one event each.
    assert {DEMO[vm][1] for vm in ("web-1", "web-4")} == {"host-2"}
    assert {DEMO[vm][1] for vm in ("web-2", "web-5")} == {"host-3"}

    step = MINUTE
    for _ in range(int((3 * (REBOOT_NOTICE + REBOOT_HOLD)) / step) + 5):
        doc = docs[-1]
        if walked == [0] and not approved_early:
            assert {e["EventStatus"] for e in doc["Events"]} == {"Scheduled"}
            # Approving one of UD 0's two events is not enough; both start together.
            first, second = (e["EventId"] for e in doc["Events"])
            platform.approve("web-5", first)
            assert look() == doc
            platform.approve("web-2", second)
            approved_early = True
            started = look()
            assert {e["EventStatus"] for e in started["Events"]} == {"Started"}
            assert {e["NotBefore"] for e in started["Events"]} == {""}
            continue
        if walked == [0, 1, 2] and not doc["Events"]:
            break
        platform.advance(step)
        look()
    assert walked == [0, 1, 2]
    assert approved_early
    assert docs[-1]["Events"] == []

    # Events of an update domain start at NotBefore unless approved, and every domain is
    # created after the previous one's events were all removed.
    history = platform.history()
    ops = [o for o in platform.operations() if o["rollout_id"] == op["rollout_id"]]
    assert len(ops) == 3
    assert all(o["state"] == "completed" for o in ops)
    assert ops[0]["started_at"] < ops[0]["not_before"]
    assert ops[1]["started_at"] == ops[1]["not_before"]
    assert ops[2]["started_at"] == ops[2]["not_before"]
    for before, after in itertools.pairwise(ops):
        assert before["ended_at"] <= after["created_at"]
    assert [h["kind"] for h in history if h["kind"].startswith("rollout.")] == [
        "rollout.created",
        "rollout.completed",
    ]
    # The other scopes never saw anything.
    for scope in ("workers", "jumpbox", "shop"):
        assert platform.scope_doc(scope)["Events"] == []
