"""Read-only routes: topology, vms, catalogue, healthz, metrics."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.parser import text_string_to_metric_families

from forewarn import __version__
from forewarn.control import ControlApp
from forewarn.fabric import CATALOGUE, Fabric
from tests.control.conftest import API, TestClient
from tests.support.fabrics import make_fabric

#: The demo fleet: VM -> (scope, host, update domain, fault domain, address).
DEMO = {
    "web-0": ("web", "host-1", 0, 0, "127.1.0.1"),
    "web-1": ("web", "host-2", 1, 1, "127.1.0.2"),
    "web-2": ("web", "host-3", 2, 0, "127.1.0.3"),
    "web-3": ("web", "host-4", 0, 1, "127.1.0.4"),
    "web-4": ("web", "host-2", 1, 0, "127.1.0.5"),
    "web-5": ("web", "host-3", 2, 1, "127.1.0.6"),
    "workers_0": ("workers", "host-4", 0, 0, "127.1.0.7"),
    "workers_1": ("workers", "host-1", 1, 1, "127.1.0.8"),
    "workers_2": ("workers", "host-2", 0, 0, "127.1.0.9"),
    "workers_3": ("workers", "host-3", 1, 1, "127.1.0.10"),
    "jumpbox": ("jumpbox", "host-4", 0, 0, "127.1.0.11"),
    "FrontEnd_IN_0": ("shop", "host-1", 0, 0, "127.1.0.12"),
    "FrontEnd_IN_1": ("shop", "host-2", 1, 1, "127.1.0.13"),
    "BackEnd_IN_0": ("shop", "host-3", 0, 0, "127.1.0.14"),
}
SCOPE_KINDS = {
    "web": "availability_set",
    "workers": "scale_set",
    "jumpbox": "standalone",
    "shop": "cloud_service",
}


def _vm_row(vm: dict[str, Any]) -> tuple[Any, ...]:
    return (vm["scope"], vm["host"], vm["update_domain"], vm["fault_domain"], vm["address"])


def test_topology_lists_scopes_with_kind_incarnation_enablement_and_vms(client: TestClient) -> None:
    data = client.get(f"{API}/topology").json()
    assert {s["id"]: s["kind"] for s in data["scopes"]} == SCOPE_KINDS
    assert {s["id"]: (s["incarnation"], s["enabled"]) for s in data["scopes"]} == dict.fromkeys(
        SCOPE_KINDS, (1, True)
    )
    vms = {vm["name"]: vm for s in data["scopes"] for vm in s["vms"]}
    assert {name: _vm_row(vm) for name, vm in vms.items()} == DEMO
    assert {vm["status"] for vm in vms.values()} == {"running"}
    assert all(vm["scope"] == s["id"] for s in data["scopes"] for vm in s["vms"])
    web = next(s for s in data["scopes"] if s["id"] == "web")
    assert (web["update_domains"], web["fault_domains"]) == (3, 2)
    assert data["default_vm"] == "web-0"


def test_topology_hosts_map_each_host_to_its_vms(client: TestClient) -> None:
    hosts = client.get(f"{API}/topology").json()["hosts"]
    expected: dict[str, list[str]] = {}
    for name, (_, host, *_) in DEMO.items():
        expected.setdefault(host, []).append(name)
    assert hosts == expected


def test_topology_reflects_incarnation_and_vm_status_changes(
    client: TestClient, submit: Any
) -> None:
    submit("hardware-failure", "web-1")
    data = client.get(f"{API}/topology").json()
    assert {s["id"]: s["incarnation"] for s in data["scopes"]}["web"] == 2
    status = {vm["name"]: vm["status"] for s in data["scopes"] for vm in s["vms"]}
    assert status["web-1"] == "redeploying"
    assert status["web-0"] == "running"


def test_topology_shows_scopes_disabled_until_their_first_request() -> None:
    client = TestClient(ControlApp(make_fabric(enablement="on-first-request")).asgi)
    scopes = client.get(f"{API}/topology").json()["scopes"]
    assert {s["enabled"] for s in scopes} == {False}


def test_vms_lists_every_vm_in_fleet_order(client: TestClient, fabric: Fabric) -> None:
    vms = client.get(f"{API}/vms").json()
    assert [vm["name"] for vm in vms] == list(DEMO)
    assert {vm["name"]: _vm_row(vm) for vm in vms} == DEMO
    spot = {vm["name"] for vm in vms if vm["spot"]}
    assert spot == {"workers_0", "workers_1", "workers_2", "workers_3"}
    assert {vm["name"]: vm["vm_id"] for vm in vms} == {
        name: vm.vm_id for name, vm in fabric.topology.vms.items()
    }


@pytest.mark.parametrize("time_scale", [1.0, 60.0])
def test_catalogue_lists_every_operation_with_its_scaled_defaults(time_scale: float) -> None:
    client = TestClient(ControlApp(make_fabric(time_scale=time_scale)).asgi)
    rows = {row["kind"]: row for row in client.get(f"{API}/catalogue").json()}
    assert rows == {
        kind.value: {
            "kind": kind.value,
            "event_type": spec.event_type.value,
            "source": spec.source.value,
            "notice_seconds": spec.notice / time_scale,
            "description": spec.description,
            "created_started": spec.created_started,
            "deletes_vm": spec.deletes_vm,
        }
        for kind, spec in CATALOGUE.items()
    }
    assert rows["user-reboot"]["notice_seconds"] == 900 / time_scale


def test_healthz_answers_with_the_version(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "version": __version__}


def test_metrics_expose_the_registry_as_prometheus_text(fabric: Fabric) -> None:
    registry = CollectorRegistry()
    Counter("forewarn_probe", "A probe", ["what"], registry=registry).labels("x").inc(3)
    response = TestClient(ControlApp(fabric, registry=registry).asgi).get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    assert "# TYPE forewarn_probe_total counter" in response.text
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    (sample,) = [s for s in families["forewarn_probe"].samples if s.name.endswith("_total")]
    assert (sample.labels, sample.value) == ({"what": "x"}, 3.0)


@pytest.mark.parametrize("path", ["/nowhere", f"{API}/nothing", f"{API}/events/x/y/z"])
def test_unknown_paths_are_404(client: TestClient, path: str) -> None:
    assert client.get(path).status_code == 404
