"""The real Azure CLI against a real server, as Azure's documentation has users test
Scheduled Events: register the cloud, log in, read the group, then restart, redeploy,
reimage, evict and update VMs and scale sets, each effect seen at the metadata endpoint
as the VM sees it; bad input gets ARM's error and changes nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from forewarn.fleet.azure import TENANT
from tests.arm.conftest import ArmServer, start_arm_server
from tests.support.azcli import AzCli

SUB = "11111111-2222-3333-4444-555555555555"
GROUP = "rg-cli"
FLEET = f"""
subscription: {SUB}
resource_group: {GROUP}
default_vm: solo
tags: {{env: drill}}
scopes:
  - kind: standalone
    name: solo
  - kind: standalone
    name: solo2
  - kind: availability_set
    name: web
    vms: 3
    tags: {{tier: web}}
    event_grid: true
  - kind: scale_set
    name: pool
    vms: 14
    update_domains: 2
  - kind: scale_set
    name: spots
    spot: true
    vms: 2
"""
G = ("-g", GROUP)


@pytest.fixture(scope="module")
def arm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArmServer]:
    server = start_arm_server(tmp_path_factory.mktemp("azcli"), FLEET)
    yield server
    server.server.stop()


@pytest.fixture(scope="module")
def az(arm: ArmServer, tmp_path_factory: pytest.TempPathFactory) -> AzCli:
    cli = AzCli(tmp_path_factory.mktemp("az-home"), arm.ca)
    cli.register(arm.url)
    accounts = cli.ok("login", "--service-principal", "-u", "ci", "-p", "any", "--tenant", "x")
    assert [a["id"] for a in accounts] == [SUB]
    return cli


def types(arm: ArmServer, vm: str) -> list[tuple[str, str]]:
    """The events of ``vm`` in its own Scheduled Events document (the document shows its
    scope's other VMs' events too)."""
    events = arm.document(vm)["Events"]
    return [(e["EventType"], e["EventStatus"]) for e in events if vm in e["Resources"]]


def test_login_and_account_show_name_the_fleets_subscription(az: AzCli) -> None:
    account = az.ok("account", "show")
    assert (account["id"], account["environmentName"]) == (SUB, "forewarn")
    assert account["user"] == {"name": "ci", "type": "servicePrincipal"}
    assert account["tenantId"] == TENANT  # the tenant of /tenants, tokens and Resource Graph


def test_the_group_and_its_resources_as_the_cli_reads_them(az: AzCli, arm: ArmServer) -> None:
    group = az.ok("group", "show", "-n", GROUP)
    assert group["id"] == f"/subscriptions/{SUB}/resourceGroups/{GROUP}"
    assert [g["name"] for g in az.ok("group", "list")] == [GROUP]
    everything = {r["name"]: r for r in az.ok("resource", "list")}
    assert set(everything) == {"solo", "solo2", "web-0", "web-1", "web-2", "pool", "spots", "web"}
    assert everything["web-1"]["tags"] == {"env": "drill", "tier": "web"}
    in_group = az.ok("resource", "list", *G, "--resource-type", "Microsoft.Compute/virtualMachines")
    assert sorted(r["name"] for r in in_group) == ["solo", "solo2", "web-0", "web-1", "web-2"]
    assert [r["name"] for r in az.ok("resource", "list", "--tag", "tier=web")] == [
        "web-0", "web-1", "web-2", "web",
    ]  # fmt: skip
    assert len(az.ok("vm", "list")) == len(az.ok("vm", "list", *G)) == 5
    assert sorted(s["name"] for s in az.ok("vmss", "list")) == ["pool", "spots"]
    assert [a["name"] for a in az.ok("vm", "availability-set", "list", *G)] == ["web"]
    instances = az.ok("vmss", "list-instances", *G, "-n", "pool")
    assert [i["instanceId"] for i in instances] == [str(n) for n in range(14)]
    assert instances[13]["osProfile"]["computerName"] == "pool00000d"


def test_the_vm_and_arm_name_it_alike(az: AzCli, arm: ArmServer) -> None:
    """One identity: what the VM reads in /metadata/instance is what ARM serves."""
    for vm, resource in (("web-1", ("vm", "show", *G, "-n", "web-1")),
                         ("pool_13", ("vmss", "get-instance-view", *G, "-n", "pool",
                                      "--instance-id", "13"))):  # fmt: skip
        r = arm.server.imds(
            vm_address=arm.address(vm), path="/metadata/instance", api_version="2021-02-01"
        )
        compute = r.json()["compute"]
        shown = az.ok(*resource)
        assert compute["subscriptionId"] == SUB
        assert compute["resourceGroupName"] == GROUP
        if vm == "web-1":
            assert compute["resourceId"] == shown["id"]
            assert compute["tagsList"] == [{"name": "env", "value": "drill"},
                                           {"name": "tier", "value": "web"}]  # fmt: skip
            assert compute["osProfile"]["computerName"] == shown["osProfile"]["computerName"]
        else:
            assert compute["resourceId"].endswith(
                "/virtualMachineScaleSets/pool/virtualMachines/13"
            )
            assert compute["osProfile"]["computerName"] == shown["computerName"] == "pool00000d"


def test_restart_is_seen_by_the_vm_approved_with_az_rest_and_started(
    az: AzCli, arm: ArmServer
) -> None:
    """Azure's documented test: restart, watch the event on the VM, approve, see it start."""
    assert az.ok("vm", "restart", *G, "-n", "web-0", "--no-wait") is None
    [event] = arm.document("web-0")["Events"]
    assert (event["EventType"], event["EventStatus"], event["EventSource"]) == (
        "Reboot", "Scheduled", "User",
    )  # fmt: skip
    ack = (
        f"{arm.url}/subscriptions/{SUB}/resourceGroups/{GROUP}/providers/Microsoft.Compute/"
        f"virtualMachines/web-0/providers/Microsoft.Maintenance/scheduledevents/"
        f"{event['EventId']}/acknowledge?api-version=2023-10-01-preview"
    )
    assert az.ok("rest", "--method", "post", "--url", ack) == {"value": "Successfully Approved"}
    assert types(arm, "web-0") == [("Reboot", "Started")]
    view = az.ok("vm", "get-instance-view", *G, "-n", "web-0")["instanceView"]
    assert "PowerState/starting" in [s["code"] for s in view["statuses"]]
    for _ in range(30):  # the reboot runs, then the event is removed
        arm.advance(60)
        if not types(arm, "web-0"):
            break
    assert types(arm, "web-0") == []
    view = az.ok("vm", "get-instance-view", *G, "-n", "web-0")["instanceView"]
    assert "PowerState/running" in [s["code"] for s in view["statuses"]]


