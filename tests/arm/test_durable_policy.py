"""A policy changed through ARM is durable: after a SIGKILL the restarted server still
applies it (SQLite and PostgreSQL), and it shows on GET as set."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.arm.conftest import GROUP, ArmServer, start_arm_server
from tests.scaleout.pg import PgDatabase, pg_database

POLICY = {
    "properties": {
        "scheduledEventsPolicy": {
            "userInitiatedReboot": {"automaticallyApprove": True},
            "allInstancesDown": {"automaticallyApprove": True},
        }
    }
}
PROFILE = {
    "properties": {
        "virtualMachineProfile": {
            "scheduledEventsProfile": {
                "terminateNotificationProfile": {"enable": True, "notBeforeTimeout": "PT12M"},
                "osImageNotificationProfile": {"enable": True, "notBeforeTimeout": "PT7M"},
            }
        }
    }
}


@pytest.fixture(params=["sqlite", "postgresql"])
def store_args(request: pytest.FixtureRequest) -> Iterator[tuple[str, ...]]:
    if request.param == "sqlite":
        yield ()
        return
    for database in pg_database():
        assert isinstance(database, PgDatabase)
        yield ("--store", database.url)


def test_a_policy_set_through_arm_survives_a_kill(
    tmp_path: Path, store_args: tuple[str, ...]
) -> None:
    arm = start_arm_server(tmp_path, extra=store_args)
    try:
        compute = arm.compute()
        compute.virtual_machines.begin_update(GROUP, "solo", POLICY).result(timeout=30)
        compute.virtual_machine_scale_sets.begin_update(GROUP, "quiet", PROFILE).result(timeout=30)
    finally:
        assert arm.server.kill(signal.SIGKILL) != 0
    arm = start_arm_server(tmp_path, extra=store_args)
    try:
        _check_applied(arm)
    finally:
        arm.server.stop()


def _check_applied(arm: ArmServer) -> None:
    compute = arm.compute()
    solo = compute.virtual_machines.get(GROUP, "solo").as_dict()["properties"]
    assert solo["scheduledEventsPolicy"]["userInitiatedReboot"] == {"automaticallyApprove": True}
    assert solo["scheduledEventsPolicy"]["allInstancesDown"] == {"automaticallyApprove": True}
    quiet = compute.virtual_machine_scale_sets.get(GROUP, "quiet").as_dict()["properties"]
    assert quiet["virtualMachineProfile"]["scheduledEventsProfile"] == {
        "terminateNotificationProfile": {"enable": True, "notBeforeTimeout": "PT12M"},
        "osImageNotificationProfile": {"enable": True, "notBeforeTimeout": "PT7M"},
    }
    # The platform acts on it: the reboot is created Started, the delete has 12 min notice.
    compute.virtual_machines.begin_restart(GROUP, "solo")
    [event] = arm.document("solo")["Events"]
    assert (event["EventType"], event["EventStatus"]) == ("Reboot", "Started")
    sets = compute.virtual_machine_scale_sets
    sets.begin_delete_instances(GROUP, "quiet", {"instanceIds": ["1"]})
    [terminate] = arm.events("quiet_1")
    assert terminate["type"] == "Terminate"
    assert terminate["not_before"] - terminate["created_at"] == pytest.approx(12 * 60)
