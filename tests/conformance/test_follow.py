"""``--follow`` end to end against ``forewarn serve``: an operation triggered through the
control API, followed from Scheduled to removed, in seconds (a time scale, or a virtual
clock the test moves)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from forewarn.replay.recorded import read_recording
from tests.conformance.conftest import FOLLOW_RULES, Verdicts, lines_fit
from tests.replay.conftest import ReplayProcess
from tests.support.cli import cli_env, run_cli
from tests.support.serverproc import VIRTUAL, ServerProcess, trigger

WEB0 = "127.1.0.1"  # the demo fleet's web-0 speaks from this address
DOCUMENT_RULES = {"D2.key-order", "D3.event-id", "D4.status", "D5.types", "D6.resource-type",
                  "D7.resources", "D8.not-before", "D9.description", "D10.event-source",
                  "D11.duration", "D12.absent", "D1.integer", "D1.never-decreases"}  # fmt: skip


class Kit:
    """``forewarn conformance --follow`` running; its progress lines read one by one."""

    def __init__(self, url: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "forewarn", "conformance", url, "--follow",
             "--skip-probes", "--source-address", WEB0, "--interval", "0.25", "--rate", "50",
             "--timeout", "60", "--json", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(columns=80),
        )  # fmt: skip
        self.seen: list[str] = []

    def expect(self, fragment: str) -> str:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.seen.append(line)
            if fragment in line:
                return line
        raise AssertionError(f"no line with {fragment!r}: {self.seen}")

    def report(self) -> Verdicts:
        stdout, stderr = self.proc.communicate(timeout=120)
        self.seen.append(stderr)
        assert self.proc.returncode == 0, "".join(self.seen) + stdout
        lines_fit("".join(self.seen))
        return Verdicts.of(stdout)


def test_a_user_reboot_at_time_scale_300(
    start_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    server = start_server(("--time-scale", "300", "--enablement", "always", "--rate-limit", "0"))
    recording = tmp_path / "follow.jsonl"
    kit = Kit(server.imds_url, "--time-scale", "300", "--record", str(recording))
    kit.expect("no event yet: waiting")
    triggered = run_cli(["trigger", "user-reboot", "web-0"], control=server.control_url)
    assert triggered.code == 0, triggered.stderr
    report = kit.report()
    assert report.verdict("PASS") >= FOLLOW_RULES - {"P3.approved", "P1.several-ids"}
    assert report.verdict("PASS") >= DOCUMENT_RULES
    assert report.verdict("FAIL") == set()
    assert report.detail("P3.approved") == "approves nothing without --approve"
    (event,) = report.data["timeline"]
    assert event["event_id"] in triggered.stdout
    assert (event["type"], event["source"], event["seen_as"]) == ("Reboot", "User", "Scheduled")
    assert 1.0 <= event["notice_s"] <= 3.5  # 15 min / 300, NotBefore in whole seconds
    assert event["started"] is not None and event["removed"] is not None
    assert event["approved"] is None
    assert event["expected"]["notice"] == "L1: >= 3 s"
    assert '"exchange"' in recording.read_text()
    # the recording replays: the kit follows the same event again, and it passes again
    replay = ReplayProcess([str(recording), "--rate-limit", "0"]).start()
    try:
        again = Kit(replay.url, "--time-scale", "300").report()
    finally:
        replay.stop()
    (replayed,) = again.data["timeline"]
    assert replayed["event_id"] == event["event_id"]
    assert again.verdict("PASS") >= FOLLOW_RULES - {"P3.approved", "P1.several-ids"}
    assert again.verdict("FAIL") == set()


def test_approve_on_a_virtual_clock(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server(VIRTUAL)
    # NotBefore is on the server's frozen clock, behind the wall clock by the seconds the
    # server has run: the notice is judged with that much slack
    kit = Kit(server.imds_url, "--approve", "--slack", "120")
    kit.expect("no event yet: waiting")
    event_id = trigger(server, "user-reboot", "web-0")
    assert event_id in kit.expect("approved")
    kit.expect(f"{event_id} Started")
    advanced = server.control("POST", "/api/v1/clock/advance", json={"seconds": 3600})
    assert advanced.status_code == 200, advanced.text
    report = kit.report()
    assert report.verdict("FAIL") == set()
    assert report.verdict("PASS") >= FOLLOW_RULES - {"P1.several-ids"}
    assert report.detail("P3.approved") == "1 approvals"
    (event,) = report.data["timeline"]
    assert event["approved"] is not None and event["removed"] is not None
    assert server.control("GET", f"/api/v1/events/{event_id}").status_code == 404


def test_a_restart_through_arm_followed_at_time_scale_300(tmp_path: Path) -> None:
    """As a user would on Azure: ``az vm restart`` (here the unmodified azure-mgmt-compute
    client against forewarn's ARM listener) while the kit follows on the VM."""
    from tests.arm.conftest import SUBSCRIPTION, start_arm_server

    fleet = (
        f"subscription: {SUBSCRIPTION}\ndefault_vm: web-0\n"
        "scopes:\n  - kind: availability_set\n    name: web\n    vms: 2\n"
    )
    arm = start_arm_server(
        tmp_path, fleet, ("--time-scale", "300", "--rate-limit", "0"), clock="real"
    )
    try:
        kit = Kit(arm.server.imds_url, "--time-scale", "300")
        kit.expect("no event yet: waiting")
        arm.compute().virtual_machines.begin_restart("forewarn", "web-0")
        report = kit.report()
    finally:
        arm.server.stop()
    assert report.verdict("FAIL") == set()
    assert report.verdict("PASS") >= FOLLOW_RULES - {"P3.approved", "P1.several-ids"}
    (event,) = report.data["timeline"]
    assert (event["type"], event["source"]) == ("Reboot", "User")
    assert event["started"] is not None and event["removed"] is not None


def test_a_reboot_kills_the_kit_then_a_second_run_follows_the_rest(
    start_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    """What docs/conformance.md tells a user to do: the approved reboot takes the VM, and
    the kit, down (SIGKILL: no chance to flush or close), the recording holds every line
    up to then, and ``--follow --skip-probes`` run again sees the event to its end."""
    server = start_server(VIRTUAL)
    recording = tmp_path / "follow.jsonl"
    kit = Kit(server.imds_url, "--approve", "--record", str(recording))
    kit.expect("no event yet: waiting")
    event_id = trigger(server, "user-reboot", "web-0")
    assert event_id in kit.expect("approved")
    kit.proc.kill()
    kit.proc.communicate(timeout=30)
    # whole lines, replay reads them: the document with the event Scheduled, the approval
    lines = [json.loads(line) for line in recording.read_text("utf-8").splitlines()]
    documents = read_recording(recording).frames["web-0"]
    assert [str(e.status) for e in documents[-1].document.events] == ["Scheduled"]
    (post,) = [x["exchange"] for x in lines if x.get("exchange", {}).get("rule") == "approve"]
    assert (post["request"]["body"], post["answer"]["status"]) == (
        json.dumps({"StartRequests": [{"EventId": event_id}]}), 200)  # fmt: skip
    # the VM is back: the event is Started, then removed once its impact is over
    after = Kit(server.imds_url, "--slack", "120", "--record", str(tmp_path / "after.jsonl"))
    after.expect(f"{event_id} Reboot Started")
    advanced = server.control("POST", "/api/v1/clock/advance", json={"seconds": 3600})
    assert advanced.status_code == 200, advanced.text
    report = after.report()
    assert report.verdict("FAIL") == set()
    (event,) = report.data["timeline"]
    assert (event["event_id"], event["seen_as"], event["there_at_start"]) == (
        event_id, "Started", True)  # fmt: skip
    assert event["removed"] is not None
