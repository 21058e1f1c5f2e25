"""The conformance kit passes every rule against each process of a scaled-out fleet on
PostgreSQL, the leader and a follower alike: a VM behind either front-end sees the same
service (issue 30)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conformance.conftest import PROBE_RULES, Verdicts, kit
from tests.scaleout.conftest import VIRTUAL
from tests.scaleout.fleet import Fleet


@pytest.mark.slow  # a fleet of two on PostgreSQL
def test_the_kit_passes_on_the_leader_and_on_a_follower(
    start_fleet: Callable[..., Fleet],
) -> None:
    fleet = start_fleet(2, VIRTUAL)  # no rate limit: the kit's pace is test_against_forewarn's
    leader = fleet.wait_for_leader()
    follower = next(i for i in range(2) if i != leader)
    for kind, vm in (("user-reboot", "workers_0"), ("spot-eviction", "workers_2")):
        r = fleet.control(leader, "POST", "/api/v1/operations", json={"kind": kind, "target": vm})
        assert r.status_code == 201, r.text
    scopes = fleet.control(leader, "GET", "/api/v1/topology").json()["scopes"]
    vm_address = next(v["address"] for s in scopes for v in s["vms"] if v["name"] == "workers_0")
    for index in (leader, follower):
        ran = kit(fleet.servers[index].imds_url, "--source-address", vm_address, "--rate", "50",
                  "--json")  # fmt: skip
        assert ran.code == 0, ran.stdout + ran.stderr
        report = Verdicts.of(ran.stdout)
        assert report.data["vm"] == "workers_0"
        assert report.verdict("FAIL") == set(), (index, report.data)
        assert report.verdict("PASS") == PROBE_RULES - {"R8.rate-limit"}, index
