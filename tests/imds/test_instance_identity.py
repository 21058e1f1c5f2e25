"""``/metadata/instance`` names a VM as ARM does: the fleet file's subscription, resource
group and tags, a scale set's instance number and computer name, and only the fields the
request's api-version documents."""

from __future__ import annotations

import pytest

from forewarn.fleet import FleetError, build_topology, fleet_from_builtins
from tests.imds.conftest import ImdsFactory
from tests.support.fabrics import fleet

SUB = "11111111-2222-3333-4444-555555555555"


def spec() -> object:
    return fleet(
        {"kind": "standalone", "name": "solo", "tags": {"role": "jump"}},
        {"kind": "scale_set", "name": "vmss", "vms": 14, "placement_groups": 2},
        subscription=SUB,
        resource_group="rg-One",
        tags={"env": "drill"},
    )


async def test_the_fleets_names_and_tags(make_imds: ImdsFactory) -> None:
    imds = make_imds(spec())
    compute = (await imds.get("solo", path="/metadata/instance", version="2021-02-01")).json()[
        "compute"
    ]
    assert (compute["subscriptionId"], compute["resourceGroupName"]) == (SUB, "rg-One")
    assert compute["resourceId"] == (
        f"/subscriptions/{SUB}/resourceGroups/rg-One/providers/Microsoft.Compute/"
        "virtualMachines/solo"
    )
    assert compute["tags"] == "env:drill;role:jump"
    assert compute["tagsList"] == [
        {"name": "env", "value": "drill"},
        {"name": "role", "value": "jump"},
    ]
    assert compute["osProfile"]["computerName"] == "solo"


async def test_a_scale_set_instance_by_its_number_in_the_set(make_imds: ImdsFactory) -> None:
    imds = make_imds(spec())
    topology = imds.fabric.topology
    # two placement groups: instance 13 is the 14th VM of the set, whichever group has it
    vm = next(n for n in topology.vms if topology.azure.instance_of(n) == ("vmss", 13))
    compute = (await imds.get(vm, path="/metadata/instance", version="2021-12-13")).json()[
        "compute"
    ]
    assert compute["resourceId"].endswith("/virtualMachineScaleSets/vmss/virtualMachines/13")
    assert compute["osProfile"]["computerName"] == "vmss00000d"
    assert compute["virtualMachineScaleSet"]["id"].endswith("/virtualMachineScaleSets/vmss")


@pytest.mark.parametrize(
    ("version", "present", "absent"),
    [
        ("2017-04-02", ["name", "vmId", "location"], ["subscriptionId", "zone", "resourceId"]),
        ("2017-08-01", ["subscriptionId", "tags", "placementGroupId"], ["zone", "tagsList"]),
        ("2019-03-11", ["resourceId", "provider"], ["tagsList", "osProfile"]),
        ("2020-09-01", ["osProfile", "licenseType", "tagsList"], ["priority", "userData"]),
        ("2021-02-01", ["priority", "userData", "evictionPolicy"], ["host", "hostGroup"]),
        ("2021-12-13", ["host", "hostGroup", "additionalCapabilities"], []),
    ],
)
async def test_fields_follow_the_api_version(
    make_imds: ImdsFactory, version: str, present: list[str], absent: list[str]
) -> None:
    imds = make_imds(spec())
    compute = (await imds.get("solo", path="/metadata/instance", version=version)).json()["compute"]
    assert set(present) <= set(compute)
    assert not set(absent) & set(compute)


@pytest.mark.parametrize(
    ("top", "message"),
    [
        ({"subscription": "not-a-guid"}, "subscription 'not-a-guid' is not a GUID"),
        ({"resource_group": "bad/group"}, "resource group 'bad/group' must be 1-90"),
        ({"resource_group": "ends."}, "not ending in '.'"),
        ({"tags": {"a/b": "x"}}, "tag name 'a/b' must be 1-512 characters"),
        ({"tags": {"k": "v" * 300}}, "a value holds at most 256 characters"),
    ],
)
def test_names_azure_would_refuse_are_refused(top: dict[str, object], message: str) -> None:
    with pytest.raises(FleetError, match=message.replace("(", r"\(").replace(".", r"\.")):
        build_topology(fleet_from_builtins({"scopes": [{"kind": "standalone", "name": "a"}],
                                            **top}))  # fmt: skip


def test_every_documented_instance_version_is_served_once() -> None:
    from forewarn.imds import INSTANCE_VERSIONS

    assert len(set(INSTANCE_VERSIONS)) == len(INSTANCE_VERSIONS) == 32
    assert list(INSTANCE_VERSIONS) == sorted(INSTANCE_VERSIONS)
    assert {"2017-03-01", "2017-04-02", "2021-02-01", "2024-03-15"} <= set(INSTANCE_VERSIONS)
