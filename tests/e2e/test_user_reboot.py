"""A user reboot of one VM, seen by every VM of its availability set."""

from __future__ import annotations

from email.utils import parsedate_to_datetime

import pytest

from tests.e2e.conftest import (
    REAL_FAST,
    REBOOT_HOLD,
    REBOOT_NOTICE,
    SCOPES,
    TIME_SCALE,
    Launch,
    Platform,
    rfc1123,
    statuses,
)
from tests.support.waiting import wait_until

WEB = SCOPES["web"]


def test_user_reboot_is_scheduled_approved_by_another_vm_started_and_removed(
    platform: Platform,
) -> None:
    platform.enable("web-0")
    empty = platform.observe(WEB)["web-0"]
    assert empty["Events"] == []

    created = platform.now()
    op = platform.trigger("user-reboot", "web-0")
    assert op["not_before"] == created + REBOOT_NOTICE
    doc = platform.observe(WEB)["web-0"]
    assert doc["DocumentIncarnation"] > empty["DocumentIncarnation"]
    [event] = doc["Events"]
    assert event == {
        "EventId": op["event_ids"][0],
        "EventStatus": "Scheduled",
        "EventType": "Reboot",
        "ResourceType": "VirtualMachine",
        "Resources": ["web-0"],
        "NotBefore": rfc1123(created + REBOOT_NOTICE),
        "Description": "Virtual machine is going to be restarted as requested by authorized user.",
        "EventSource": "User",
        "DurationInSeconds": -1,
    }
    assert parsedate_to_datetime(event["NotBefore"]).timestamp() == int(created + REBOOT_NOTICE)

    # Time passing before NotBefore changes nothing.
    platform.advance(REBOOT_NOTICE / 3)
    assert platform.observe(WEB)["web-0"] == doc

    # web-3 (127.1.0.4), another VM of the set, approves the event of web-0.
    platform.approve("web-3", event["EventId"])
    docs = platform.observe(WEB)
    started = docs["web-0"]
    assert docs["web-3"] == started
    assert started["DocumentIncarnation"] > doc["DocumentIncarnation"]
    assert [(e["EventId"], e["EventStatus"], e["NotBefore"]) for e in started["Events"]] == [
        (event["EventId"], "Started", "")
    ]
    assert platform.event(event["EventId"])["approved_by"] == "web-3"
    assert platform.vm_status("web-0") == "rebooting"

    # Approving again is harmless and changes nothing.
    platform.approve("web-0", event["EventId"])
    assert platform.observe(WEB)["web-0"] == started

    platform.advance(REBOOT_HOLD - 1)
    assert platform.observe(WEB)["web-0"] == started
    platform.advance(2)
    gone = platform.observe(WEB)["web-0"]
    assert gone["Events"] == []
    assert gone["DocumentIncarnation"] > started["DocumentIncarnation"]
    assert platform.vm_status("web-0") == "running"

    # Nothing more happens afterwards.
    platform.advance(REBOOT_NOTICE)
    assert platform.observe(WEB)["web-0"] == gone
    kinds = [h["kind"] for h in platform.history() if h["event_id"] == event["EventId"]]
    assert kinds == ["event.scheduled", "event.approved", "event.started", "event.completed"]


def test_user_reboot_in_scaled_real_time(launch: Launch) -> None:
    """The real scheduler sleeps: 15 min notice is 1.5 s and 10 min hold 1 s at scale 600."""
    platform = launch(REAL_FAST)
    platform.enable("web-0")
    op = platform.trigger("user-reboot", "web-0")
    [event_id] = op["event_ids"]
    assert op["not_before"] - op["created_at"] == pytest.approx(REBOOT_NOTICE / TIME_SCALE)
    assert statuses(platform.doc("web-3")) == {event_id: "Scheduled"}

    def status() -> str | None:
        return statuses(platform.doc("web-3")).get(event_id)

    wait_until(lambda: status() == "Started", timeout=15, what="the event to start")
    started_doc = platform.doc("web-3")
    assert started_doc["Events"][0]["NotBefore"] == ""
    wait_until(lambda: status() is None, timeout=15, what="the event to be removed")
    history = {h["kind"]: h["at"] for h in platform.history() if h["event_id"] == event_id}
    assert history["event.started"] == op["not_before"]
    assert history["event.completed"] == op["not_before"] + REBOOT_HOLD / TIME_SCALE
    assert platform.doc("web-0")["Events"] == []
