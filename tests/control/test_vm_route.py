"""``GET /api/v1/vms/{name}`` on a real ``forewarn serve``: one VM's row and its scope's
kind (what ``forewarn exec`` needs), a clear 404 for a VM the fleet lacks, and the raw-path
rule for a name with an encoded '/'."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from forewarn.controlapi import ControlClient, ControlRefused
from tests.support.serverproc import VIRTUAL, ServerProcess

FLEET = """
hosts: 3
scopes:
  - kind: scale_set
    name: aks-default-36328368-vmss
    vms: 20
  - kind: availability_set
    name: web
    vms: 2
  - kind: cloud_service
    name: shop
    roles: {FrontEnd: 1}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    base = tmp_path_factory.mktemp("vmroute")
    (base / "fleet.yaml").write_text(FLEET)
    proc = ServerProcess(base / "f.db", [*VIRTUAL, "--fleet", str(base / "fleet.yaml")]).start()
    try:
        yield proc
    finally:
        proc.stop()


def test_one_vm_is_its_row_of_the_listing_and_its_scopes_kind(server: ServerProcess) -> None:
    rows = {row["name"]: row for row in server.control("GET", "/api/v1/vms").json()}
    kinds = {s["id"]: s["kind"] for s in server.control("GET", "/api/v1/topology").json()["scopes"]}
    for name in ("aks-default-36328368-vmss_18", "web-1", "FrontEnd_IN_0"):
        answer = server.control("GET", f"/api/v1/vms/{name}")
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"] == "application/json"
        assert answer.json() == {**rows[name], "scope_kind": kinds[rows[name]["scope"]]}
    scale_set = server.control("GET", "/api/v1/vms/aks-default-36328368-vmss_18").json()
    assert scale_set["computer_name"] == "aks-default-36328368-vmss00000i"
    assert server.control("GET", "/api/v1/vms/FrontEnd_IN_0").json()["scope_kind"] == (
        "cloud_service"
    )


def test_a_name_in_another_case_is_the_vm_as_the_fleet_spells_it(server: ServerProcess) -> None:
    answer = server.control("GET", "/api/v1/vms/WEB-1")
    assert answer.status_code == 200 and answer.json()["name"] == "web-1"


def test_a_vm_the_fleet_lacks_is_a_404_naming_some_it_has(server: ServerProcess) -> None:
    answer = server.control("GET", "/api/v1/vms/web-9")
    assert answer.status_code == 404
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == {
        "error": "no VM named 'web-9' (its VMs: aks-default-36328368-vmss_0, "
        + ", ".join(f"aks-default-36328368-vmss_{i}" for i in range(1, 8))
        + " and 15 more)"
    }


@pytest.mark.parametrize("raw", ["web-1%2Fx", "web-1%2f..%2fweb-0", "%2e%2e", "web%5C1"])
def test_a_segment_no_name_holds_is_404_before_any_route(server: ServerProcess, raw: str) -> None:
    answer = server.control("GET", f"/api/v1/vms/{raw}")
    assert answer.status_code == 404
    assert answer.json()["error"].startswith(f"no such route: /api/v1/vms/{raw} ")


def test_head_and_an_unknown_query_parameter(server: ServerProcess) -> None:
    head = server.control("HEAD", "/api/v1/vms/web-0")
    assert (head.status_code, head.content) == (200, b"")
    typo = server.control("GET", "/api/v1/vms/web-0", params={"scope": "web"})
    assert typo.status_code == 400
    assert "unknown query parameter 'scope'" in typo.json()["error"]


def test_the_client_asks_for_one_vm_and_names_what_is_missing(server: ServerProcess) -> None:
    with ControlClient(server.control_url) as client:
        assert client.vm("web-0")["scope_kind"] == "availability_set"
        with pytest.raises(ControlRefused) as refused:
            client.vm("web-1/../web-0")  # sent as one segment, never another route
    assert refused.value.status == 404
    assert refused.value.error.startswith("no such route: /api/v1/vms/web-1%2F..%2Fweb-0 ")


def test_the_route_is_in_the_openapi_document(server: ServerProcess) -> None:
    doc = server.control("GET", "/openapi.json").json()
    get = doc["paths"]["/api/v1/vms/{name}"]["get"]
    assert get["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/VmDetailOut"
    }
    assert [p["name"] for p in get["parameters"]] == ["name"]
    detail = doc["components"]["schemas"]["VmDetailOut"]
    assert "scope_kind" in detail["required"] and "computer_name" in detail["properties"]
