"""Every named scenario, played on a virtual clock against the demo fleet: the documents
each VM got from its own endpoint over time, and the verdict of the run.

The demo fleet's host-1 carries web-0 (availability set web), workers_1 (Spot scale set
workers) and FrontEnd_IN_0 (cloud service shop); jumpbox lives alone on host-4.
"""

from __future__ import annotations

from typing import Any

import pytest

from forewarn.fleet.loader import example_fleet_text
from forewarn.scenarios import library_names, library_scenario

MIN = 60.0
HOST_1 = ("web-0", "workers_1", "FrontEnd_IN_0")
FREEZE_HOLD = 5 * MIN
REBOOT_HOLD = 10 * MIN


def _verdict(played: Any) -> None:
    run = played.run
    assert run.ok, [(c.what, c.detail) for c in run.checks if not c.ok]
    assert run.checks, "a named scenario checks something"


def _untouched(played: Any, *vms: str) -> None:
    for vm in vms:
        assert played.watch.timeline(vm) == [(0.0, [])], vm


def test_every_named_scenario_is_tested_here() -> None:
    tested = {name.removeprefix("test_").replace("_", "-") for name in globals()}
    assert set(library_names()) <= tested


def _host_1_freeze(played: Any, *, duration: int, hold: float) -> None:
    """A Freeze per scope of host-1, each listing only its own VM; Started at NotBefore."""
    watch = played.watch
    for vm in HOST_1:
        assert watch.timeline(vm) == [
            (0.0, []),
            (0.0, ["Freeze Scheduled"]),
            (15 * MIN, ["Freeze Started"]),
            (15 * MIN + hold, []),
        ], vm
        scheduled, started = watch.docs[vm][1], watch.docs[vm][2]
        assert scheduled.events == (
            ("Freeze", "Scheduled", (vm,), watch.at(15 * MIN), duration, "Platform"),
        )
        assert started.events == (("Freeze", "Started", (vm,), "", duration, "Platform"),)
    # web-3 shares web-0's scope (availability set web), not its host: it sees web-0's event.
    assert watch.docs["web-3"][1].events == watch.docs["web-0"][1].events
    _untouched(played, "jumpbox")


def test_live_migration(play: Any) -> None:
    played = play(library_scenario("live-migration"))
    _verdict(played)
    _host_1_freeze(played, duration=5, hold=FREEZE_HOLD)


def test_host_maintenance(play: Any) -> None:
    played = play(library_scenario("host-maintenance"))
    _verdict(played)
    _host_1_freeze(played, duration=9, hold=FREEZE_HOLD)


def test_all_tenants_on_host(play: Any) -> None:
    """One tenant approving at +2m starts nothing: the work waits for all, or NotBefore."""
    played = play(library_scenario("all-tenants-on-host"))
    _verdict(played)
    _host_1_freeze(played, duration=9, hold=FREEZE_HOLD)
    [step] = [s for s in played.run.steps if s.summary.startswith("approve")]
    assert played.run.platform(step.t) == 2 * MIN
    assert played.run.operations["maintenance"][0]["started_at"] == played.watch.start + 15 * MIN


def test_canceled_maintenance(play: Any) -> None:
    played = play(library_scenario("canceled-maintenance"))
    _verdict(played)
    for vm in HOST_1:
        assert played.watch.timeline(vm) == [
            (0.0, []),
            (0.0, ["Freeze Scheduled"]),
            (5 * MIN, []),  # canceled before NotBefore: it disappears, nothing happens
        ], vm
    _untouched(played, "jumpbox")
    assert played.run.operations["maintenance"][0]["state"] == "canceled"


def test_host_os_rollout(play: Any) -> None:
    """web's update domains one at a time: UD 0 (web-0, web-3: two hosts, two events),
    then UD 1 (web-1, web-4), then UD 2 (web-2, web-5), each 15 min ahead."""
    played = play(library_scenario("host-os-rollout"))
    _verdict(played)
    watch = played.watch
    everyone = watch.timeline("web-0")
    assert all(watch.timeline(vm) == everyone for vm in ("web-1", "web-2", "web-3"))
    batch = 25 * MIN  # 15 min notice, then 10 min Started
    assert everyone == [
        (0.0, []),
        (0.0, ["Reboot Scheduled", "Reboot Scheduled"]),
        (15 * MIN, ["Reboot Started", "Reboot Started"]),
        (batch, ["Reboot Scheduled"]),
        (batch + 15 * MIN, ["Reboot Started"]),
        (2 * batch, ["Reboot Scheduled"]),
        (2 * batch + 15 * MIN, ["Reboot Started"]),
        (3 * batch, []),
    ]
    resources = [sorted(r for e in d.events for r in e[2]) for d in watch.docs["web-0"][1::2]]
    assert resources == [["web-0", "web-3"], ["web-1", "web-4"], ["web-2", "web-5"], []]
    _untouched(played, "jumpbox", "workers_0", "FrontEnd_IN_0")


