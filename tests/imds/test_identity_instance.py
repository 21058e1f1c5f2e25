"""Which VM is asking, and the instance-metadata and versions paths."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from forewarn.imds import INSTANCE_VERSIONS
from tests.imds.conftest import (
    HEADER_BODY,
    INSTANCE,
    INSTANCE_VERSION,
    JSON_TYPE,
    METHOD_BODY,
    NOT_FOUND_BODY,
    TEXT_TYPE,
    VERSIONS_PATH,
    Imds,
    ImdsFactory,
    assert_json_reply,
    compact,
)
from tests.support.fabrics import fleet

NAME_QUERY = b"api-version=" + INSTANCE_VERSION.encode() + b"&format=text"

#: api-version errors of /metadata/instance suggest that endpoint's own newest versions
#: (the Scheduled Events endpoint suggests its own: see conftest.MISSING_VERSION_BODY).
INSTANCE_NEWEST = ["2024-03-15", "2023-11-15", "2023-07-01"]
INSTANCE_MISSING_VERSION_BODY = (
    b'{"error":"Bad request. api-version was not specified in the request. '
    b'For more information refer to aka.ms/azureimds",'
    b'"newest-versions":["2024-03-15","2023-11-15","2023-07-01"]}'
)
INSTANCE_BAD_VERSION_BODY = (
    b'{"error":"Bad request. api-version is invalid or was not specified in the request. '
    b'For more information refer to aka.ms/azureimds",'
    b'"newest-versions":["2024-03-15","2023-11-15","2023-07-01"]}'
)
NAME_PATH = "/metadata/instance/compute/name"


async def name_seen(imds: Imds, **kwargs: Any) -> str:
    """The VM name the endpoint answers for a raw request (via compute/name)."""
    response = await imds.raw(path=NAME_PATH, query=NAME_QUERY, **kwargs)
    assert response.status == 200, response.body
    return response.body.decode()


# --------------------------------------------------------------------- identity


@pytest.mark.parametrize(
    ("address", "vm"),
    [
        ("127.1.0.1", "web-0"),
        ("127.1.0.2", "web-1"),
        ("127.1.0.6", "web-5"),
        ("127.1.0.7", "workers_0"),
        ("127.1.0.10", "workers_3"),
        ("127.1.0.11", "jumpbox"),
        ("127.1.0.12", "FrontEnd_IN_0"),
        ("127.1.0.13", "FrontEnd_IN_1"),
        ("127.1.0.14", "BackEnd_IN_0"),
        ("::ffff:127.1.0.2", "web-1"),
        ("::ffff:127.1.0.8", "workers_1"),
        ("127.0.0.1", "web-0"),
        ("127.1.0.15", "web-0"),
        ("10.0.0.4", "web-0"),
        ("::1", "web-0"),
        ("::ffff:10.0.0.4", "web-0"),
    ],
)
async def test_source_address_picks_the_vm(imds: Imds, address: str, vm: str) -> None:
    assert await name_seen(imds, client=(address, 43210)) == vm


async def test_request_without_client_is_the_default_vm(imds: Imds) -> None:
    assert await name_seen(imds, client=None, server=None) == "web-0"


async def test_unknown_address_gets_the_default_vms_document(imds: Imds) -> None:
    imds.submit("platform-reboot", "web-0")
    imds.submit("platform-reboot", "workers_1")
    default = await imds.get(address="192.0.2.7")
    assert default.content == (await imds.get("web-0")).content
    assert [e["Resources"] for e in default.json()["Events"]] == [["web-0"]]


async def test_ipv4_mapped_address_gets_its_vms_document(imds: Imds) -> None:
    imds.submit("platform-reboot", "workers_1")
    mapped = await imds.get(address="::ffff:127.1.0.8")
    assert [e["Resources"] for e in mapped.json()["Events"]] == [["workers_1"]]


async def test_fleet_default_vm_is_honoured(make_imds: ImdsFactory) -> None:
    spec = fleet({"kind": "availability_set", "name": "s", "vms": 3}, default_vm="s-2")
    assert await name_seen(make_imds(spec), client=("10.1.1.1", 1)) == "s-2"


@pytest.fixture
def ported(make_imds: ImdsFactory) -> Imds:
    """Two standalone VMs: ``a`` (127.1.0.1) owns port 9001, ``b`` (127.1.0.2) none."""
    spec = fleet(
        {"kind": "standalone", "name": "a", "vms": [{"name": "a", "port": 9001}]},
        {"kind": "standalone", "name": "b", "vms": [{"name": "b"}]},
    )
    imds = make_imds(spec)
    imds.submit("platform-reboot", "a")
    return imds


@pytest.mark.parametrize(
    ("client", "port", "vm"),
    [
        ("127.1.0.2", 9001, "a"),
        ("10.0.0.1", 9001, "a"),
        ("127.1.0.1", 9001, "a"),
        ("127.1.0.2", 80, "b"),
        ("127.1.0.2", 9002, "b"),
        ("127.1.0.1", 80, "a"),
        ("10.0.0.1", 8169, "a"),
    ],
)
async def test_dedicated_port_wins_over_address(
    ported: Imds, client: str, port: int, vm: str
) -> None:
    assert await name_seen(ported, client=(client, 5000), server=("127.0.0.1", port)) == vm
    document = await ported.raw(client=(client, 5000), server=("127.0.0.1", port))
    assert document.status == 200
    resources = [e["Resources"] for e in json.loads(document.body)["Events"]]
    assert resources == ([["a"]] if vm == "a" else [])


# ---------------------------------------------------------------- instance


async def test_instance_document_of_an_availability_set_vm(imds: Imds) -> None:
    response = await imds.get("web-1", path=INSTANCE, version=INSTANCE_VERSION)
    assert response.status_code == 200
    assert response.headers["content-type"] == JSON_TYPE
    assert response.headers["content-length"] == str(len(response.content))
    assert compact(response.content) == response.content
    assert "etag" not in response.headers
    compute = response.json()["compute"]
    assert compute["name"] == "web-1"
    assert compute["vmId"] == imds.fabric.topology.vms["web-1"].vm_id
    assert str(uuid.UUID(compute["vmId"])) == compute["vmId"]
    assert compute["vmScaleSetName"] == ""
    assert (compute["platformUpdateDomain"], compute["platformFaultDomain"]) == ("1", "1")
    assert (compute["zone"], compute["location"]) == ("", "westeurope")
    assert compute["resourceId"].endswith("/providers/Microsoft.Compute/virtualMachines/web-1")
    address = response.json()["network"]["interface"][0]["ipv4"]["ipAddress"][0]
    assert address["privateIpAddress"] == "127.1.0.2"


async def test_instance_document_of_a_scale_set_vm(imds: Imds) -> None:
    compute = (await imds.get("workers_1", path=INSTANCE, version=INSTANCE_VERSION)).json()[
        "compute"
    ]
    assert compute["name"] == "workers_1"
    assert compute["vmScaleSetName"] == "workers"
    assert (compute["platformUpdateDomain"], compute["platformFaultDomain"]) == ("1", "1")
    assert compute["priority"] == "Spot"
    assert compute["resourceId"].endswith("/virtualMachineScaleSets/workers/virtualMachines/1")
    assert (
        compute["vmId"]
        != (await imds.get("web-1", path=INSTANCE, version=INSTANCE_VERSION)).json()["compute"][
            "vmId"
        ]
    )


async def test_instance_zone_and_location(make_imds: ImdsFactory) -> None:
    spec = fleet(
        {"kind": "scale_set", "name": "z", "vms": 2, "zones": ["1", "2"], "update_domains": 2},
        location="northeurope",
    )
    imds = make_imds(spec)
    for vm, zone, domain in (("z_0", "1", "0"), ("z_1", "2", "1")):
        compute = (await imds.get(vm, path=INSTANCE, version=INSTANCE_VERSION)).json()["compute"]
        assert (compute["zone"], compute["location"]) == (zone, "northeurope")
        assert compute["platformUpdateDomain"] == domain
        assert isinstance(compute["platformFaultDomain"], str)


@pytest.mark.parametrize(
    "path",
    [NAME_PATH, "/metadata/instance/Compute/Name", "/METADATA/INSTANCE/compute/name/"],
)
async def test_instance_leaf_as_text(imds: Imds, path: str) -> None:
    response = await imds.get(
        "web-1", path=path, version=INSTANCE_VERSION, params={"format": "text"}
    )
    assert (response.status_code, response.content) == (200, b"web-1")
    assert response.headers["content-type"] == TEXT_TYPE
    assert response.headers["content-length"] == "5"


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("/metadata/instance/compute/vmScaleSetName", b"workers"),
        ("/metadata/instance/compute/platformUpdateDomain", b"1"),
        ("/metadata/instance/compute/location", b"westeurope"),
        ("/metadata/instance/network/interface/0/ipv4/ipAddress/0/privateIpAddress", b"127.1.0.8"),
    ],
)
async def test_instance_leaves(imds: Imds, path: str, text: bytes) -> None:
    as_text = await imds.get(
        "workers_1", path=path, version=INSTANCE_VERSION, params={"format": "text"}
    )
    assert (as_text.status_code, as_text.content) == (200, text)
    as_json = await imds.get("workers_1", path=path, version=INSTANCE_VERSION)
    assert_json_reply(as_json, 200, b'"' + text + b'"')


async def test_instance_subtree_as_json(imds: Imds) -> None:
    response = await imds.get("web-1", path="/metadata/instance/compute", version=INSTANCE_VERSION)
    assert response.status_code == 200
    assert response.json()["name"] == "web-1"


async def test_instance_text_of_a_subtree_is_400(imds: Imds) -> None:
    response = await imds.get(
        "web-1",
        path="/metadata/instance/compute",
        version=INSTANCE_VERSION,
        params={"format": "text"},
    )
    assert response.status_code == 400
    assert list(response.json()) == ["error"]


@pytest.mark.parametrize("version", INSTANCE_VERSIONS)
async def test_every_instance_version_works(imds: Imds, version: str) -> None:
    response = await imds.get("web-1", path=NAME_PATH, version=version, params={"format": "text"})
    assert (response.status_code, response.content) == (200, b"web-1")


async def test_instance_without_version(imds: Imds) -> None:
    response = await imds.get("web-1", path=INSTANCE, version=None)
    assert_json_reply(response, 400, INSTANCE_MISSING_VERSION_BODY)


@pytest.mark.parametrize("version", ["latest", "2016-01-01", "2020-07-01", "2017-11-01"])
async def test_instance_bad_version(imds: Imds, version: str) -> None:
    response = await imds.get("web-1", path=NAME_PATH, version=version)
    assert_json_reply(response, 400, INSTANCE_BAD_VERSION_BODY)


def test_instance_errors_suggest_the_newest_instance_versions() -> None:
    assert sorted(INSTANCE_VERSIONS, reverse=True)[:3] == INSTANCE_NEWEST
    for body in (INSTANCE_MISSING_VERSION_BODY, INSTANCE_BAD_VERSION_BODY):
        assert json.loads(body)["newest-versions"] == INSTANCE_NEWEST


@pytest.mark.parametrize(
    "path",
    [
        "/metadata/instance/nothing",
        "/metadata/instance/compute/nothing",
        "/metadata/instance/compute/name/more",
        "/metadata/instance/network/interface/1",
        "/metadata/instance/network/interface/x",
        "/metadata/instance/network/interface/-1",
        "/metadata/instancex",
    ],
)
async def test_instance_unknown_subpath_is_404(imds: Imds, path: str) -> None:
    response = await imds.get("web-1", path=path, version=INSTANCE_VERSION)
    assert_json_reply(response, 404, NOT_FOUND_BODY)


@pytest.mark.parametrize("path", [INSTANCE, NAME_PATH, VERSIONS_PATH])
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
async def test_instance_and_versions_only_allow_get(imds: Imds, path: str, method: str) -> None:
    response = await imds.request(method, path, version=INSTANCE_VERSION)
    assert_json_reply(response, 405, METHOD_BODY)
    assert response.headers["allow"] == "GET"


@pytest.mark.parametrize("path", [INSTANCE, NAME_PATH, VERSIONS_PATH])
@pytest.mark.parametrize("value", [None, "false"])
async def test_instance_and_versions_need_the_header(
    imds: Imds, path: str, value: str | None
) -> None:
    response = await imds.get("web-1", path=path, version=INSTANCE_VERSION, metadata=value)
    assert_json_reply(response, 400, HEADER_BODY)


# Regression: list indexes were accepted by str.isdigit(), so int("²") raised (a 500).
async def test_instance_non_decimal_digit_index_is_404(imds: Imds) -> None:
    response = await imds.raw(
        path="/metadata/instance/network/interface/\u00b2",
        query=b"api-version=" + INSTANCE_VERSION.encode(),
    )
    assert (response.status, response.body) == (404, NOT_FOUND_BODY)


async def test_instance_absolute_form(imds: Imds) -> None:
    response = await imds.raw(
        path="http://169.254.169.254/metadata/instance/compute/name", query=NAME_QUERY
    )
    assert (response.status, response.body) == (200, b"web-1")


# ----------------------------------------------------------------- versions


@pytest.mark.parametrize("version", [None, INSTANCE_VERSION, "whatever"])
async def test_versions_lists_the_instance_versions(imds: Imds, version: str | None) -> None:
    response = await imds.get("web-1", path=VERSIONS_PATH, version=version)
    expected = b'{"apiVersions":[%s]}' % b",".join(b'"%s"' % v.encode() for v in INSTANCE_VERSIONS)
    assert_json_reply(response, 200, expected)
    assert INSTANCE_VERSION in response.json()["apiVersions"]


async def test_versions_path_spellings(imds: Imds) -> None:
    for path in ("/metadata/Versions", "/metadata/versions/"):
        response = await imds.get("web-1", path=path, version=None)
        assert response.status_code == 200
        assert response.json() == {"apiVersions": list(INSTANCE_VERSIONS)}
