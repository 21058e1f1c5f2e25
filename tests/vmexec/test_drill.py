"""Twenty ``forewarn exec`` at once against one server, each a different VM of a scale set
running the same real program: the drill's report grades each by name, and the
dashboard shows each polling, as it does polls from loopback addresses."""

from __future__ import annotations

from pathlib import Path

from tests.support.serverproc import ServerProcess
from tests.support.waiting import wait_until
from tests.vmexec.conftest import SYSTEM_PYTHON, Exec, event, trigger, vm_name

#: A node's own loop: poll, and approve each Scheduled event that lists it by its host
#: name (cloud-provider-azure's instance id from the computer name).
NODE = """\
import json, socket, time, urllib.request
host = socket.gethostname()
me = f"{host[:-6]}_{int(host[-6:], 36)}"
URL = "http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01"
approved = set()
while True:
    request = urllib.request.Request(URL, headers={"Metadata": "true"})
    doc = json.loads(urllib.request.urlopen(request).read())
    for e in doc["Events"]:
        mine = me in e["Resources"] and e["EventStatus"] == "Scheduled"
        if mine and e["EventId"] not in approved:
            body = json.dumps({"StartRequests": [{"EventId": e["EventId"]}]}).encode()
            urllib.request.urlopen(urllib.request.Request(
                URL, data=body, headers={"Metadata": "true"}, method="POST"))
            approved.add(e["EventId"])
            print("approved", e["EventId"], flush=True)
    time.sleep(0.5)
"""
VMS = [vm_name(i) for i in range(20)]


def test_twenty_vms_at_once_in_one_drill_each_graded_by_name(
    vmexec: Exec, server: ServerProcess, shared_dir: Path
) -> None:
    program = shared_dir / "node.py"
    program.write_text(NODE)
    nodes = {vm: vmexec.start(vm, SYSTEM_PYTHON, str(program)) for vm in VMS}

    def polling() -> list[str]:
        rows = [
            vm
            for scope in server.control("GET", "/api/v1/dashboard/scopes?limit=1000").json()[
                "scopes"
            ]
            for vm in server.control(
                "GET", f"/api/v1/dashboard/scopes/{scope['id']}?limit=1000"
            ).json()["vms"]
        ]
        return [r["name"] for r in rows if r["polled"] is not None]

    wait_until(lambda: set(VMS) <= set(polling()), 300, "every VM polling on the dashboard")
    events = {vm: trigger(server, "user-reboot", vm) for vm in VMS}
    wait_until(
        lambda: all(event(server, e)["approved_by"] == vm for vm, e in events.items()),
        300, "each VM's approval of its own event",
    )  # fmt: skip
    verdict = server.control("GET", "/api/v1/reactions").json()  # `forewarn report --json`
    graded = {row["vm"]: row["verdict"] for row in verdict["vms"]}
    assert set(VMS) <= set(graded), graded
    assert {graded[vm] for vm in VMS} == {"approved"}, graded
    assert verdict["totals"]["fail"] == 0
    for vm, node in nodes.items():
        assert node.poll() is None, (vm, node.stderr.read() if node.stderr else "")
