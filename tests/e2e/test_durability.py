"""A real SIGKILL at any moment loses nothing the server acknowledged; timers resume."""

from __future__ import annotations

import random
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.conftest import (
    DEMO,
    FREEZE_HOLD,
    REAL_FAST,
    REBOOT_HOLD,
    SCOPES,
    SPOT_HOLD,
    SPOT_NOTICE,
    TIME_SCALE,
    VIRTUAL,
    Launch,
    Platform,
    scope_of,
    statuses,
)
from tests.support.waiting import wait_until

LIVE = [vm for vm in DEMO if vm != "workers_1"]
ONE_PER_SCOPE = [vms[0] for vms in SCOPES.values()]


def kill(platform: Platform) -> None:
    """A real SIGKILL: no shutdown code runs."""
    assert platform.server.kill(signal.SIGKILL) == -signal.SIGKILL


def restart(
    launch: Launch, before: Platform, db: Path, args: tuple[str, ...] = VIRTUAL
) -> Platform:
    """A new server on the same database, continuing the incarnation checks of ``before``."""
    return launch(args, db=db, seen=before.seen)


def build_mixed_state(platform: Platform) -> dict[str, Any]:
    """Events in every state; returns the operations by role."""
    platform.enable(*ONE_PER_SCOPE)
    ops: dict[str, Any] = {}
    # workers_1 is evicted for real: Preempt, 30 s notice, 60 s hold, then deleted.
    ops["evicted"] = platform.trigger("spot-eviction", "workers_1")
    platform.advance(SPOT_NOTICE + SPOT_HOLD)
    # host-2 (not host-1: it carries the evicted workers_1) has one event per scope:
    # web (web-1, web-4), workers (workers_2), shop (FrontEnd_IN_1); only the shop's is
    # approved.
    ops["waiting"] = platform.trigger("host-update", "host-2")
    assert sorted((e["scope"], e["resources"]) for e in platform.events()) == [
        ("shop", ["FrontEnd_IN_1"]),
        ("web", ["web-1", "web-4"]),
        ("workers", ["workers_2"]),
    ]
    shop_event = next(e for e in platform.events() if e["scope"] == "shop")
    platform.approve("BackEnd_IN_0", shop_event["id"])
    ops["scheduled"] = platform.trigger("user-reboot", "jumpbox")
    ops["started"] = platform.trigger("user-reboot", "web-2")
    platform.approve("web-2", ops["started"]["event_ids"][0])
    ops["canceled"] = platform.trigger("user-redeploy", "web-5")
    platform.call("POST", f"/api/v1/events/{ops['canceled']['event_ids'][0]}/cancel")
    return {role: platform.operation(op["id"]) for role, op in ops.items()}


def record(platform: Platform) -> dict[str, Any]:
    """Everything that must survive a restart unchanged."""
    platform.observe(LIVE)
    return {
        "documents": platform.raw_all(),
        "events": platform.events(),
        "operations": platform.operations(),
        "incarnations": platform.incarnations(),
        "history": platform.history(),
        "clock": platform.now(),
    }


