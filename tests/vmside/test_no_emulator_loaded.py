"""The commands a VM runs load nothing of the emulator in the process that runs them.

Each runs for real (against a real ``forewarn serve`` where it needs one) and its output
is checked, so a command that failed early cannot pass for one that loaded little.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path

from tests.support.serverproc import ServerProcess, trigger
from tests.vmside.conftest import AGENT_CONFIG, AGENT_EXAMPLE, WEB0, Command, Ran

Start = Callable[..., Command]


def done(command: Command) -> Ran:
    ran = command.wait()
    assert ran.code == 0, ran.stderr
    assert ran.modules, "the wrapper wrote no module list"
    assert ran.emulator == [], ran.emulator
    return ran


def test_version_and_help(forewarn: Start) -> None:
    ran = done(forewarn("--version"))
    assert ran.stdout.startswith("forewarn, version ")
    ran = done(forewarn("--help"))
    assert "serve        Run the metadata endpoint and the control API." in ran.stdout
    assert "events       List live events (or, with --as, the document one VM sees)." in ran.stdout


def test_discover(forewarn: Start, tmp_path: Path) -> None:
    lease = tmp_path / "dhclient.leases"
    lease.write_text("lease {\n  option unknown-245 a8:3f:81:10;\n}\n")
    ran = done(forewarn("discover", "--lease-file", str(lease), "--json"))
    assert json.loads(ran.stdout)["url"] == "http://168.63.129.16"


def test_events_and_approve_on_the_endpoint(forewarn: Start, server: ServerProcess) -> None:
    event_id = trigger(server, "user-reboot", "web-0")
    ran = done(forewarn("events", "--url", server.imds_url, "--source-address", WEB0, "--json"))
    assert [e["EventId"] for e in json.loads(ran.stdout)["Events"]] == [event_id]
    ran = done(forewarn("approve", event_id, "--url", server.imds_url, "--source-address", WEB0))
    assert ran.stdout.strip() == f"approved on {server.imds_url}: {event_id}"
    assert server.control("GET", f"/api/v1/events/{event_id}").json()["status"] == "Started"


def test_events_and_approve_on_the_control_api(forewarn: Start, server: ServerProcess) -> None:
    event_id = trigger(server, "user-reboot", "web-1")
    ran = done(forewarn("--control", server.control_url, "events", "--json"))
    assert [e["id"] for e in json.loads(ran.stdout)] == [event_id]
    ran = done(forewarn("--control", server.control_url, "approve", event_id))
    assert ran.stdout.strip() == f"{event_id}: Started"


def test_watch(forewarn: Start, server: ServerProcess) -> None:
    event_id = trigger(server, "user-reboot", "web-0")
    watch = forewarn("watch", "--url", server.imds_url, "--source-address", WEB0,
                     "--interval", "0.1")  # fmt: skip
    assert "incarnation" in watch.expect("event")
    assert "[this VM]" in watch.expect(event_id)
    ran = watch.stop(signal.SIGINT)
    assert ran.code == 0, ran.stderr
    assert ran.emulator == []


def test_agent_check_config(forewarn: Start) -> None:
    ran = done(forewarn("agent", "check-config", "--config", str(AGENT_EXAMPLE), "--skip-programs"))
    assert f"{AGENT_EXAMPLE}: valid" in ran.stdout
    assert "group-maintenance: handlers [notify, node], approval coordinated" in ran.stdout


def test_agent_run_and_status(forewarn: Start, server: ServerProcess, tmp_path: Path) -> None:
    event_id = trigger(server, "user-reboot", "web-0")
    config = tmp_path / "agent.toml"
    config.write_text(AGENT_CONFIG)
    state = tmp_path / "agent-state.db"
    dry = forewarn("agent", "run", "-c", str(config), "--endpoint", server.imds_url,
                   "--local-address", WEB0, "--log-format", "json", "--dry-run")  # fmt: skip
    assert event_id in dry.expect("dry run: would approve the event")
    ran = dry.stop(signal.SIGTERM)
    assert ran.code == 0, ran.stderr
    assert ran.emulator == []
    agent = forewarn("agent", "run", "-c", str(config), "--endpoint", server.imds_url,
                     "--local-address", WEB0, "--log-format", "json",
                     "--state-path", str(state))  # fmt: skip
    assert event_id in agent.expect('"event": "approved"')
    assert agent.stop(signal.SIGTERM).emulator == []
    assert server.control("GET", f"/api/v1/events/{event_id}").json()["status"] == "Started"
    ran = done(forewarn("agent", "status", "--state-path", str(state), "--json"))
    (seen,) = json.loads(ran.stdout)["events"]
    assert (seen["event_id"], seen["outcome"], seen["approval"]) == (event_id, "ok", "approved")


def test_conformance(forewarn: Start, server: ServerProcess, tmp_path: Path) -> None:
    trigger(server, "user-reboot", "web-0")
    recording = tmp_path / "kit.jsonl"
    ran = done(forewarn("conformance", server.imds_url, "--source-address", WEB0, "--rate",
                        "50", "--json", "--record", str(recording)))  # fmt: skip
    report = json.loads(ran.stdout)
    assert (report["vm"], report["failed"]) == ("web-0", 0)
    assert report["passed"] >= 45
    assert '"exchange"' in recording.read_text()
    ran = done(forewarn("conformance", "--rules"))
    assert ran.stdout.startswith("R3.versions ")