def test_a_blocking_restart_returns_when_the_reboot_is_over(az: AzCli, arm: ArmServer) -> None:
    proc = az.popen("vm", "restart", *G, "-n", "solo2")
    try:
        deadline = time.monotonic() + 60
        while not types(arm, "solo2") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert types(arm, "solo2") == [("Reboot", "Scheduled")]
        assert proc.poll() is None  # still waiting for the platform
        while proc.poll() is None and time.monotonic() < deadline:
            arm.advance(60)
            time.sleep(0.3)
        assert proc.wait(timeout=10) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        proc.kill()
    # the reboot is over; the event may still show Started a while, as on Azure
    assert types(arm, "solo2") in ([], [("Reboot", "Started")])
    view = az.ok("vm", "get-instance-view", *G, "-n", "solo2")["instanceView"]
    assert "PowerState/running" in [s["code"] for s in view["statuses"]]
    arm.advance(15 * 60)
    assert types(arm, "solo2") == []


def test_every_write_around_scheduled_events(az: AzCli, arm: ArmServer) -> None:
    az.ok("vm", "redeploy", *G, "-n", "web-1", "--no-wait")
    assert types(arm, "web-1") == [("Redeploy", "Scheduled")]
    az.ok("vmss", "restart", *G, "-n", "pool", "--instance-ids", "1", "2", "--no-wait")
    assert types(arm, "pool_1") == types(arm, "pool_2") == [("Reboot", "Scheduled")]
    az.ok("vmss", "simulate-eviction", *G, "-n", "spots", "--instance-id", "0")
    assert types(arm, "spots_0") == [("Preempt", "Scheduled")]
    az.ok("vmss", "delete-instances", *G, "-n", "pool", "--instance-ids", "7", "--no-wait")
    assert types(arm, "pool_7") == []  # no terminate notification yet: deleted unannounced
    scale_in = [o for o in arm.server.control("GET", "/api/v1/operations").json()
                if o["kind"] == "scale-in"]  # fmt: skip
    assert [o["vms"] for o in scale_in] == [["pool_7"]]
    updated = az.ok(
        "vm", "update", *G, "-n", "web-2",
        "--set", "scheduledEventsPolicy.userInitiatedReboot.automaticallyApprove=true",
    )  # fmt: skip
    assert updated["scheduledEventsPolicy"]["userInitiatedReboot"]["automaticallyApprove"]
    az.ok("vm", "restart", *G, "-n", "web-2", "--no-wait")
    assert [e["status"] for e in arm.events("web-2")] == ["Started"]  # created approved
    profile = "virtualMachineProfile.scheduledEventsProfile.terminateNotificationProfile"
    updated = az.ok(
        "vmss", "update", *G, "-n", "pool",
        "--set", f"{profile}.enable=true", f"{profile}.notBeforeTimeout=PT7M",
    )  # fmt: skip
    shown = updated["virtualMachineProfile"]["scheduledEventsProfile"]
    assert shown["terminateNotificationProfile"] == {"enable": True, "notBeforeTimeout": "PT7M"}
    az.ok("vmss", "delete-instances", *G, "-n", "pool", "--instance-ids", "9", "--no-wait")
    assert types(arm, "pool_9") == [("Terminate", "Scheduled")]
    az.ok("vm", "reimage", *G, "-n", "solo", "--no-wait")
    az.ok("vmss", "reimage", *G, "-n", "pool", "--instance-ids", "3", "--no-wait")
    kinds = [o["kind"] for o in arm.server.control("GET", "/api/v1/operations").json()]
    assert kinds.count("reimage") == 2
    vias = {o["via"] for o in arm.server.control("GET", "/api/v1/operations").json()}
    assert vias == {"arm"}
    arm.advance(30 * 60)