def test_sigkill_and_restart_keep_every_document_byte_identical(
    launch: Launch, tmp_path: Path
) -> None:
    db = tmp_path / "kill.db"
    first = launch(db=db)
    ops = build_mixed_state(first)
    assert {role: op["state"] for role, op in ops.items()} == {
        "evicted": "completed",
        "waiting": "scheduled",
        "scheduled": "scheduled",
        "started": "started",
        "canceled": "canceled",
    }
    before = record(first)
    assert before["documents"]["workers_1"][0] == 404
    assert sum(e["approved_by"] is not None for e in before["events"]) == 2  # shop, web-2
    kill(first)

    second = restart(launch, first, db)
    after = record(second)
    assert after["documents"] == before["documents"]  # same bytes: ids, NotBefore, incarnations
    assert after["events"] == before["events"]  # approvals included
    assert after["operations"] == before["operations"]
    assert after["incarnations"] == before["incarnations"]
    assert after["history"][: len(before["history"])] == before["history"]
    assert after["clock"] == before["clock"]  # a virtual clock resumes where it stood
    assert second.vm_status("workers_1") == "deleted"

    # Timers resume from their absolute instants.
    started, waiting = ops["started"], ops["waiting"]
    second.advance_to(started["remove_at"])
    docs = second.observe(LIVE)
    assert started["event_ids"][0] not in statuses(docs["web-0"])
    assert set(statuses(docs["jumpbox"]).values()) == {"Scheduled"}
    assert set(statuses(docs["web-0"]).values()) == {"Scheduled"}

    second.advance_to(waiting["not_before"])
    docs = second.observe(LIVE)
    for vm in ("web-0", "workers_0", "FrontEnd_IN_0", "jumpbox"):
        assert set(statuses(docs[vm]).values()) == {"Started"}, vm
    started_at = {h["event_id"]: h["at"] for h in second.history() if h["kind"] == "event.started"}
    for op in (waiting, ops["scheduled"]):
        assert [started_at[e] for e in op["event_ids"]] == [op["not_before"]] * len(op["event_ids"])

    second.advance(max(FREEZE_HOLD, REBOOT_HOLD))
    assert all(doc["Events"] == [] for doc in second.observe(LIVE).values())
    assert second.events() == []
    for scope, incarnation in second.incarnations().items():
        assert incarnation >= before["incarnations"][scope]


class Load(threading.Thread):
    """Creates and approves operations as fast as it can until the server dies."""

    def __init__(self, platform: Platform, rng: random.Random) -> None:
        super().__init__(daemon=True)
        self.platform = platform
        self.rng = rng
        self.ops: dict[str, list[str]] = {}  # acknowledged operations -> their events
        self.approved: dict[str, str] = {}  # acknowledged approvals: event -> by
        self.incarnations: dict[str, int] = {}  # highest incarnation seen per scope
        self.errors: list[BaseException] = []

    def run(self) -> None:
        try:
            while True:
                self.step()
        except httpx.HTTPError:
            return  # the server is gone
        except BaseException as exc:  # reported by the test
            self.errors.append(exc)

    def step(self) -> None:
        platform, rng = self.platform, self.rng
        vm = rng.choice(LIVE)
        target = rng.choice([vm, vm, DEMO[vm][1]])  # a VM, or its whole host
        response = platform.control_client.post(
            "/api/v1/operations", json={"kind": "live-migration", "target": target}
        )
        assert response.status_code == 201, response.text
        op = response.json()
        self.ops[op["id"]] = op["event_ids"]
        if op["event_ids"]:
            event_id = rng.choice(op["event_ids"])
            if rng.random() < 0.5:
                response = platform.control_client.post(f"/api/v1/events/{event_id}/approve")
                by = "control"
            else:
                event = platform.control_client.get(f"/api/v1/events/{event_id}").json()
                by = next(v for v in SCOPES[event["scope"]] if v != "workers_1")
                response = platform.imds(
                    "POST", by, json={"StartRequests": [{"EventId": event_id}]}
                )
            assert response.status_code == 200, response.text
            self.approved.setdefault(event_id, by)
        response = platform.get(vm)
        assert response.status_code == 200, response.text
        scope = scope_of(vm)
        incarnation = response.json()["DocumentIncarnation"]
        self.incarnations[scope] = max(self.incarnations.get(scope, 0), incarnation)


