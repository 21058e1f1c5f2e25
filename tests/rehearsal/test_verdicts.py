"""What the report says about each event and VM, after VMs polled and approved for real.

Every test plays a rehearsal on the virtual clock (VMs ask the real endpoint, by their
own source address) and reads ``GET /api/v1/reactions``.
"""

from __future__ import annotations

import pytest

from tests.rehearsal.conftest import Rehearsal, vm_verdict
from tests.support.fabrics import T0

MINUTE = 60.0


async def test_a_sighting_is_the_first_document_that_showed_the_event(
    rehearsal: Rehearsal,
) -> None:
    assert (await rehearsal.poll("web-0"))["Events"] == []
    op = rehearsal.submit("user-reboot", "web-0")
    (event_id,) = rehearsal.event_ids(op)
    rehearsal.advance(3)
    document = await rehearsal.poll("web-0")
    assert [e["EventId"] for e in document["Events"]] == [event_id]
    rehearsal.advance(2)
    await rehearsal.poll("web-0")  # the same incarnation again: nothing new seen
    event = await rehearsal.verdict(event_id)
    web0 = vm_verdict(event, "web-0")
    assert web0["first_seen"] == T0 + 3
    assert web0["detected_after"] == 3.0
    assert web0["last_poll"] == T0 + 5
    assert (event["status"], event["verdict"]) == ("scheduled", "pending")
    assert event["summary"] == "Scheduled; 1 of 1 VMs have seen it so far"
    assert (event["kind"], event["type"], event["scope"]) == ("user-reboot", "Reboot", "web")
    assert event["notice"] == 15 * MINUTE


async def test_an_approval_before_not_before_is_ok(rehearsal: Rehearsal) -> None:
    await rehearsal.poll("web-0")
    op = rehearsal.submit("user-reboot", "web-0")
    (event_id,) = rehearsal.event_ids(op)
    rehearsal.advance(2)
    await rehearsal.poll("web-0")
    rehearsal.advance(4)
    await rehearsal.approve("web-0", event_id)
    document = await rehearsal.poll("web-0")
    assert document["Events"][0]["EventStatus"] == "Started"
    event = await rehearsal.verdict(event_id)
    assert (event["status"], event["start_reason"], event["verdict"]) == (
        "started", "approved", "ok",
    )  # fmt: skip
    assert event["summary"] == (
        "web-0 saw it after 2.0 s; approved by web-0 14 min 54 s before NotBefore"
    )
    web0 = vm_verdict(event, "web-0")
    assert (web0["verdict"], web0["approved_after"], web0["approved_in_time"]) == (
        "approved", 6.0, True,
    )  # fmt: skip
    # Its last request before the start was the approval (the poll that showed the event
    # Started came after).
    assert web0["last_poll_before_start"] == T0 + 6
    rehearsal.advance(11 * MINUTE)  # the reboot is over: the event is removed
    event = await rehearsal.verdict(event_id)
    assert (event["status"], event["ended_at"]) == ("completed", T0 + 6 + 10 * MINUTE)
    assert event["verdict"] == "ok"
    report = await rehearsal.report()
    assert report["approval"]["values"] == [6.0]
    assert report["detection"]["values"] == [2.0]


async def test_a_vm_that_did_not_poll_during_the_notice_missed_it(rehearsal: Rehearsal) -> None:
    await rehearsal.poll("web-0")
    rehearsal.advance(MINUTE)
    op = rehearsal.submit("user-reboot", "web-0")
    (event_id,) = rehearsal.event_ids(op)
    rehearsal.advance(15 * MINUTE)  # NotBefore passes: it starts, unseen
    event = await rehearsal.verdict(event_id)
    assert event["verdict"] == "fail"
    assert event["missed"] == ["web-0"]
    assert event["summary"] == "1 of 1 VMs missed it (web-0)"
    web0 = vm_verdict(event, "web-0")
    assert web0["verdict"] == "missed"
    assert web0["note"] == (
        "never saw it before it started: did not poll during the notice (last poll 60 s before it)"
    )
    assert web0["last_poll_before_start"] == T0
    report = await rehearsal.report()
    assert [p["vm"] for p in report["stopped_polling"]] == ["web-0"]
    assert report["stopped_polling"][0]["silent_for"] == 16 * MINUTE
    assert (await rehearsal.report(stale_after=3600))["stopped_polling"] == []


async def test_a_vm_that_never_polled_missed_it(rehearsal: Rehearsal) -> None:
    op = rehearsal.submit("user-reboot", "web-0")
    (event_id,) = rehearsal.event_ids(op)
    rehearsal.advance(15 * MINUTE)
    web0 = vm_verdict(await rehearsal.verdict(event_id), "web-0")
    assert web0["note"] == "never saw it before it started: never polled"
    assert (await rehearsal.report())["stopped_polling"] == []  # it never polled at all


