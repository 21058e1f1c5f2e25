# ruff: noqa: E501  (the articles' programs, their lines as they wrote them)
"""The articles' own programs, unmodified, as VMs of the fleet through ``forewarn exec``:
curl with the documented commands, the Python sample on Python 3, a program that finds
itself in a scale-set event by its host name. Each sees its own VM's events only and
approves them; as root and as an unprivileged user.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

from tests.support.serverproc import ServerProcess
from tests.support.waiting import wait_until
from tests.vmexec.conftest import SYSTEM_PYTHON, Exec, event, trigger, vm_name

#: The articles' commands, byte for byte (the approval's id is the event's own).
CURL_GET = (
    "curl -H Metadata:true http://169.254.169.254/metadata/scheduledevents?api-version=2017-03-01"
)
CURL_APPROVE = (
    'curl -H Metadata:true -X POST -d \'{"DocumentIncarnation":"5", "StartRequests": '
    '[{"EventId": "%s"}]}\' http://169.254.169.254/metadata/scheduledevents?api-version=2017-03-01'
)

#: The articles' Python sample as Python 3 writes it (urllib.request for urllib2, print()
#: for print): the hard-coded address, ``Metadata: true``, its host name in Resources.
#: It approves each event listing this host, as the articles' approval section shows.
ARTICLE_SAMPLE = """\
#!/usr/bin/python3

import json
import urllib.request
import socket
import sys

metadata_url = "http://169.254.169.254/metadata/scheduledevents?api-version=2017-03-01"
headers = "{Metadata:true}"
this_host = socket.gethostname()

def get_scheduled_events():
   req = urllib.request.Request(metadata_url)
   req.add_header('Metadata', 'true')
   resp = urllib.request.urlopen(req)
   data = json.loads(resp.read())
   return data

def approve_scheduled_event(event_id, incarnation):
   body = json.dumps({"DocumentIncarnation": incarnation,
                      "StartRequests": [{"EventId": event_id}]}).encode()
   req = urllib.request.Request(metadata_url, data=body, method="POST")
   req.add_header('Metadata', 'true')
   urllib.request.urlopen(req)

def handle_scheduled_events(data):
    for evt in data['Events']:
        eventid = evt['EventId']
        status = evt['EventStatus']
        resources = evt['Resources']
        eventtype = evt['EventType']
        resourcetype = evt['ResourceType']
        notbefore = evt['NotBefore'].replace(" ","_")
        if this_host in resources:
            print("+ Scheduled Event. This host is scheduled for " + eventtype + " not before " + notbefore)
            approve_scheduled_event(eventid, data['DocumentIncarnation'])
            print("approved " + eventid)

def main():
   data = get_scheduled_events()
   handle_scheduled_events(data)

if __name__ == '__main__':
  main()
  sys.exit(0)
"""

#: How a node of a scale set finds itself (cloud-provider-azure's way): its host name is
#: the computer name, the set's name and the instance id in six base-36 digits; Resources
#: name the instance ``{set}_{id}``.
HOSTNAME_PROGRAM = """\
import json, socket, urllib.request
host = socket.gethostname()
scale_set, instance = host[:-6], int(host[-6:], 36)
me = f"{scale_set}_{instance}"
req = urllib.request.Request(
    "http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01",
    headers={"Metadata": "true"})
doc = json.loads(urllib.request.urlopen(req).read())
mine = [e["EventId"] for e in doc["Events"] if me in e["Resources"]]
print(json.dumps({"host": host, "me": me, "mine": mine}))
"""


def test_curl_as_the_articles_write_it_sees_its_vm_and_approves(
    vmexec: Exec, server: ServerProcess
) -> None:
    mine = trigger(server, "user-reboot", "web-0")
    other = trigger(server, "user-reboot", "db")  # another scope's: web-0 never sees it
    seen = vmexec.run("web-0", "sh", "-c", CURL_GET)
    assert seen.returncode == 0, seen.stderr
    document = json.loads(seen.stdout)
    assert [e["EventId"] for e in document["Events"]] == [mine]
    assert document["Events"][0]["Resources"] == ["_web-0"]  # 2017-03-01's underscore
    approved = vmexec.run("web-0", "sh", "-c", CURL_APPROVE % mine)
    assert (approved.returncode, approved.stdout) == (0, ""), approved.stderr
    assert event(server, mine)["approved_by"] == "web-0"
    assert event(server, other)["approved_by"] is None


def test_the_articles_python_sample_finds_its_host_name_and_approves(
    vmexec: Exec, server: ServerProcess, shared_dir: Path
) -> None:
    sample = shared_dir / "scheduled_events_sample.py"
    sample.write_text(ARTICLE_SAMPLE)
    # A cloud service's role instance, as in the sample's day: 2017-03-01 lists it by its
    # own name (a VM's name there has an underscore before it, which the sample misses).
    mine = trigger(server, "user-reboot", "FrontEnd_IN_0")
    other = trigger(server, "user-reboot", "web-1")
    ran = vmexec.run("FrontEnd_IN_0", SYSTEM_PYTHON, str(sample))
    assert ran.returncode == 0, ran.stderr
    assert f"approved {mine}" in ran.stdout
    assert "This host is scheduled for Reboot" in ran.stdout
    assert event(server, mine)["approved_by"] == "FrontEnd_IN_0"
    assert event(server, other)["approved_by"] is None


def test_a_scale_set_node_finds_itself_by_its_host_name(
    vmexec: Exec, server: ServerProcess, shared_dir: Path
) -> None:
    program = shared_dir / "find_me.py"
    program.write_text(HOSTNAME_PROGRAM)
    mine = trigger(server, "user-reboot", vm_name(18))
    trigger(server, "user-reboot", vm_name(3))  # the same scope: seen, not this node's
    ran = vmexec.run(vm_name(18), SYSTEM_PYTHON, str(program))
    assert ran.returncode == 0, ran.stderr
    found = json.loads(ran.stdout)
    # the name /metadata/instance reports, as Azure names instance 18's computer
    assert found == {"host": "aks-default-36328368-vmss00000i", "me": vm_name(18), "mine": [mine]}
    instance = vmexec.run(
        vm_name(18), "curl", "-s", "-H", "Metadata:true",
        "http://169.254.169.254/metadata/instance/compute/osProfile/computerName"
        "?api-version=2021-02-01&format=text",
    )  # fmt: skip
    assert instance.stdout == found["host"]


def test_the_agent_with_no_endpoint_configured_approves_its_own_event(
    vmexec: Exec, server: ServerProcess, shared_dir: Path
) -> None:
    config = shared_dir / "agent.toml"
    config.write_text(
        textwrap.dedent(f"""
        state_path = "{shared_dir / "state.db"}"
        poll_interval = 0.2

        [handlers.drain]
        type = "exec"
        argv = ["true"]

        [[rules]]
        event_types = ["Reboot"]
        this_vm = true
        handlers = ["drain"]
        approval = "after-handlers"
    """)
    )
    other = trigger(server, "user-reboot", "web-1")
    mine = trigger(server, "user-reboot", vm_name(7))
    agent = vmexec.start(
        vm_name(7), *vmexec.python(), "-m", "forewarn", "agent", "run", "-c", str(config),
        env={**os.environ, "FOREWARN_IMDS_URL": "http://127.0.0.1:1"},
    )  # fmt: skip
    wait_until(lambda: event(server, mine)["approved_by"], 90, "the agent's approval")
    assert event(server, mine)["approved_by"] == vm_name(7)
    assert event(server, other)["approved_by"] is None
    assert agent.poll() is None
