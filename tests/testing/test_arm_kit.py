"""The kit with ``arm=True``: users' suites drive the in-process forewarn with the
unmodified azure-mgmt-compute client, and the VM sees what ARM asked for."""

from __future__ import annotations

import time
from typing import Any

import pytest
from azure.core.credentials import AccessToken
from azure.mgmt.compute import ComputeManagementClient

from forewarn.testing import Forewarn

FLEET = """\
subscription: 11111111-2222-3333-4444-555555555555
resource_group: rg-kit
scopes:
  - kind: availability_set
    name: web
    vms: 2
"""


class AnyToken:
    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken("kit", int(time.time()) + 3600)


def compute(forewarn: Forewarn) -> ComputeManagementClient:
    return ComputeManagementClient(
        AnyToken(), forewarn.subscription, base_url=forewarn.arm_url,
        connection_verify=forewarn.arm_ca,
    )  # fmt: skip


def test_restart_through_azure_mgmt_compute_reaches_the_vm() -> None:
    with Forewarn(FLEET, arm=True) as forewarn:
        assert forewarn.arm_url.startswith("https://127.0.0.1:")
        assert forewarn.resource_group == "rg-kit"
        client = compute(forewarn)
        vm = client.virtual_machines.get("rg-kit", "web-1")
        assert vm.name == "web-1"
        poller = client.virtual_machines.begin_restart("rg-kit", "web-1")
        seen = forewarn.client("web-1").get()
        reboots = [e for e in seen.events if e.event_type.value == "Reboot"]
        assert [list(e.resources) for e in reboots] == [["web-1"]]
        assert forewarn.event(reboots[0].event_id)["source"] == "User"
        assert not poller.done()
        forewarn.client("web-1").approve(reboots[0].event_id)
        assert forewarn.event(reboots[0].event_id)["approved_via"] == "endpoint"
        forewarn.advance(900)
        poller.result(timeout=60)
        assert poller.status() == "Succeeded"
        client.close()


def test_without_arm_there_is_no_arm_url() -> None:
    with Forewarn(FLEET) as forewarn:
        assert forewarn.arm_url == ""
        assert forewarn.arm_ca == ""


def test_marker_turns_arm_on(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest, ssl, httpx

        @pytest.mark.forewarn(arm=True)
        def test_arm(forewarn):
            ctx = ssl.create_default_context(cafile=forewarn.arm_ca)
            path = (f"/subscriptions/{forewarn.subscription}/resourceGroups/"
                    f"{forewarn.resource_group}/providers/Microsoft.Compute/virtualMachines/"
                    f"{forewarn.default_vm}?api-version=2024-07-01")
            r = httpx.get(forewarn.arm_url + path, verify=ctx, trust_env=False,
                          headers={"Authorization": "Bearer x"})
            assert r.status_code == 200, r.text
            assert r.json()["name"] == forewarn.default_vm
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
