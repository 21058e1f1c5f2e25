"""Managed identity: the metadata endpoint's ``/metadata/identity/oauth2/token`` answers
as Azure's does, the unmodified ``ManagedIdentityCredential`` and
``DefaultAzureCredential`` (pointed at forewarn with AZURE_POD_IDENTITY_AUTHORITY_HOST)
get a token ARM accepts even when ``--arm-token`` is set, and what the VM does with it
through ARM is attributed to that VM."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import jwt
import pytest
from azure.identity import DefaultAzureCredential, ManagedIdentityCredential
from azure.mgmt.compute import ComputeManagementClient

from tests.arm.conftest import ArmServer, start_arm_server

SUB = "11111111-2222-3333-4444-555555555555"
GROUP = "rg-mi"
FLEET = f"""
subscription: {SUB}
resource_group: {GROUP}
default_vm: jump
scopes:
  - kind: standalone
    name: jump
  - kind: availability_set
    name: web
    vms: 2
"""
TOKEN_PATH = "/metadata/identity/oauth2/token"
ARM = "https://management.azure.com/"


@pytest.fixture(scope="module")
def arm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArmServer]:
    server = start_arm_server(
        tmp_path_factory.mktemp("mi"), FLEET, extra=("--arm-token", "operators-only")
    )
    yield server
    server.server.stop()


def token_request(
    arm: ArmServer, vm: str | None = None, headers: dict[str, str] | None = None, **params: str
) -> tuple[int, dict[str, str]]:
    """GET the token route as ``vm`` (by its source address)."""
    query = {("api-version" if k == "api_version" else k): v for k, v in params.items()}
    transport = httpx.HTTPTransport(local_address=arm.address(vm)) if vm else None
    with httpx.Client(transport=transport, timeout=10, trust_env=False) as client:
        r = client.get(
            arm.server.imds_url + TOKEN_PATH,
            params=query,
            headers={"Metadata": "true", **(headers or {})},
        )
    return r.status_code, r.json()


def test_a_token_for_the_vm_that_asks(arm: ArmServer) -> None:
    status, body = token_request(arm, "web-1", api_version="2018-02-01", resource=ARM)
    assert status == 200
    assert body["token_type"] == "Bearer" and body["resource"] == ARM
    assert int(body["expires_on"]) - int(body["not_before"]) == int(body["expires_in"]) > 3600
    claims = jwt.decode(body["access_token"], options={"verify_signature": False})
    assert claims["aud"] == ARM and claims["appid"] == body["client_id"]
    assert claims["xms_mirid"] == (
        f"/subscriptions/{SUB}/resourceGroups/{GROUP}/providers/Microsoft.Compute/"
        "virtualMachines/web-1"
    )
    other = token_request(arm, "web-0", api_version="2018-02-01", resource=ARM)[1]
    assert other["client_id"] != body["client_id"]
    with arm.https() as client:  # the token's tenant is the one ARM lists, to the token
        listed = client.get(
            "/tenants",
            params={"api-version": "2022-12-01"},
            headers={"Authorization": f"Bearer {body['access_token']}"},
        )
    tenants = listed.json()["value"]
    assert [t["tenantId"] for t in tenants] == [claims["tid"]]


@pytest.mark.parametrize(
    ("params", "headers", "description"),
    [
        ({"api_version": "2018-02-01", "resource": ARM}, {"Metadata": "false"},
         "Required metadata header not specified"),
        ({"api_version": "2018-02-01"}, None, "Required query variable 'resource' is missing"),
        ({"resource": ARM}, None, "Required query variable 'api-version' is missing"),
        ({"api_version": "2099-01-01", "resource": ARM}, None, "Invalid API version"),
        ({"api_version": "2018-02-01", "resource": ARM, "client_id": "someone-else"}, None,
         "Identity not found"),
    ],
)  # fmt: skip
def test_bad_requests_get_the_identity_endpoints_400(
    arm: ArmServer, params: dict[str, str], headers: dict[str, str] | None, description: str
) -> None:
    status, body = token_request(arm, "web-0", headers=headers, **params)
    assert (status, body) == (400, {"error": "invalid_request", "error_description": description})


def test_managed_identity_credential_reaches_arm_and_acknowledges_as_its_vm(
    arm: ArmServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_POD_IDENTITY_AUTHORITY_HOST", arm.server.imds_url)
    for credential in (ManagedIdentityCredential(), DefaultAzureCredential()):
        compute = ComputeManagementClient(
            credential, SUB, base_url=arm.url, connection_verify=arm.ca
        )
        assert compute.virtual_machines.get(GROUP, "jump").name == "jump"
    # jump (127.0.0.1's VM) reads its own id, then acknowledges its reboot through ARM
    me = arm.server.imds(path="/metadata/instance/compute/resourceId", api_version="2021-02-01")
    compute.virtual_machines.begin_restart(GROUP, "jump")
    [event] = arm.document("jump")["Events"]
    token = ManagedIdentityCredential().get_token(ARM + ".default").token
    with arm.https() as client:
        r = client.post(
            f"{me.json()}/providers/Microsoft.Maintenance/scheduledevents/{event['EventId']}"
            "/acknowledge?api-version=2025-11-01",
            headers={"Authorization": f"Bearer {token}"},
        )
    assert r.status_code == 200, r.text
    [approved] = arm.events("jump")
    assert (approved["approved_by"], approved["approved_via"]) == ("jump", "arm")
    entries = [h for h in arm.history() if h["kind"] == "event.approved"]
    assert entries and entries[-1]["detail"].get("by", "jump") == "jump"
    [entry] = [e for e in entries if e["event_id"] == event["EventId"]]
    assert (entry["detail"]["by"], entry["detail"]["via"]) == ("jump", "arm")
    # the rehearsal's verdict (JSON and the HTML report) says who approved, and how
    verdict = arm.server.control("GET", "/api/v1/reactions")
    assert verdict.status_code == 200, verdict.text
    assert "approved by jump via arm" in verdict.text
    assert "approved by jump via arm" in arm.server.control("GET", "/api/v1/report").text
    arm.advance(30 * 60)


def test_a_token_and_its_acknowledge_outlast_a_sigkill(tmp_path: Path) -> None:
    """A token minted before a SIGKILL is still accepted after the restart (every process
    of the fleet derives the same key), and an acknowledge answered 200 is kept."""
    (tmp_path / "one").mkdir()
    first = start_arm_server(tmp_path / "one", FLEET, extra=("--arm-token", "op"))
    with first.https() as client:
        client.post(
            f"/subscriptions/{SUB}/resourceGroups/{GROUP}/providers/Microsoft.Compute/"
            "virtualMachines/web-0/restart?api-version=2024-07-01",
            headers={"Authorization": "Bearer op"},
        ).raise_for_status()
    _, body = token_request(first, "web-0", api_version="2018-02-01", resource=ARM)
    [event] = first.events("web-0")
    with first.https() as client:
        r = client.post(
            f"/subscriptions/{SUB}/resourceGroups/{GROUP}/providers/Microsoft.Compute/"
            f"virtualMachines/web-0/providers/Microsoft.Maintenance/scheduledevents/"
            f"{event['id']}/acknowledge?api-version=2025-11-01",
            headers={"Authorization": f"Bearer {body['access_token']}"},
        )
    assert r.status_code == 200, r.text
    first.server.kill()
    again = start_arm_server(tmp_path / "one", FLEET, extra=("--arm-token", "op"))
    try:
        [kept] = again.events("web-0")
        assert (kept["status"], kept["approved_by"], kept["approved_via"]) == (
            "Started", "web-0", "arm",
        )  # fmt: skip
        with again.https() as client:
            r = client.get(
                f"/subscriptions/{SUB}/resourceGroups/{GROUP}?api-version=2022-09-01",
                headers={"Authorization": f"Bearer {body['access_token']}"},
            )
        assert r.status_code == 200, r.text
    finally:
        again.server.stop()


def test_a_token_signed_for_another_fleet_is_refused(tmp_path_factory: pytest.TempPathFactory,
                                                     arm: ArmServer) -> None:  # fmt: skip
    other = start_arm_server(tmp_path_factory.mktemp("other"), FLEET, extra=("--arm-token", "x"))
    try:
        _, body = token_request(other, "web-0", api_version="2018-02-01", resource=ARM)
    finally:
        other.server.stop()
    with arm.https() as client:
        r = client.get(
            f"/subscriptions/{SUB}/resourceGroups/{GROUP}?api-version=2022-09-01",
            headers={"Authorization": f"Bearer {body['access_token']}"},
        )
    assert (r.status_code, r.json()["error"]["code"]) == (
        401, "InvalidAuthenticationTokenSignature",
    )  # fmt: skip
