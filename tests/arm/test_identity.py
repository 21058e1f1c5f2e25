"""Tokens: the real azure-identity ``ClientSecretCredential`` gets a signed token from
forewarn's identity routes, and ARM accepts it; when ARM requires a token, the routes
require the client secret (the token itself, or ``--arm-client-secret``) before they sign
one; a mismatched token is a 401 and an oversized chunked body a 413, each changing
nothing."""

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


def credential(arm: ArmServer, secret: str = TOKEN) -> ClientSecretCredential:
    return ClientSecretCredential(
        TENANT,
        "00000000-0000-0000-0000-0000000000c1",
        secret,
        authority=arm.url,
        disable_instance_discovery=True,
        connection_verify=arm.ca,
    )


def test_client_secret_credential_gets_the_token_arm_accepts(arm: ArmServer) -> None:
    cred = credential(arm)
    token = cred.get_token("https://management.azure.com/.default").token
    assert token != TOKEN and token.count(".") == 2  # a JWT signed for this client
    compute = ComputeManagementClient(
        cred, SUBSCRIPTION, base_url=arm.url, connection_verify=arm.ca
    )
    assert compute.virtual_machines.get(GROUP, "solo").name == "solo"
    compute.virtual_machines.begin_restart(GROUP, "solo")
    assert [e["type"] for e in arm.events("solo")] == ["Reboot"]
    arm.advance(15 * 60 + 12 * 60)
    assert arm.events("solo") == []


def test_without_the_client_secret_no_token_is_handed_out(arm: ArmServer) -> None:
    with pytest.raises(ClientAuthenticationError) as refused:
        credential(arm, secret="guessed").get_token("https://management.azure.com/.default")
    assert "Invalid client secret" in str(refused.value)
    with arm.https() as client:
        r = client.post(
            f"/{TENANT}/oauth2/v2.0/token",
            data={"grant_type": "client_credentials", "client_id": "x", "client_secret": "y",
                  "scope": "https://management.azure.com/.default"},
        )  # fmt: skip
    assert (r.status_code, r.json()["error"]) == (401, "invalid_client")
    assert "access_token" not in r.json()


def test_a_configured_client_secret_is_the_one_required(tmp_path: Path) -> None:
    server = start_arm_server(tmp_path, extra=("--arm-token", TOKEN, "--arm-client-secret", "cs"))
    try:
        scope = "https://management.azure.com/.default"
        with pytest.raises(ClientAuthenticationError):
            credential(server, secret=TOKEN).get_token(scope)
        compute = ComputeManagementClient(
            credential(server, secret="cs"), SUBSCRIPTION, base_url=server.url,
            connection_verify=server.ca,
        )  # fmt: skip
        assert compute.virtual_machines.get(GROUP, "solo").name == "solo"
    finally:
        server.server.stop()


def test_a_forged_token_is_a_401(arm: ArmServer) -> None:
    import jwt

    forged = jwt.encode({"appid": "x", "exp": 4102444800}, "not the key", algorithm="HS256")
    with arm.https() as client:
        r = client.get(VM, headers={"Authorization": f"Bearer {forged}"})
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "InvalidAuthenticationTokenSignature"
    assert r.headers["www-authenticate"].startswith(f'Bearer authorization_uri="{arm.url}/"')


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
