"""``forewarn watch`` (plain lines when stdout is not a terminal) over a real user-reboot
lifecycle, and ``forewarn discover`` on lease files the test writes."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from tests.support.cli import run_cli
from tests.support.serverproc import ServerProcess, free_port, trigger
from tests.vmcli.conftest import WEB1, Running


def test_watch_shows_a_user_reboot_as_it_happens(
    server: ServerProcess, running: Callable[..., Running]
) -> None:
    watch = running("watch", "--url", server.imds_url, "--interval", "0.1")
    assert watch.expect("incarnation 1:").endswith("0 events")

    event_id = trigger(server, "user-reboot", "web-0")
    added = watch.expect(f"added {event_id}")
    # web-0 is the VM asking (from 127.0.0.1, the default VM): its events are marked
    assert "Reboot Scheduled" in added and "(in 1" in added and added.endswith("[this VM]")

    assert server.control("POST", f"/api/v1/events/{event_id}/approve", json={}).status_code == 200
    updated = watch.expect(f"updated {event_id}")
    assert "Reboot Started NotBefore - (started)" in updated

    server.control("POST", "/api/v1/clock/advance", json={"seconds": 1200})
    removed = watch.expect(f"removed {event_id}")
    assert "incarnation 4:" in removed

    code, stderr = watch.interrupt()
    assert (code, stderr) == (0, "")  # Ctrl-C is the way out, not an error


def test_watch_as_another_vm(server: ServerProcess, running: Callable[..., Running]) -> None:
    watch = running("watch", "--url", server.imds_url, "--interval", "0.1",
                    "--source-address", WEB1, "--as-vm", "web-1")  # fmt: skip
    watch.expect("incarnation 1:")
    theirs = trigger(server, "user-reboot", "web-0")
    mine = trigger(server, "user-reboot", "web-1")
    lines = [watch.expect(f"added {theirs}"), watch.expect(f"added {mine}")]
    assert not lines[0].endswith("[this VM]")
    assert lines[1].endswith("[this VM]")


def test_watch_reads_the_endpoint_from_the_environment(
    server: ServerProcess, running: Callable[..., Running]
) -> None:
    watch = running("watch", "--interval", "0.1", env={"FOREWARN_IMDS_URL": server.imds_url})
    watch.expect("incarnation 1: 0 events")


def test_watch_of_a_dead_endpoint_is_one_error_line() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    run_cli(["watch", "--url", dead]).assert_one_error_line("cannot reach")


def _lease(path: Path, text: str, mtime: float) -> Path:
    path.write_text(text)
    os.utime(path, (mtime, mtime))
    return path


def test_discover_reads_option_245(tmp_path: Path) -> None:
    dhclient = _lease(tmp_path / "dhclient.eth0.leases",
                      "lease {\n  option unknown-245 a9:fe:a9:fe;\n}\n", 1_000)  # fmt: skip
    networkd = _lease(tmp_path / "2", "ADDRESS=10.1.0.4\nOPTION_245=0A010009\n", 2_000)
    result = run_cli(["discover", "--lease-file", str(dhclient), "--lease-file", str(networkd)])
    assert result.code == 0, result.stderr
    assert result.stdout == f"http://10.1.0.9  (from DHCP option 245 in {networkd})\n"

    result = run_cli(["discover", "--lease-file", str(dhclient), "--json"])
    assert json.loads(result.stdout) == {
        "url": "http://169.254.169.254", "source": "DHCP option 245", "lease_file": str(dhclient),
    }  # fmt: skip


def test_discover_variables_and_default(tmp_path: Path) -> None:
    empty = _lease(tmp_path / "l", "lease {\n}\n", 1_000)
    result = run_cli(
        ["discover", "--lease-file", str(empty)], env={"SCHEDULEDEVENTSIP": "10.0.0.5"}
    )
    assert result.stdout == "http://10.0.0.5  (from $SCHEDULEDEVENTSIP)\n"
    result = run_cli(["discover", "--lease-file", str(empty)])
    assert result.stdout.startswith("http://169.254.169.254  (the default")