def test_az_rest_queries_resource_graph(az: AzCli, arm: ArmServer) -> None:
    """The resource-graph extension needs a download; ``az rest`` reaches the route."""
    az.ok("vm", "redeploy", *G, "-n", "web-0", "--no-wait")
    [event] = [e for e in arm.events("web-0") if e["status"] == "Scheduled"]
    url = f"{arm.url}/providers/Microsoft.ResourceGraph/resources?api-version=2022-10-01"
    body = '{"query": "maintenanceresources | project id, properties"}'
    rows = az.ok("rest", "--method", "post", "--url", url, "--body", body)["data"]
    ours = [r for r in rows if r["id"].endswith(f"/scheduledevents/{event['id']}")]
    assert len(ours) == 1, rows
    assert ours[0]["id"].startswith(f"/subscriptions/{SUB}/resourceGroups/{GROUP}/")
    error = az.fails("rest", "--method", "post", "--url", url, "--body", '{"query": "take"}')
    assert "400" in error or "BadRequest" in error or "InvalidQuery" in error
    arm.advance(3 * 3600)


def test_perform_maintenance_starts_a_pending_platform_maintenance(
    az: AzCli, arm: ArmServer
) -> None:
    error = az.fails("vm", "perform-maintenance", *G, "-n", "solo2")
    assert "OperationNotAllowed" in error and "No maintenance is pending" in error
    r = arm.server.control(
        "POST", "/api/v1/operations", json={"kind": "degraded-hardware", "target": "solo2"}
    )
    assert r.status_code == 201, r.text
    view = az.ok("vm", "get-instance-view", *G, "-n", "solo2")["instanceView"]
    assert view["maintenanceRedeployStatus"]["isCustomerInitiatedMaintenanceAllowed"] is True
    [(kind, status)] = types(arm, "solo2")
    assert status == "Scheduled"
    az.ok("vm", "perform-maintenance", *G, "-n", "solo2", "--no-wait")
    assert types(arm, "solo2") == [(kind, "Started")]
    [event] = arm.events("solo2")
    assert event.get("approved_via") == "arm"
    arm.advance(3 * 3600)


