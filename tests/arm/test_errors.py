"""Bad and hostile input on the ARM listener: ARM's error shapes, and nothing changes."""

from __future__ import annotations

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

from tests.arm.conftest import GROUP, SUBSCRIPTION, ArmServer

VM = (
    f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}"
    "/providers/Microsoft.Compute/virtualMachines"
)
AUTH = {"Authorization": "Bearer anything"}


def test_an_unknown_resource_is_resource_not_found(arm: ArmServer) -> None:
    compute = arm.compute()
    with pytest.raises(ResourceNotFoundError) as missing:
        compute.virtual_machines.get(GROUP, "nosuchvm")
    assert missing.value.error is not None and missing.value.error.code == "ResourceNotFound"
    with pytest.raises(ResourceNotFoundError):
        compute.virtual_machines.begin_restart(GROUP, "nosuchvm")
    with pytest.raises(ResourceNotFoundError):
        compute.virtual_machine_scale_sets.get(GROUP, "nosuchset")
    with pytest.raises(ResourceNotFoundError):
        compute.availability_sets.get("another-group", "web")
    assert arm.events() == []


def test_a_wrong_api_version_is_a_400(arm: ArmServer) -> None:
    with pytest.raises(HttpResponseError) as refused:
        arm.compute().virtual_machines.begin_restart(GROUP, "solo", api_version="2099-01-01")
    assert refused.value.status_code == 400
    assert refused.value.error is not None
    assert refused.value.error.code == "NoRegisteredProviderFound"
    with arm.https() as client:
        r = client.post(f"{VM}/solo/restart", headers=AUTH)
    assert (r.status_code, r.json()["error"]["code"]) == (400, "MissingApiVersionParameter")
    assert arm.events() == []


def test_no_bearer_token_is_a_401(arm: ArmServer) -> None:
    with arm.https() as client:
        r = client.get(f"{VM}/solo?api-version=2024-07-01")
    assert (r.status_code, r.json()["error"]["code"]) == (401, "AuthenticationFailed")
    assert r.headers["x-ms-request-id"]


@pytest.mark.parametrize(
    ("content", "status", "code"),
    [
        (b"{" * 10 + b"x" * (2 << 20), 413, "RequestEntityTooLarge"),
        (b'{"properties": ', 400, "InvalidRequestContent"),
        (b'{"properties": {"scheduledEventsPolicy": "\xff\xfe"}}', 400, "InvalidRequestContent"),
        (b"[" * 100_000 + b"]" * 100_000, 400, "InvalidRequestContent"),
        (b'"a string"', 400, "InvalidRequestContent"),
        (b"", 400, "InvalidRequestContent"),
    ],
)
def test_hostile_bodies_are_refused_and_change_nothing(
    arm: ArmServer, content: bytes, status: int, code: str
) -> None:
    compute = arm.compute()
    before = compute.virtual_machines.get(GROUP, "solo").as_dict()
    with arm.https() as client:
        r = client.patch(
            f"{VM}/solo?api-version=2024-07-01",
            content=content,
            headers={**AUTH, "Content-Type": "application/json"},
        )
        assert r.status_code == status, r.text[:200]
        assert r.json()["error"]["code"] == code
        assert r.headers["x-ms-request-id"]
        health = client.get(f"{VM}/solo?api-version=2024-07-01", headers=AUTH)
        assert health.status_code == 200  # the listener still answers
    assert compute.virtual_machines.get(GROUP, "solo").as_dict() == before


def test_an_unknown_route_or_method_is_an_arm_error(arm: ArmServer) -> None:
    with arm.https() as client:
        r = client.post(f"{VM}/solo/explode?api-version=2024-07-01", headers=AUTH)
        assert (r.status_code, r.json()["error"]["code"]) == (404, "InvalidResourceType")
        assert "'explode' could not be found in the namespace 'Microsoft.Compute'" in r.text
        r = client.delete(f"{VM}/solo?api-version=2024-07-01", headers=AUTH)
        assert (r.status_code, r.json()["error"]["code"]) == (405, "MethodNotAllowed")
        r = client.get("/%ff%fe?api-version=2024-07-01", headers=AUTH)
        assert r.status_code == 404 and r.json()["error"]["code"] == "NotFound"
    assert arm.events() == []
