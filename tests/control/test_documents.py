"""``/documents/{vm}``: byte for byte what the metadata endpoint serves that VM."""

from __future__ import annotations

import pytest

from forewarn.contract import SUPPORTED_VERSIONS
from forewarn.control import ControlApp
from forewarn.fabric import Clock, Fabric, FabricConfig, OperationRequest
from forewarn.fleet import build_topology, fleet_from_builtins
from forewarn.imds import ImdsApp, ImdsSettings
from forewarn.store import SQLiteStore
from tests.control.conftest import API, TestClient
from tests.support.fabrics import T0

#: One VM of every scope kind, plus one that sees only another VM's events.
VMS = ["web-0", "web-3", "workers_2", "jumpbox", "FrontEnd_IN_1"]

GPU_FLEET = {
    "scopes": [{"kind": "scale_set", "name": "gpu", "vms": 3, "gpu": True, "fault_domains": 1}]
}


def busy(fabric: Fabric) -> Fabric:
    """Events of every type and both statuses, in several scopes."""
    for kind, vms in [
        ("host-update", ("web-1", "workers_3", "BackEnd_IN_0")),
        ("spot-eviction", ("workers_0",)),
        ("scale-in", ("workers_1",)),
        ("hardware-failure", ("web-0",)),
    ]:
        fabric.submit(OperationRequest(kind=kind, vms=vms))
    fabric.submit(OperationRequest(kind="user-reboot", vms=("FrontEnd_IN_0",), description="é"))
    return fabric


def endpoint_body(fabric: Fabric, vm: str, version: str) -> bytes:
    imds = ImdsApp(fabric, ImdsSettings(rate_limit=None))
    client = TestClient(imds, client=(fabric.topology.vm(vm).address, 50000))
    response = client.get(
        "/metadata/scheduledevents",
        params={"api-version": version},
        headers={"Metadata": "true"},
    )
    assert response.status_code == 200
    return response.content


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
@pytest.mark.parametrize("vm", VMS)
def test_document_is_exactly_what_the_endpoint_serves(
    fabric: Fabric, client: TestClient, vm: str, version: str
) -> None:
    busy(fabric)
    response = client.get(f"{API}/documents/{vm}", params={"api-version": version})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.content == endpoint_body(fabric, vm, version)


def test_document_without_api_version_is_the_newest(fabric: Fabric, client: TestClient) -> None:
    busy(fabric)
    body = client.get(f"{API}/documents/web-0").content
    assert body == endpoint_body(fabric, "web-0", SUPPORTED_VERSIONS[-1])
    assert b'"DocumentIncarnation":3' in body


def test_document_of_the_2017_version_underscores_iaas_names(
    fabric: Fabric, client: TestClient
) -> None:
    busy(fabric)
    old = {"api-version": "2017-03-01"}
    web = client.get(f"{API}/documents/web-2", params=old).json()
    shop = client.get(f"{API}/documents/BackEnd_IN_0", params=old).json()
    assert [e["Resources"] for e in web["Events"]] == [["_web-1"], ["_web-0"]]
    assert [e["Resources"] for e in shop["Events"]] == [["BackEnd_IN_0"], ["FrontEnd_IN_0"]]


def test_per_vm_visibility_documents_match_the_endpoint() -> None:
    fabric = Fabric(
        build_topology(fleet_from_builtins(GPU_FLEET)),
        SQLiteStore(":memory:"),
        Clock.virtual(start=T0),
        FabricConfig(enablement="always"),
    )
    fabric.submit(OperationRequest(kind="user-reboot", vms=("gpu_1",)))
    client = TestClient(ControlApp(fabric).asgi)
    seen = {}
    for vm in ("gpu_0", "gpu_1"):
        body = client.get(f"{API}/documents/{vm}").content
        assert body == endpoint_body(fabric, vm, SUPPORTED_VERSIONS[-1])
        seen[vm] = len(client.get(f"{API}/documents/{vm}").json()["Events"])
    assert seen == {"gpu_0": 0, "gpu_1": 1}
