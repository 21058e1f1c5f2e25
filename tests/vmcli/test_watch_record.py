"""``forewarn watch --record FILE`` writes each new document a real endpoint served, in the
format ``forewarn replay`` reads; replayed, a client sees the same documents in order."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from forewarn.client import ScheduledEventsClient
from forewarn.replay.recorded import read_recording
from tests.replay.conftest import ReplayProcess
from tests.support.cli import run_cli
from tests.support.serverproc import ServerProcess, trigger
from tests.vmcli.conftest import WEB0, Running


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def _wait_lines(path: Path, count: int, timeout: float = 30) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while len(_lines(path)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return _lines(path)


def test_watch_records_what_replay_plays_back(
    server: ServerProcess, running: Callable[..., Running], tmp_path: Path
) -> None:
    record = tmp_path / "captured.jsonl"
    watch = running("watch", "--url", server.imds_url, "--interval", "0.1", "--as-vm", "web-0",
                    "--source-address", WEB0, "--record", str(record))  # fmt: skip
    watch.expect("incarnation 1:")
    time.sleep(0.5)  # documents apart in time, so the replay (at scale 1) shows each
    event_id = trigger(server, "user-reboot", "web-0")
    watch.expect(f"added {event_id}")
    served_2 = server.imds(vm_address=WEB0).content  # what the VM is served now
    time.sleep(0.5)  # a few polls of an unchanged document: no new line
    server.control("POST", f"/api/v1/events/{event_id}/approve", json={})
    watch.expect("Started")
    lines = _wait_lines(record, 3)
    code, stderr = watch.interrupt()
    assert (code, stderr) == (0, "")

    assert [(x["vm"], x["api_version"], x["incarnation"]) for x in lines] == [
        ("web-0", "2020-07-01", 1),
        ("web-0", "2020-07-01", 2),
        ("web-0", "2020-07-01", 3),
    ]
    assert json.dumps(lines[1]["body"], separators=(",", ":")).encode() == served_2
    assert lines[0]["t"] <= lines[1]["t"] <= lines[2]["t"]
    assert [e["EventId"] for e in lines[1]["body"]["Events"]] == [event_id]

    replay = ReplayProcess([str(record), "--vm", "web-0", "--time-scale", "1",
                            "--start", "first-request", "--rate-limit", "0",
                            "--recorded-times"]).start()  # fmt: skip
    try:
        seen = replay.watch(until=3)
        assert [json.loads(body) for _, body in seen] == [x["body"] for x in lines]
        with ScheduledEventsClient(replay.url) as client:
            document = client.get()
        assert document.incarnation == 3
        [event] = document.events
        assert (event.event_id, str(event.status)) == (event_id, "Started")
    finally:
        replay.stop()


def test_watch_refuses_a_record_file_it_cannot_write(server: ServerProcess, tmp_path: Path) -> None:
    target = tmp_path / "no-such-dir" / "x.jsonl"
    result = run_cli(["watch", "--url", server.imds_url, "--as-vm", "web-0",
                      "--source-address", WEB0, "--record", str(target)])  # fmt: skip
    assert result.code == 2, result
    assert f"--record {target}: No such file or directory" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_watch_killed_mid_run_leaves_every_document_it_showed_whole(
    server: ServerProcess, running: Callable[..., Running], tmp_path: Path
) -> None:
    """SIGKILL (a VM that reboots): each line went to the file when its document came,
    before the watch printed it; nothing was held back in a buffer."""
    record = tmp_path / "captured.jsonl"
    watch = running("watch", "--url", server.imds_url, "--interval", "0.1", "--as-vm", "web-0",
                    "--source-address", WEB0, "--record", str(record))  # fmt: skip
    watch.expect("incarnation 1:")
    event_id = trigger(server, "user-reboot", "web-0")
    watch.expect(f"added {event_id}")
    watch.kill()
    assert watch.proc.returncode == -signal.SIGKILL
    frames = read_recording(record).frames["web-0"]
    assert [f.incarnation for f in frames] == [1, 2]
    assert record.read_bytes().endswith(b"\n")