async def test_an_api_version_that_hides_the_event_type_is_a_miss(rehearsal: Rehearsal) -> None:
    """Preempt exists from 2017-11-01: a client on 2017-08-01 polls and never sees it."""
    await rehearsal.poll("workers_0", "2017-08-01")
    op = rehearsal.submit("spot-eviction", "workers_0")
    (event_id,) = rehearsal.event_ids(op)
    rehearsal.advance(5)
    assert (await rehearsal.poll("workers_0", "2017-08-01"))["Events"] == []
    rehearsal.advance(25)  # 30 s notice: it starts
    event = await rehearsal.verdict(event_id)
    workers0 = vm_verdict(event, "workers_0")
    assert workers0["verdict"] == "missed"
    assert workers0["note"] == (
        "never saw it before it started: polls with api-version 2017-08-01, "
        "which does not show Preempt"
    )
    assert workers0["last_poll_before_start"] == T0 + 5
    await rehearsal.poll("workers_0")  # a newer client sees it Started: still a miss
    workers0 = vm_verdict(await rehearsal.verdict(event_id), "workers_0")
    assert (workers0["verdict"], workers0["seen_started"]) == ("missed", T0 + 30)


async def test_approvals_by_vms_the_event_does_not_list(rehearsal: Rehearsal) -> None:
    await rehearsal.poll("web-0")
    op = rehearsal.submit("user-reboot", "web-0")
    (event_id,) = rehearsal.event_ids(op)
    rehearsal.advance(1)
    await rehearsal.poll("web-0")
    await rehearsal.poll("web-1")  # any VM of the availability set sees it
    rehearsal.advance(1)
    await rehearsal.approve("web-1", event_id)  # allowed (S5), rarely meant
    event = await rehearsal.verdict(event_id)
    assert event["verdict"] == "warn"
    assert event["unlisted_approvals"] == ["web-1"]
    assert event["summary"].endswith("approved by unlisted VMs: web-1")
    web1 = vm_verdict(event, "web-1")
    assert (web1["listed"], web1["verdict"], web1["approved_at"]) == (False, "unlisted", T0 + 2)
    report = await rehearsal.report()
    assert report["unlisted_approvals"] == [{"event_id": event_id, "vm": "web-1", "at": T0 + 2}]
    assert [v["vm"] for v in event["vms"]] == ["web-0", "web-1"]


async def test_an_event_nobody_approved_starts_at_not_before(rehearsal: Rehearsal) -> None:
    await rehearsal.poll("web-0")
    op = rehearsal.submit("user-reboot", "web-0")
    (event_id,) = rehearsal.event_ids(op)
    rehearsal.advance(1)
    await rehearsal.poll("web-0")
    rehearsal.advance(15 * MINUTE)
    event = await rehearsal.verdict(event_id)
    assert (event["verdict"], event["start_reason"]) == ("warn", "not_before")
    assert event["summary"].endswith("nobody approved: it started at NotBefore")
    assert vm_verdict(event, "web-0")["verdict"] == "detected"


async def test_the_operator_s_approval_and_a_forced_start(rehearsal: Rehearsal) -> None:
    await rehearsal.poll("web-0")
    op = rehearsal.submit("user-reboot", "web-0")
    (approved,) = rehearsal.event_ids(op)
    rehearsal.advance(1)
    await rehearsal.poll("web-0")
    rehearsal.fabric.approve_event(approved)
    event = await rehearsal.verdict(approved)
    assert event["verdict"] == "ok"
    assert event["summary"].endswith("approved by the operator 14 min 59 s before NotBefore")
    await rehearsal.poll("web-3")
    op = rehearsal.submit("user-reboot", "web-3")
    (forced,) = rehearsal.event_ids(op)
    rehearsal.advance(1)
    await rehearsal.poll("web-3")
    rehearsal.fabric.start_event(forced)
    event = await rehearsal.verdict(forced)
    assert (event["verdict"], event["start_reason"]) == ("ok", "forced")
    assert event["summary"].endswith("started early by the operator")


async def test_events_created_started_or_canceled_are_information(rehearsal: Rehearsal) -> None:
    op = rehearsal.submit("hardware-failure", "web-0")
    (failed,) = rehearsal.event_ids(op)
    rehearsal.advance(2)
    await rehearsal.poll("web-0")
    event = await rehearsal.verdict(failed)
    assert (event["verdict"], event["summary"]) == (
        "info", "created Started (no notice to react to)",
    )  # fmt: skip
    web0 = vm_verdict(event, "web-0")
    assert (web0["verdict"], web0["seen_started"]) == ("created-started", T0 + 2)
    op = rehearsal.submit("user-reboot", "web-3")
    (canceled,) = rehearsal.event_ids(op)
    await rehearsal.poll("web-3")
    rehearsal.fabric.cancel_event(canceled)
    event = await rehearsal.verdict(canceled)
    assert (event["status"], event["verdict"]) == ("canceled", "info")
    assert event["summary"] == "canceled before it started; 1 of 1 VMs had seen it"
    assert event["ended_at"] == T0 + 2


