"""Resource Graph through the unmodified azure-mgmt-resourcegraph client: rows follow every
state change (Completed and Canceled kept), the documented queries, and a 400 naming an
operator outside the subset; ARM's policy switches publishing on for a resource."""

from __future__ import annotations

from typing import Any

import pytest
from azure.core.exceptions import HttpResponseError
from azure.mgmt.resourcegraph.models import QueryRequest, QueryRequestOptions

from forewarn.fleet.azure import TENANT
from tests.arm.conftest import SUBSCRIPTION
from tests.eventgrid.conftest import GridServer
from tests.eventgrid.webhook import webhook

ALL = 'maintenanceresources | where type == "microsoft.maintenance/scheduledevents"'


def _query(grid: GridServer, query: str, **options: Any) -> Any:
    request = QueryRequest(
        query=query,
        subscriptions=[SUBSCRIPTION],
        options=QueryRequestOptions(**options) if options else None,
    )
    return grid.graph().resources(request)


def _status(grid: GridServer, event_id: str) -> str | None:
    q = f"{ALL} | where name == '{event_id}' | project status = tostring(properties.EventStatus)"
    rows = _query(grid, q).data
    return rows[0]["status"] if rows else None


def test_rows_follow_every_state_change_and_ended_ones_stay(grid: GridServer) -> None:
    (done,) = grid.trigger("user-redeploy", "pub")["event_ids"]
    assert _status(grid, done) == "Scheduled"
    grid.action(done, "approve")
    assert _status(grid, done) == "Started"
    grid.arm.advance(3600)
    assert _status(grid, done) == "Completed"
    (canceled,) = grid.trigger("user-reboot", "pub")["event_ids"]
    assert _status(grid, canceled) == "Scheduled"
    grid.action(canceled, "cancel")
    assert _status(grid, canceled) == "Canceled"
    assert _status(grid, done) == "Completed"
    row = _query(grid, f"{ALL} | where name == '{done}'").data[0]
    assert row["id"].endswith(
        f"/virtualMachines/pub/providers/Microsoft.Maintenance/scheduledevents/{done}"
    )
    assert row["subscriptionId"] == SUBSCRIPTION and row["resourceGroup"] == "rg-grid"
    with grid.arm.https() as arm:  # the tenant ARM names, as `az account show` reads it
        tenants = arm.get("/tenants", params={"api-version": "2022-12-01"},
                          headers={"Authorization": "Bearer forewarn"}).json()["value"]  # fmt: skip
    assert [t["tenantId"] for t in tenants] == [row["tenantId"]] == [TENANT]
    assert row["properties"]["EventType"] == "Redeploy" and row["properties"]["Resources"] == [
        "pub"
    ]
    (quiet,) = grid.trigger("user-reboot", "quiet")["event_ids"]
    assert _status(grid, quiet) is None  # its scope does not publish
    grid.action(quiet, "cancel")


