"""``trigger --region`` rolls a platform update over the whole fleet and says how; bad
combinations are refused with one line and nothing changed; ``rollouts`` lists them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.serverproc import ServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    args = ["--clock", "virtual", "--enablement", "always"]
    proc = ServerProcess(tmp_path_factory.mktemp("region") / "r.db", args).start()
    yield proc
    proc.stop()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["trigger", "host-update"], "name a TARGET or give --region"),
        (["trigger", "host-update", "web", "--region"], "name a TARGET or give --region"),
        (["trigger", "host-update", "web", "--wave-hosts", "3"], "--wave-hosts is for a region"),
        (["trigger", "host-update", "--region", "--wave-hosts", "0"], "--wave-hosts"),
        (["trigger", "user-reboot", "--region"], "user-reboot is a user operation; name a VM, "
         "not the region"),
        (["trigger", "spot-eviction", "--region"], "spot-eviction does not roll out over a "
         "region; only host-update, platform-reboot and platform-redeploy walk"),
    ],
)  # fmt: skip
def test_bad_region_triggers_are_refused(
    server: ServerProcess, args: list[str], message: str
) -> None:
    before = server.control("GET", "/api/v1/operations").json()
    result = run_cli(args, server.control_url)
    assert result.code != 0
    assert message in result.stderr, result.stderr
    assert server.control("GET", "/api/v1/operations").json() == before


def test_a_region_trigger_prints_the_rollout_and_its_first_wave(server: ServerProcess) -> None:
    result = run_cli(["trigger", "platform-reboot", "--region", "--wave-hosts", "2"],
                     server.control_url)  # fmt: skip
    assert (result.code, result.stderr) == (0, "")
    first, second = result.stdout.splitlines()
    match = re.fullmatch(
        r"(rollout-\w+): platform-reboot over the region in 5 waves of up to 2 hosts; wave 1:",
        first,
    )
    assert match, result.stdout
    assert re.fullmatch(r"op-\w+: platform-reboot on region \(scheduled\), NotBefore .*", second)
    listed = run_cli(["rollouts", "--json"], server.control_url)
    (rollout,) = json.loads(listed.stdout)
    assert (rollout["id"], rollout["batch"], rollout["batches"]) == (match[1], 1, 5)
    table = run_cli(["rollouts", "--wide"], server.control_url).stdout
    assert match[1] in table and "region (2 hosts a wave)" in table and "1 of 5" in table


def test_a_served_region_rollout_resumes_at_its_wave_after_a_restart(tmp_path: Path) -> None:
    args = ["--clock", "virtual", "--enablement", "always"]
    first = ServerProcess(tmp_path / "r.db", args).start()
    try:
        body = {"kind": "platform-redeploy", "region": True, "wave_hosts": 2}
        assert first.control("POST", "/api/v1/operations", json=body).status_code == 201
        first.control("POST", "/api/v1/clock/advance", json={"seconds": 20 * 60})
        (before,) = first.control("GET", "/api/v1/rollouts").json()
        assert before["batch"] == 2  # the first wave over at 20 min, the second announced
    finally:
        first.stop()
    again = ServerProcess(tmp_path / "r.db", []).start()
    try:
        assert again.control("GET", "/api/v1/rollouts").json() == [before]
        for _ in range(3):  # three more waves of 20 min each
            again.control("POST", "/api/v1/clock/advance", json={"seconds": 20 * 60})
        (after,) = again.control("GET", "/api/v1/rollouts").json()
        assert (after["batch"], after["done"]) == (5, True)
        waves = [op for op in again.control("GET", "/api/v1/operations").json()
                 if op["rollout_id"] == before["id"]]  # fmt: skip
        assert len(waves) == 5
        assert sorted(vm for op in waves for vm in op["vms"]) == sorted(
            vm["name"] for vm in again.control("GET", "/api/v1/vms").json()
        ), "every VM exactly once, across the restart"
    finally:
        again.stop()