def test_bad_input_gets_arms_error_and_changes_nothing(az: AzCli, arm: ArmServer) -> None:
    before = arm.server.control("GET", "/api/v1/operations").json()
    error = az.fails("group", "show", "-n", "nope")
    assert "ResourceGroupNotFound" in error and "'nope' could not be found" in error
    error = az.fails("vm", "restart", "-g", "nope", "-n", "solo", "--no-wait")
    assert "ResourceGroupNotFound" in error
    error = az.fails("vm", "restart", *G, "-n", "ghost", "--no-wait")
    assert "ResourceNotFound" in error and "virtualMachines/ghost" in error
    error = az.fails(
        "vm", "update", *G, "-n", "solo",
        "--set", "scheduledEventsPolicy.userInitiatedReboot.automaticallyApprove=maybe",
    )  # fmt: skip
    assert "got maybe" in error  # the CLI itself refuses it; ARM never saw it
    profile = "virtualMachineProfile.scheduledEventsProfile.terminateNotificationProfile"
    error = az.fails(
        "vmss", "update", *G, "-n", "spots", "--set", f"{profile}.notBeforeTimeout=PT99M"
    )
    assert "InvalidParameter" in error and "notBeforeTimeout" in error
    shown = az.ok("vmss", "show", *G, "-n", "spots")["virtualMachineProfile"]
    assert shown["scheduledEventsProfile"]["terminateNotificationProfile"]["enable"] is False
    shown = az.ok("vm", "show", *G, "-n", "solo")["scheduledEventsPolicy"]
    assert shown["userInitiatedReboot"]["automaticallyApprove"] is False
    assert arm.server.control("GET", "/api/v1/operations").json() == before


def test_a_managed_identity_logs_in_and_acknowledges_as_its_vm(
    arm: ArmServer, tmp_path: Path
) -> None:
    """``az login --identity`` on "VM" solo (a plain request from 127.0.0.1 is solo), then
    an acknowledge through ARM is attributed to solo."""
    cli = AzCli(tmp_path, arm.ca, {"AZURE_POD_IDENTITY_AUTHORITY_HOST": arm.server.imds_url})
    cli.register(arm.url)
    [account] = cli.ok("login", "--identity")
    assert account["id"] == SUB
    assert account["user"]["name"] == "systemAssignedIdentity"
    cli.ok("vm", "restart", *G, "-n", "solo", "--no-wait")
    [event] = arm.document("solo")["Events"]
    me = arm.server.imds(
        path="/metadata/instance/compute/resourceId", api_version="2021-02-01"
    ).json()
    ack = f"{arm.url}{me}/providers/Microsoft.Maintenance/scheduledevents/acknowledge"
    cli.ok("rest", "--method", "post", "--url", ack + "?api-version=2025-11-01",
           "--body", f'{{"value": ["{event["EventId"]}"]}}')  # fmt: skip
    [approved] = [e for e in arm.events("solo") if e["id"] == event["EventId"]]
    assert (approved["approved_by"], approved["approved_via"]) == ("solo", "arm")
    arm.advance(30 * 60)


def test_a_big_scale_set_is_listed_in_pages_the_cli_follows(tmp_path: Path) -> None:
    """1,000 instances in 10 pages (a 10,000-VM set, 100 pages, takes the CLI a minute to
    read on these machines: the same code, more pages)."""
    fleet = f"subscription: {SUB}\nresource_group: {GROUP}\nscopes:\n"
    fleet += "  - kind: scale_set\n    name: big\n    vms: 1000\n    placement_groups: 2\n"
    (tmp_path / "server").mkdir()
    server = start_arm_server(tmp_path / "server", fleet)
    try:
        with server.https() as client:
            first = client.get(
                f"/subscriptions/{SUB}/resourceGroups/{GROUP}/providers/Microsoft.Compute/"
                "virtualMachineScaleSets/big/virtualMachines?api-version=2024-07-01",
                headers={"Authorization": "Bearer any"},
            ).json()
        assert len(first["value"]) == 100 and "skiptoken=100" in first["nextLink"]
        cli = AzCli(tmp_path / "az", server.ca)
        cli.register(server.url)
        cli.ok("login", "--service-principal", "-u", "ci", "-p", "any", "--tenant", "x")
        instances = cli.ok("vmss", "list-instances", *G, "-n", "big", "--query", "[].instanceId")
    finally:
        server.server.stop()
    assert instances == [str(n) for n in range(1000)]


def test_with_an_arm_token_only_its_secret_logs_in(tmp_path: Path) -> None:
    (tmp_path / "server").mkdir()
    server = start_arm_server(tmp_path / "server", FLEET, extra=("--arm-token", "op-secret"))
    try:
        cli = AzCli(tmp_path / "az", server.ca)
        cli.register(server.url)
        login = ("login", "--service-principal", "-u", "ci", "--tenant", "x", "-p")
        error = cli.fails(*login, "guessed")
        assert "Invalid client secret" in error
        assert cli.fails("vm", "list") and server.events() == []
        [account] = cli.ok(*login, "op-secret")
        assert account["id"] == SUB
        assert len(cli.ok("vm", "list", *G)) == 5
    finally:
        server.server.stop()