def test_the_documented_queries(grid: GridServer) -> None:
    ids = [grid.trigger("user-reboot", vm)["event_ids"][0] for vm in ("pub", "pub2")]
    grid.action(ids[0], "approve")
    documented = (
        "Maintenanceresources\n"
        '| where type == "microsoft.maintenance/scheduledevents"\n'
        "| sort by tostring(properties.EventStatus), tostring(properties.EventId) asc\n"
        "| project resourceGroup, zones, properties.EventStatus, properties.NotBefore, "
        "properties.Resources, properties.EventId, properties.EventType, properties.Description"
    )
    result = _query(grid, documented)
    assert result.total_records == len(result.data) >= 2
    statuses = [r["properties_EventStatus"] for r in result.data]
    assert statuses == sorted(statuses, reverse=True)  # Kusto: descending unless asc
    assert set(result.data[0]) == {
        "resourceGroup", "zones", "properties_EventStatus", "properties_NotBefore",
        "properties_Resources", "properties_EventId", "properties_EventType",
        "properties_Description",
    }  # fmt: skip
    live = f"{ALL} | where properties.EventStatus in ('Scheduled', 'Started')"
    counted = _query(grid, f"{live} | summarize count() by tostring(properties.EventStatus)")
    by = {r["properties_EventStatus"]: r["count_"] for r in counted.data}
    assert by["Started"] >= 1 and by["Scheduled"] >= 1
    assert sum(by.values()) == _query(grid, live).total_records
    table = _query(
        grid, f"{live} | project id, n = properties.DurationInSeconds | order by id asc | take 1",
        result_format="table",
    )  # fmt: skip
    assert [c["name"] for c in table.data["columns"]] == ["id", "n"]
    assert table.data["columns"][1]["type"] == "integer" and len(table.data["rows"]) == 1
    limited = _query(grid, f"{ALL} | limit 1")
    assert limited.count == 1
    page = _query(grid, ALL, top=1)
    assert page.count == 1 and page.skip_token and page.total_records >= 2
    second = _query(grid, ALL, top=1, skip_token=page.skip_token)
    assert second.data[0]["id"] != page.data[0]["id"]
    assert _query(grid, ALL).total_records == page.total_records
    other = grid.graph().resources(QueryRequest(query=ALL, subscriptions=["other-sub"]))
    assert other.total_records == 0
    grid.action(ids[0], "complete")
    grid.action(ids[1], "cancel")


@pytest.mark.parametrize(
    ("query", "named"),
    [
        (f"{ALL} | extend x = 1", "extend"),
        (f"{ALL} | join (resources) on id", "join"),
        (f"{ALL} | project-away id", "project-away"),
        (f"{ALL} | summarize dcount(id)", "dcount"),
        (f"{ALL} | where name matches regex 'a'", "matches"),
        (f"{ALL} | where parse_json(name) == 1", "parse_json"),
        ("resources | take 1", "resources"),
    ],
)
def test_an_unsupported_operator_is_a_400_naming_it(
    grid: GridServer, query: str, named: str
) -> None:
    with pytest.raises(HttpResponseError) as caught:
        _query(grid, query)
    assert caught.value.status_code == 400
    assert f"'{named}'" in caught.value.message


def test_arm_policy_turns_publishing_on_for_a_resource(grid: GridServer) -> None:
    with webhook() as (url, hook):
        scope = (
            f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-grid/providers/"
            "Microsoft.Compute/availabilitySets/web"
        )
        body = {
            "properties": {
                "destination": {"endpointType": "WebHook", "properties": {"endpointUrl": url}}
            }
        }
        with grid.arm.https() as http:
            put = http.put(
                f"{scope}/providers/Microsoft.EventGrid/eventSubscriptions/webwatch",
                params={"api-version": "2022-06-15"}, json=body,
                headers={"Authorization": "Bearer x"},
            )  # fmt: skip
            assert put.status_code == 201, put.text
            assert put.json()["properties"]["provisioningState"] == "Succeeded"
            (before,) = grid.trigger("user-reboot", "web-0")["event_ids"]
            grid.action(before, "cancel")
            policy = {"scheduledEventsPolicy": {"scheduledEventsAdditionalPublishingTargets": {
                "eventGridAndResourceGraph": {"enable": True}}}}  # fmt: skip
            r = http.patch(
                scope, params={"api-version": "2024-07-01"}, json={"properties": policy},
                headers={"Authorization": "Bearer x"},
            )  # fmt: skip
            assert r.status_code == 200, r.text
            (after,) = grid.trigger("user-reboot", "web-1")["event_ids"]
            got = hook.wait(1)
            (pub,) = grid.trigger("user-reboot", "pub2")["event_ids"]  # not under this scope
            grid.action(after, "cancel")
            got = hook.wait(2)
            bodies = [r.body.decode() for r in got]
            assert all(after in b for b in bodies) and not any(before in b for b in bodies)
            assert not any(pub in b for b in bodies)
            grid.action(pub, "cancel")
            gone = http.delete(
                f"{scope}/providers/Microsoft.EventGrid/eventSubscriptions/webwatch",
                params={"api-version": "2022-06-15"}, headers={"Authorization": "Bearer x"},
            )  # fmt: skip
            assert gone.status_code == 200
