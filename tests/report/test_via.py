"""The rehearsal report says where each operation and approval came from: an operation
asked for through ARM reads ``via arm``, an approval through ARM's acknowledge ``approved
by ... via arm``, in the JSON, the terminal table and the HTML page."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from azure.core.credentials import AccessToken
from azure.core.rest import HttpRequest
from azure.mgmt.compute import ComputeManagementClient

from forewarn.testing import Forewarn
from tests.cli.conftest import run_cli

FLEET = """\
resource_group: rg-report
scopes:
  - kind: standalone
    name: solo
  - kind: standalone
    name: other
"""


class AnyToken:
    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken("report", int(time.time()) + 3600)


def test_operations_and_approvals_through_arm_say_so(tmp_path: Path) -> None:
    with Forewarn(FLEET, arm=True) as forewarn:
        compute = ComputeManagementClient(
            AnyToken(), forewarn.subscription, base_url=forewarn.arm_url,
            connection_verify=forewarn.arm_ca,
        )  # fmt: skip
        poller = compute.virtual_machines.begin_restart("rg-report", "solo")
        [event] = [e for e in forewarn.events() if e["resources"] == ["solo"]]
        assert [e.event_id for e in forewarn.client("solo").get().events] == [event["id"]]
        ack = (
            f"/subscriptions/{forewarn.subscription}/resourceGroups/rg-report/providers/"
            f"Microsoft.Compute/virtualMachines/solo/providers/Microsoft.Maintenance/"
            f"scheduledevents/{event['id']}/acknowledge?api-version=2025-11-01"
        )
        assert compute.send_request(HttpRequest("POST", ack)).status_code == 200
        control = forewarn.trigger("user-reboot", "other")
        assert len(forewarn.client("other").get().events) == 1
        forewarn.approve(control["event_ids"][0])
        forewarn.advance(1200)
        poller.result(timeout=60)
        compute.close()
        as_json = run_cli(["report", "--json"], forewarn.control_url)
        table = run_cli(["report"], forewarn.control_url, columns=240)
        html_file = tmp_path / "report.html"
        html = run_cli(["report", "--html", str(html_file)], forewarn.control_url)
    assert as_json.code == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    by_target = {o["target"].removeprefix("vm "): o for o in report["operations"]}
    assert by_target["solo"]["via"] == "arm"
    assert by_target["other"]["via"] == "control"
    events = {e["resources"][0]: e for e in report["events"]}
    assert events["solo"]["approved_via"] == "arm"
    assert "via arm" in events["solo"]["summary"], events["solo"]["summary"]
    assert events["other"]["approved_via"] == "control"
    assert "approved by the operator" in events["other"]["summary"]
    assert "via" not in events["other"]["summary"]  # the usual way is not spelled out
    assert table.code == 0, table.stderr
    solo_row = next(line for line in table.stdout.splitlines() if " solo " in line)
    assert " arm " in solo_row, table.stdout
    assert "via arm" in table.stdout
    assert html.code == 0, html.stderr
    page = html_file.read_text("utf-8")
    assert "<th>via</th>" in page and "<td>arm</td>" in page and "via arm" in page
