"""The ARM app in process (Starlette's test client over a real fabric): paths parsed once
into shapes, a table of routes, and every refusal in ARM's shape from one place: long
names cut, an unexpected failure a JSON 500 with a request id, HEAD without a body."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from forewarn.arm import ArmApp, ArmFleet
from forewarn.arm.paths import parse_path
from forewarn.arm.wire import COMPUTE_VERSIONS
from tests.control.conftest import TestClient
from tests.support.fabrics import fleet, make_fabric

SUB = "00000000-0000-4000-8000-00000000f0e1"
GROUP_PATH = f"/subscriptions/{SUB}/resourceGroups/forewarn"
COMPUTE = f"{GROUP_PATH}/providers/Microsoft.Compute"
AUTH = {"Authorization": "Bearer anything"}
V = "?api-version=2024-07-01"


@pytest.fixture
def app() -> Iterator[ArmApp]:
    spec = fleet(
        {"kind": "standalone", "name": "solo"},
        {"kind": "scale_set", "name": "pool", "vms": 250, "placement_groups": 2},
    )
    fabric = make_fabric(spec)
    yield ArmApp(fabric, ArmFleet(fabric.topology))
    fabric.close()


@pytest.fixture
def client(app: ArmApp) -> Iterator[TestClient]:
    with TestClient(app.asgi, base_url="https://arm.test", raise_server_exceptions=False) as c:
        yield c


@pytest.mark.parametrize(
    ("path", "shape", "names"),
    [
        ("/subscriptions/S/resourceGroups/G", "subscriptions/{}/resourcegroups/{}", ("S", "G")),
        ("/subscriptions/S/resourcegroups/G/providers/Microsoft.Compute/virtualMachines/Vm/restart",
         "subscriptions/{}/resourcegroups/{}/providers/microsoft.compute/virtualmachines/{}/restart",
         ("S", "G", "Vm")),
        ("/providers/Microsoft.ResourceGraph/resources",
         "providers/microsoft.resourcegraph/resources", ()),
        ("//subscriptions//S/", "subscriptions/{}", ("S",)),
        ("/subscriptions/S/resourceGroups/G/providers/Microsoft.Compute/virtualMachineScaleSets/"
         "P/virtualMachines/3/providers/Microsoft.Maintenance/scheduledevents/E/acknowledge",
         "subscriptions/{}/resourcegroups/{}/providers/microsoft.compute/virtualmachinescalesets/"
         "{}/virtualmachines/{}/providers/microsoft.maintenance/scheduledevents/{}/acknowledge",
         ("S", "G", "P", "3", "E")),
    ],
)  # fmt: skip
def test_a_path_is_parsed_once_into_shape_and_names(
    path: str, shape: str, names: tuple[str, ...]
) -> None:
    parsed = parse_path(path)
    assert (parsed.shape, parsed.names) == (shape, names)


def test_a_10kb_name_is_cut_in_every_404(client: TestClient) -> None:
    long = "x" * 10_000
    for path in (f"{COMPUTE}/virtualMachines/{long}", f"/subscriptions/{SUB}/resourceGroups/{long}",
                 f"/subscriptions/{long}/resourceGroups/forewarn",
                 f"{COMPUTE}/virtualMachineScaleSets/pool/virtualMachines/{long}"):  # fmt: skip
        r = client.get(path + V, headers=AUTH)
        assert r.status_code == 404
        assert len(r.json()["error"]["message"]) < 400, r.json()
        assert "x" * 80 + "..." in r.json()["error"]["message"]


def test_an_unexpected_failure_is_arms_json_500_with_a_request_id(
    app: ArmApp, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(_: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(app.fabric, "vm_status", explode)
    r = client.get(f"{COMPUTE}/virtualMachines/solo/instanceView{V}", headers=AUTH)
    assert r.status_code == 500
    assert r.headers["content-type"] == "application/json"
    error = r.json()["error"]
    assert error["code"] == "InternalServerError"
    assert r.headers["x-ms-request-id"] in error["message"]
    assert "Traceback" not in r.text and "a bug" not in r.text


def test_unknown_namespace_type_and_method_each_get_arms_error(client: TestClient) -> None:
    r = client.get(f"{GROUP_PATH}/providers/Microsoft.Nope/things/x{V}", headers=AUTH)
    assert (r.status_code, r.json()["error"]["code"]) == (404, "NoRegisteredProviderFound")
    r = client.get(f"{COMPUTE}/disks/d{V}", headers=AUTH)
    assert (r.status_code, r.json()["error"]["code"]) == (404, "InvalidResourceType")
    assert "'disks' could not be found in the namespace 'Microsoft.Compute'" in r.text
    r = client.post(f"{COMPUTE}/availabilitySets/x/restart{V}", headers=AUTH)
    assert (r.status_code, r.json()["error"]["code"]) == (404, "InvalidResourceType")
    r = client.delete(f"{COMPUTE}/virtualMachines/solo{V}", headers=AUTH)
    assert (r.status_code, r.json()["error"]["code"]) == (405, "MethodNotAllowed")


def test_head_of_a_group_answers_without_a_body(client: TestClient) -> None:
    r = client.head(f"{GROUP_PATH}?api-version=2022-09-01", headers=AUTH)
    assert (r.status_code, r.content) == (204, b"")
    r = client.head(f"/subscriptions/{SUB}/resourceGroups/other?api-version=2022-09-01",
                    headers=AUTH)  # fmt: skip
    assert (r.status_code, r.content) == (404, b"")


def test_lists_page_with_next_links_until_every_item_was_given(client: TestClient) -> None:
    url: str | None = f"{COMPUTE}/virtualMachineScaleSets/pool/virtualMachines{V}"
    seen: list[str] = []
    pages = 0
    while url:
        body = client.get(url, headers=AUTH).json()
        seen += [i["instanceId"] for i in body["value"]]
        url, pages = body.get("nextLink"), pages + 1
    assert (seen, pages) == ([str(n) for n in range(250)], 3)
    r = client.get(f"{COMPUTE}/virtualMachines{V}&$skiptoken=-1", headers=AUTH)
    assert (r.status_code, r.json()["error"]["code"]) == (400, "InvalidSkipToken")


def test_a_bad_filter_is_a_400_and_a_good_one_filters(client: TestClient) -> None:
    url = f"/subscriptions/{SUB}/resources?api-version=2022-09-01&$filter="
    r = client.get(url + "substringof('a', name)", headers=AUTH)
    assert (r.status_code, r.json()["error"]["code"]) == (400, "InvalidFilterInQueryString")
    r = client.get(url + "resourceType eq 'microsoft.compute/virtualmachinescalesets'",
                   headers=AUTH)  # fmt: skip
    assert [x["name"] for x in r.json()["value"]] == ["pool"]


def test_the_cloud_metadata_needs_no_token(client: TestClient) -> None:
    r = client.get("/metadata/endpoints?api-version=2022-09-01")
    assert r.status_code == 200
    body = r.json()
    assert body["resourceManager"] == "https://arm.test/"
    assert body["authentication"]["loginEndpoint"] == "https://arm.test/"
    assert body["authentication"]["audiences"][0] == "https://management.core.windows.net/"
    assert client.get("/metadata/nothing?api-version=2022-09-01").status_code == 404


def test_a_10000_vm_fleet_is_listed_whole_through_its_next_links() -> None:
    spec = fleet({"kind": "scale_set", "name": "big", "vms": 10_000, "placement_groups": 4})
    fabric = make_fabric(spec)
    try:
        app = ArmApp(fabric, ArmFleet(fabric.topology))
        with TestClient(app.asgi, base_url="https://arm.test") as client:
            url: str | None = f"{COMPUTE}/virtualMachineScaleSets/big/virtualMachines{V}"
            seen: list[str] = []
            while url:
                body = client.get(url, headers=AUTH).json()
                seen += [i["instanceId"] for i in body["value"]]
                url = body.get("nextLink")
    finally:
        fabric.close()
    assert seen == [str(n) for n in range(10_000)]


def test_every_route_the_table_lists_is_routed(app: ArmApp, client: TestClient) -> None:
    """``route_table`` (what the site's ARM routes page lists) is what the app routes on:
    each row, its names filled in, reaches a handler (never ARM's "no such route" 404 or a
    405), and the page's example is among them."""
    table = app.route_table()
    assert ("POST", "subscriptions/{}/resourcegroups/{}/providers/microsoft.compute/"
            "virtualmachines/{}/restart", COMPUTE_VERSIONS) in table  # fmt: skip
    assert table == sorted(table, key=lambda row: (row[1], row[0]))
    no_route = {"NoRegisteredProviderFound", "InvalidResourceType"}
    for method, shape, versions in table:
        path = "/" + shape.replace("{}", "x")
        if shape.startswith("subscriptions/{}"):
            path = path.replace("/subscriptions/x", f"/subscriptions/{SUB}", 1)
        if shape.startswith("subscriptions/{}/resourcegroups/{}"):
            path = path.replace("/resourcegroups/x", "/resourcegroups/forewarn", 1)
        version = f"?api-version={versions[1]}" if versions else V
        r = client.request(method, path + version, headers=AUTH, json={})
        error = r.json()["error"] if r.status_code >= 400 and r.content else {}
        message = error.get("message", "")
        assert error.get("code") not in no_route, (method, path, r.text)
        assert not message.startswith(("No ARM route here", "The requested method")), r.text