async def test_every_listed_vm_is_graded(rehearsal: Rehearsal) -> None:
    """A platform reboot of a host lists several VMs: each gets its own verdict."""
    for vm in ("FrontEnd_IN_0", "web-0", "workers_1"):
        await rehearsal.poll(vm)
    op = rehearsal.submit("live-migration", host="host-1")
    events = {e.scope_id: e.id for e in rehearsal.fabric.events() if e.operation_id == op.id}
    assert set(events) == {"web", "workers", "shop"}
    rehearsal.advance(4)
    await rehearsal.poll("web-0")
    await rehearsal.poll("FrontEnd_IN_0")
    rehearsal.advance(15 * MINUTE)
    report = await rehearsal.report()
    verdicts = {e["scope"]: e["verdict"] for e in report["events"]}
    assert verdicts == {"web": "warn", "shop": "warn", "workers": "fail"}
    assert report["totals"] == {"ok": 0, "warn": 2, "fail": 1, "pending": 0, "info": 0}
    assert report["detection"]["values"] == [4.0, 4.0]
    assert report["detection"]["median"] == 4.0


async def test_since_keeps_later_events_only(rehearsal: Rehearsal) -> None:
    first = rehearsal.submit("user-reboot", "web-0")
    rehearsal.advance(MINUTE)
    second = rehearsal.submit("user-reboot", "web-3")
    report = await rehearsal.report(since=T0 + 30)
    assert [e["id"] for e in report["events"]] == rehearsal.event_ids(second)
    assert report["since"] == T0 + 30
    everything = await rehearsal.report()
    assert [e["id"] for e in everything["events"]] == [
        *rehearsal.event_ids(first), *rehearsal.event_ids(second),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"since": "yesterday"}, "query parameter since must be a number of seconds"),
        ({"stale_after": "-1"}, "query parameter stale_after must be a number from 0 to 1e12"),
        ({"stale_after": "nan"}, "query parameter stale_after must be a number from 0 to 1e12"),
        ({"since": "1e300"}, "query parameter since must be a number from 0 to 1e12"),
    ],
)
async def test_bad_parameters_are_refused(
    rehearsal: Rehearsal, params: dict[str, str], message: str
) -> None:
    for path in ("/api/v1/reactions", "/api/v1/report"):
        response = await rehearsal.control_get(path, **params)
        assert response.status_code == 400
        assert response.json() == {"error": message}


async def test_a_vm_the_platform_deleted_has_not_stopped_polling(rehearsal: Rehearsal) -> None:
    await rehearsal.poll("workers_0")
    op = rehearsal.submit("spot-eviction", "workers_0")
    (event_id,) = rehearsal.event_ids(op)
    rehearsal.advance(1)
    await rehearsal.poll("workers_0")
    rehearsal.advance(30 * MINUTE)  # evicted: the VM is gone, and so are its polls
    assert rehearsal.fabric.is_deleted("workers_0")
    report = await rehearsal.report()
    assert report["stopped_polling"] == []
    event = next(e for e in report["events"] if e["id"] == event_id)
    assert (event["status"], vm_verdict(event, "workers_0")["verdict"]) == (
        "completed", "detected",
    )  # fmt: skip


async def test_an_approval_after_the_start_is_late(rehearsal: Rehearsal) -> None:
    """web-1 and web-4 share a host and an update domain: one event lists both."""
    op = rehearsal.submit("platform-reboot", "web-1", "web-4")
    (event_id,) = rehearsal.event_ids(op)
    await rehearsal.poll("web-1")
    await rehearsal.poll("web-4")
    rehearsal.advance(3)
    await rehearsal.approve("web-1", event_id)  # this starts it
    rehearsal.advance(2)
    await rehearsal.approve("web-4", event_id)  # still accepted, but too late to matter
    event = await rehearsal.verdict(event_id)
    early, late = vm_verdict(event, "web-1"), vm_verdict(event, "web-4")
    assert (early["approved_in_time"], late["approved_in_time"]) == (True, False)
    assert late["note"] == (
        "saw it after 0.0 s, approved too late: 2.0 s after it started (not counted as approved)"
    )
    assert late["verdict"] == "detected"  # web-1's approval started it; web-4's came late
    assert event["verdict"] == "ok"