def test_sigkill_under_load_loses_nothing_acknowledged(launch: Launch, tmp_path: Path) -> None:
    db = tmp_path / "load.db"
    rng = random.Random(20261125)
    platform = launch(db=db)
    platform.enable(*ONE_PER_SCOPE)
    acked_ops: dict[str, list[str]] = {}
    acked_approvals: dict[str, str] = {}
    highest: dict[str, int] = {}
    for _round in range(3):
        load = Load(platform, random.Random(rng.random()))
        load.start()
        time.sleep(rng.uniform(0.15, 0.5))
        kill(platform)
        load.join(timeout=20)
        assert not load.is_alive()
        assert not load.errors, load.errors
        assert load.ops, "the load made no progress before the kill"
        acked_ops.update(load.ops)
        acked_approvals.update(load.approved)
        for scope, incarnation in load.incarnations.items():
            highest[scope] = max(highest.get(scope, 0), incarnation)

        platform = launch(db=db)
        operations = {op["id"]: op for op in platform.operations()}
        events = {e["id"]: e for e in platform.events()}
        for op_id, event_ids in acked_ops.items():
            assert op_id in operations, f"acknowledged operation {op_id} was lost"
            assert operations[op_id]["event_ids"] == event_ids
            for event_id in event_ids:
                assert event_id in events, f"event {event_id} of {op_id} was lost"
        for event_id, by in acked_approvals.items():
            assert events[event_id]["approved_by"] == by, f"approval of {event_id} was lost"
            op = operations[events[event_id]["operation_id"]]
            if len(op["event_ids"]) == 1:
                assert events[event_id]["status"] == "Started"
        incarnations = platform.incarnations()
        for scope, seen in highest.items():
            assert incarnations[scope] >= seen, f"{scope}: incarnation went back"
        docs = platform.observe(LIVE)
        for vm in LIVE:
            assert docs[vm]["DocumentIncarnation"] == incarnations[scope_of(vm)]
            visible = statuses(docs[vm])
            for event in events.values():
                if event["scope"] == scope_of(vm):
                    assert visible[event["id"]] == event["status"]
    assert len(acked_ops) >= 3


def test_timers_that_came_due_while_down_fire_at_once_after_restart(
    launch: Launch, tmp_path: Path
) -> None:
    db = tmp_path / "real.db"
    first = launch(REAL_FAST, db=db)
    first.enable("web-0", "jumpbox")
    reboot = first.trigger("user-reboot", "web-0")  # 1.5 s notice, then 1 s hold
    degraded = first.trigger("degraded-hardware", "jumpbox")  # 7 days / 600 notice
    jumpbox_before = first.raw("jumpbox")
    incarnations = first.incarnations()
    kill(first)
    wait_until(
        lambda: time.time() > reboot["not_before"] + 0.1, timeout=10, what="NotBefore to pass"
    )

    second = restart(launch, first, db, REAL_FAST)
    [event_id] = reboot["event_ids"]
    status = statuses(second.doc("web-3")).get(event_id)
    assert status in ("Started", None), f"NotBefore passed while down, yet {status}"
    assert second.raw("jumpbox") == jumpbox_before
    assert second.operation(degraded["id"])["state"] == "scheduled"
    wait_until(lambda: event_id not in statuses(second.doc("web-3")), timeout=15, what="removal")
    kinds = [(h["kind"], h["at"]) for h in second.history() if h["event_id"] == event_id]
    hold = REBOOT_HOLD / TIME_SCALE
    assert kinds == [
        ("event.scheduled", reboot["created_at"]),
        ("event.started", reboot["not_before"]),
        ("event.completed", reboot["not_before"] + hold),
    ]
    for scope, incarnation in second.incarnations().items():
        assert incarnation >= incarnations[scope]


def test_virtual_clock_never_goes_back_across_a_restart(launch: Launch, tmp_path: Path) -> None:
    db = tmp_path / "clock.db"
    first = launch(db=db)
    first.enable("web-0")
    first.trigger("user-reboot", "web-0")
    first.advance(3600)  # started and removed
    before = first.now()
    last_entry = first.history()[-1]["at"]
    kill(first)
    second = restart(launch, first, db)
    second.trigger("user-reboot", "web-0")
    assert second.now() >= before
    assert second.history()[-1]["at"] >= last_entry