def test_host_os_rollout_of_a_placement_group(play: Any) -> None:
    """On the AKS-like example: one placement group rolls, the others see nothing."""
    played = play(library_scenario("host-os-rollout"), example_fleet_text("aks"), "user/pg1")
    _verdict(played)
    watch = played.watch
    timeline = watch.timeline("user_1")
    assert timeline[0] == (0.0, [])
    started = [at for at, states in timeline[1:] if "Reboot Started" in states]
    assert len(started) == 5  # its 8 VMs span the 5 update domains
    assert started == [15 * MIN + k * 25 * MIN for k in range(5)]
    _untouched(played, "user_0", "user_2", "system_0")


def test_user_reboot(play: Any) -> None:
    played = play(library_scenario("user-reboot"))
    _verdict(played)
    watch = played.watch
    assert watch.timeline("web-0") == [
        (0.0, []),
        (0.0, ["Reboot Scheduled"]),
        (15 * MIN, ["Reboot Started"]),
        (25 * MIN, []),
    ]
    assert watch.docs["web-0"][1].events == (
        ("Reboot", "Scheduled", ("web-0",), watch.at(15 * MIN), -1, "User"),
    )
    assert watch.timeline("web-5") == watch.timeline("web-0")  # same availability set
    _untouched(played, "jumpbox", "workers_1")


def test_user_redeploy(play: Any) -> None:
    played = play(library_scenario("user-redeploy"))
    _verdict(played)
    watch = played.watch
    assert watch.timeline("web-0") == [
        (0.0, []),
        (0.0, ["Redeploy Scheduled"]),
        (10 * MIN, ["Redeploy Started"]),
        (20 * MIN, []),
    ]
    assert watch.docs["web-0"][1].events[0][3:] == (watch.at(10 * MIN), -1, "User")
    _untouched(played, "jumpbox")


def test_spot_eviction(play: Any) -> None:
    """workers_0 (Spot) gets a Preempt 30 s ahead, and is gone a minute after it starts;
    the rest of its scale set saw the event, then a document without it."""
    played = play(library_scenario("spot-eviction"))
    _verdict(played)
    watch = played.watch
    assert watch.timeline("workers_0") == [
        (0.0, []),
        (0.0, ["Preempt Scheduled"]),
        (30.0, ["Preempt Started"]),
        "deleted",
    ]
    assert watch.docs["workers_0"][1].events[0][3:] == (watch.at(30), -1, "Platform")
    assert watch.timeline("workers_2") == [
        (0.0, []),
        (0.0, ["Preempt Scheduled"]),
        (30.0, ["Preempt Started"]),
        (90.0, []),
    ]
    _untouched(played, "web-0", "jumpbox")


def test_scale_in_terminate(play: Any) -> None:
    """The scale set announces terminations 5 minutes ahead (its timeout_minutes)."""
    played = play(library_scenario("scale-in-terminate"))
    _verdict(played)
    watch = played.watch
    assert watch.timeline("workers_0") == [
        (0.0, []),
        (0.0, ["Terminate Scheduled"]),
        (5 * MIN, ["Terminate Started"]),
        "deleted",
    ]
    assert watch.docs["workers_0"][1].events[0][3:] == (watch.at(5 * MIN), -1, "User")
    assert watch.timeline("workers_3")[-1] == (6 * MIN, [])
    _untouched(played, "web-0")


def test_degraded_hardware(play: Any) -> None:
    """Three days' notice, played in a moment on the virtual clock."""
    played = play(library_scenario("degraded-hardware"))
    _verdict(played)
    watch = played.watch
    days = 3 * 24 * 3600.0
    for vm in HOST_1:
        assert watch.timeline(vm) == [
            (0.0, []),
            (0.0, ["Redeploy Scheduled"]),
            (days, ["Redeploy Started"]),
            (days + REBOOT_HOLD, []),
        ], vm
        assert watch.docs[vm][1].events[0][3] == watch.at(days)
    _untouched(played, "jumpbox")


def test_hardware_failure(play: Any) -> None:
    """No notice: the Redeploy is created Started (NotBefore "")."""
    played = play(library_scenario("hardware-failure"))
    _verdict(played)
    watch = played.watch
    for vm in HOST_1:
        assert watch.timeline(vm) == [(0.0, []), (0.0, ["Redeploy Started"]), (REBOOT_HOLD, [])]
        assert watch.docs[vm][1].events == (("Redeploy", "Started", (vm,), "", -1, "Platform"),)
    _untouched(played, "jumpbox")


@pytest.mark.parametrize("name", ["live-migration", "spot-eviction", "host-os-rollout"])
def test_targets_can_be_named(play: Any, name: str) -> None:
    target = {"live-migration": "host-4", "spot-eviction": "workers_3", "host-os-rollout": "shop"}
    played = play(library_scenario(name), target=target[name])
    _verdict(played)
    touched = {"live-migration": "jumpbox", "spot-eviction": "workers_3",
               "host-os-rollout": "BackEnd_IN_0"}[name]  # fmt: skip
    assert len(played.watch.timeline(touched)) > 1
