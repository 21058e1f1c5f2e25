"""Tokens: the real azure-identity ``ClientSecretCredential`` gets its token from
forewarn's identity routes, and ARM accepts it; a mismatched token is a 401 and an
oversized chunked body a 413, each changing nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from azure.core.exceptions import ClientAuthenticationError
from azure.identity import ClientSecretCredential
from azure.mgmt.compute import ComputeManagementClient

from tests.arm.conftest import GROUP, SUBSCRIPTION, ArmServer, start_arm_server

TOKEN = "s3cret-arm-token"
TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
VM = (
    f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}"
    "/providers/Microsoft.Compute/virtualMachines/solo?api-version=2024-07-01"
)


@pytest.fixture(scope="module")
def arm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArmServer]:
    tmp: Path = tmp_path_factory.mktemp("identity")
    server = start_arm_server(tmp, extra=("--arm-token", TOKEN))
    yield server
    server.server.stop()


def credential(arm: ArmServer) -> ClientSecretCredential:
    return ClientSecretCredential(
        TENANT,
        "00000000-0000-0000-0000-0000000000c1",
        "client-secret",
        authority=arm.url,
        disable_instance_discovery=True,
        connection_verify=arm.ca,
    )


def test_client_secret_credential_gets_the_token_arm_accepts(arm: ArmServer) -> None:
    cred = credential(arm)
    assert cred.get_token("https://management.azure.com/.default").token == TOKEN
    compute = ComputeManagementClient(
        cred, SUBSCRIPTION, base_url=arm.url, connection_verify=arm.ca
    )
    assert compute.virtual_machines.get(GROUP, "solo").name == "solo"
    compute.virtual_machines.begin_restart(GROUP, "solo")
    assert [e["type"] for e in arm.events("solo")] == ["Reboot"]
    arm.advance(15 * 60 + 12 * 60)
    assert arm.events("solo") == []


def test_the_token_route_refuses_another_grant(arm: ArmServer) -> None:
    with arm.https() as client:
        r = client.post(
            f"/{TENANT}/oauth2/v2.0/token",
            data={"grant_type": "password", "client_id": "x", "scope": "y"},
        )
    assert (r.status_code, r.json()["error"]) == (400, "unsupported_grant_type")
    assert "access_token" not in r.json()


def test_a_mismatched_token_is_a_401_and_changes_nothing(arm: ArmServer) -> None:
    compute = arm.compute()  # its credential hands out another token
    with pytest.raises(ClientAuthenticationError) as refused:
        compute.virtual_machines.begin_restart(GROUP, "solo")
    assert refused.value.status_code == 401
    assert refused.value.error is not None
    assert refused.value.error.code == "InvalidAuthenticationToken"
    assert arm.events("solo") == []


def test_an_oversized_chunked_body_is_a_413_and_changes_nothing(arm: ArmServer) -> None:
    def chunks() -> Iterator[bytes]:  # no Content-Length: Transfer-Encoding chunked
        yield b'{"properties": {"scheduledEventsPolicy": {"userInitiatedReboot": '
        for _ in range(40):
            yield b" " * 65536
        yield b'{"automaticallyApprove": true}}}}'

    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    with arm.https() as client:
        r = client.patch(VM, content=chunks(), headers=headers)
        assert r.request.headers.get("transfer-encoding") == "chunked"
        assert "content-length" not in r.request.headers
        assert (r.status_code, r.json()["error"]["code"]) == (413, "RequestEntityTooLarge")
        shown = client.get(VM, headers=headers).json()["properties"]["scheduledEventsPolicy"]
    assert shown["userInitiatedReboot"] == {"automaticallyApprove": False}
