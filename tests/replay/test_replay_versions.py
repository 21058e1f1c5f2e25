"""``forewarn replay`` as clients of every api-version see it: each version rendered from
what was recorded (CONTRACT D5, D7, D9-D12) or refused with why, the rate limit (R8),
instance metadata's text rule, NotBefore shifted by default, and recordings that cannot be
replayed refused in one line. Real ``forewarn replay`` processes, the project's client
and raw HTTP."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from forewarn.client import EndpointError, EventType, ScheduledEventsClient

FREEZE = "602D9444-D2CD-49C7-8624-8643E7171297"


def _raw_get(port: int, target: str) -> tuple[int, bytes]:
    """One GET over a plain socket (no HTTP library): status and body."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            f"GET {target} HTTP/1.1\r\nHost: 169.254.169.254\r\nMetadata: true\r\n"
            "Connection: close\r\n\r\n".encode()
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def _wait_for(replay: Any, incarnation: int, version: str = "2020-07-01") -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        doc: dict[str, Any] = replay.get(api_version=version).json()
        if doc["DocumentIncarnation"] >= incarnation:
            return doc
        assert time.monotonic() < deadline, doc
        time.sleep(0.05)


def test_each_version_gets_its_own_rendering_of_the_capture(start_replay: Any) -> None:
    """The capture holds 2020-07-01 and 2017-03-01; every other version is rendered."""
    replay = start_replay("--example", "contract", "--rate-limit", "0", "--recorded-times")
    _wait_for(replay, 7)  # the Freeze: +60 s of the capture, 1 s at its default scale 60
    status, body = _raw_get(replay.port, "/metadata/scheduledevents?api-version=2019-08-01")
    assert status == 200
    [event] = json.loads(body)["Events"]
    assert event["Resources"] == ["myvm"]  # not 2017-03-01's "_myvm"
    assert event["Description"] == "Host server is undergoing maintenance."
    assert event["EventSource"] == "Platform"
    assert "DurationInSeconds" not in event  # newer than 2019-08-01: absent (D12)
    assert list(event) == [
        "EventId", "EventStatus", "EventType", "ResourceType", "Resources", "NotBefore",
        "Description", "EventSource",
    ]  # fmt: skip
    _, old = _raw_get(replay.port, "/metadata/scheduledevents?api-version=2017-08-01")
    [event] = json.loads(old)["Events"]
    assert event["Resources"] == ["myvm"] and "Description" not in event
    _, oldest = _raw_get(replay.port, "/metadata/scheduledevents?api-version=2017-03-01")
    assert json.loads(oldest)["Events"][0]["Resources"] == ["_myvm"]  # as recorded
    with ScheduledEventsClient(replay.url, api_version="2019-04-01") as client:
        [seen] = client.get().events
    assert seen.event_id == FREEZE and seen.resources == ("myvm",)
    assert seen.description == "Host server is undergoing maintenance."


def _recording(path: Path, version: str, events: list[dict[str, Any]]) -> Path:
    body = {"DocumentIncarnation": 3, "Events": events}
    line = {"t": 0, "vm": "spot-1", "api_version": version, "incarnation": 3, "body": body}
    path.write_text(json.dumps(line) + "\n", "utf-8")
    return path


def _event(event_id: str, kind: str, name: str = "spot-1") -> dict[str, Any]:
    return {
        "EventId": event_id, "EventStatus": "Scheduled", "EventType": kind,
        "ResourceType": "VirtualMachine", "Resources": [name],
        "NotBefore": "Mon, 19 Sep 2016 18:29:47 GMT", "Description": "", "EventSource":
        "Platform", "DurationInSeconds": -1,
    }  # fmt: skip


def test_event_types_show_only_from_their_versions(tmp_path: Path, start_replay: Any) -> None:
    """Recorded at 2020-07-01: a Preempt only from 2017-11-01, a Terminate from 2019-01-01."""
    path = _recording(
        tmp_path / "spot.jsonl",
        "2020-07-01",
        [_event("P", "Preempt"), _event("T", "Terminate"), _event("R", "Reboot")],
    )
    replay = start_replay(str(path), "--rate-limit", "0")

    def types(version: str) -> list[str]:
        response = replay.get(api_version=version)
        assert response.status_code == 200, response.text
        return [e["EventType"] for e in response.json()["Events"]]

    assert types("2017-08-01") == ["Reboot"]
    assert types("2017-11-01") == ["Preempt", "Reboot"]
    assert types("2019-01-01") == ["Preempt", "Terminate", "Reboot"]
    status, body = _raw_get(replay.port, "/metadata/scheduledevents?api-version=2017-03-01")
    assert status == 200
    assert json.loads(body)["Events"][0]["Resources"] == ["_spot-1"]  # D7
    with ScheduledEventsClient(replay.url, api_version="2017-08-01") as client:
        assert [e.event_type for e in client.get().events] == [EventType.REBOOT]


def test_a_version_that_cannot_be_rendered_is_refused_with_why(
    tmp_path: Path, start_replay: Any
) -> None:
    """Recorded at 2017-03-01 only: no Description, EventSource or Preempt to render."""
    event = {k: v for k, v in _event("R", "Reboot", "_spot-1").items() if k[0] != "D"}
    del event["EventSource"]
    path = _recording(tmp_path / "old.jsonl", "2017-03-01", [event])
    replay = start_replay(str(path), "--rate-limit", "0")
    refused = replay.get(api_version="2019-08-01")
    assert refused.status_code == 400
    message = refused.json()["error"]
    assert message.startswith("this replay cannot render api-version 2019-08-01")
    assert "the recording holds 2017-03-01" in message and "Description" in message
    assert replay.get(api_version="2017-11-01").status_code == 400  # no Preempt recorded
    same = replay.get(api_version="2017-08-01").json()
    assert same["Events"][0]["Resources"] == ["spot-1"]  # the underscore is 2017-03-01's
    with (
        ScheduledEventsClient(replay.url, api_version="2020-07-01") as client,
        pytest.raises(EndpointError, match="cannot render api-version 2020-07-01"),
    ):
        client.get()


def test_rate_limit_and_instance_text_rules_as_serve(start_replay: Any) -> None:
    replay = start_replay("--example", "contract")
    url = replay.url + "/metadata/scheduledevents?api-version=2020-07-01"
    began = time.monotonic()
    with httpx.Client(headers={"Metadata": "true"}, trust_env=False) as http:
        answers = [http.get(url) for _ in range(30)]
    elapsed = time.monotonic() - began
    ok = [a for a in answers if a.status_code == 200]
    limited = [a for a in answers if a.status_code == 429]
    assert len(ok) + len(limited) == 30 and answers[0].status_code == 200
    assert len(ok) <= 5 + 5 * elapsed + 1  # 5 banked, 5 a second (R8)
    assert limited[0].json() == {"error": "Too many requests"}
    time.sleep(1.2)  # the bucket refills (5 a second)
    status, body = _raw_get(replay.port, "/metadata/instance/compute?api-version=2021-02-01"
                            "&format=text")  # fmt: skip
    assert (status, json.loads(body)) == (
        400,
        {"error": "Bad request. Format text is only for leaf nodes"},
    )
    status, body = _raw_get(
        replay.port, "/metadata/instance/compute/name?api-version=2021-02-01&format=text"
    )
    assert (status, body) == (200, b"myvm")


def test_notbefore_is_shifted_to_the_clients_clock_by_default(start_replay: Any) -> None:
    """Default scale 60 for the capture: its 15 minutes' notice is 15 s ahead of now."""
    replay = start_replay("--example", "contract", "--rate-limit", "0")
    for version in ("2020-07-01", "2019-08-01", "2017-03-01"):
        doc = _wait_for(replay, 7, version)
        not_before = parsedate_to_datetime(doc["Events"][0]["NotBefore"]).timestamp()
        assert 5 < not_before - time.time() <= 15.5, version


def _replay_fails(path: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "forewarn", "replay", str(path), "--imds-bind", "127.0.0.1:0",
         *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    return line


def test_a_body_nested_100k_deep_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text('{"t": 1, "body": ' + "[" * 100_000 + "]" * 100_000 + "}\n", "utf-8")
    line = _replay_fails(path)
    assert (
        line
        == f"forewarn: error: {path}, line 1: nested too deeply to be a Scheduled Events document"
    )
    path.write_text(
        '{"t": 1, "body": {"DocumentIncarnation": 1, "Events": [{"EventId": "A", "x": '
        + "[" * 100_000
        + "]" * 100_000
        + "}]}}\n",
        "utf-8",
    )
    assert "line 1: nested too deeply" in _replay_fails(path)


def test_a_notbefore_in_year_9999_with_shifted_times_is_one_line(
    tmp_path: Path, start_replay: Any
) -> None:
    event = _event("R", "Reboot")
    event["NotBefore"] = "Fri, 31 Dec 9999 23:59:59 GMT"
    path = _recording(tmp_path / "far.jsonl", "2020-07-01", [event])
    path.write_text(path.read_text("utf-8").replace('"t": 0', '"t": 1474308827'), "utf-8")
    line = _replay_fails(path)
    assert line.startswith(f"forewarn: error: {path}, line 1: NotBefore ")
    assert line.endswith("falls after year 9999; replay it with --recorded-times")
    replay = start_replay(str(path), "--recorded-times", "--rate-limit", "0")
    assert replay.get().json()["Events"][0]["NotBefore"] == "Fri, 31 Dec 9999 23:59:59 GMT"


def test_a_document_without_events_is_served_at_every_version() -> None:
    """Recorded at 2017-03-01 only (as ``forewarn conformance`` records the versions one
    at a time), an empty document is what every version shows until the next one."""
    from forewarn.contract import lookup_version
    from forewarn.replay import parse_recording
    from forewarn.replay.versions import renderable_frames

    recording = parse_recording(
        '{"t": 1, "vm": "a", "api_version": "2017-03-01", "incarnation": 1, '
        '"body": {"DocumentIncarnation": 1, "Events": []}}\n'
        '{"t": 2, "vm": "a", "api_version": "2020-07-01", "incarnation": 2, "body": '
        '{"DocumentIncarnation": 2, "Events": [{"EventId": "' + FREEZE + '", "EventStatus": '
        '"Started", "EventType": "Preempt", "ResourceType": "VirtualMachine", "Resources": '
        '["a"], "NotBefore": "", "Description": "", "EventSource": "Platform", '
        '"DurationInSeconds": -1}]}}\n',
        "kit.jsonl",
    )
    _, frames = recording.for_vm("a")
    newest, oldest = lookup_version("2020-07-01"), lookup_version("2017-03-01")
    assert newest is not None and oldest is not None
    shown = renderable_frames(frames, newest)
    assert [(r.frame.t, json.loads(r.body)["DocumentIncarnation"]) for r in shown] == [
        (1, 1), (2, 2)]  # fmt: skip
    # the Preempt is newer than 2017-03-01 (D5): that version sees no event
    assert [json.loads(r.body) for r in renderable_frames(frames, oldest)] == [
        {"DocumentIncarnation": 1, "Events": []},
        {"DocumentIncarnation": 2, "Events": []},
    ]


def test_paths_are_routed_on_their_segments_as_serve_does(start_replay: Any) -> None:
    """An encoded ``/`` or ``..`` is no separator (404, never another node); an encoded
    letter is decoded, segment by segment, as the endpoint's listener does."""
    replay = start_replay("--example", "contract")
    version = "api-version=2021-02-01&format=text"
    for path in ("compute%2fname", "compute/%2e%2e/compute/name", "compute%5cname"):
        status, body = _raw_get(replay.port, f"/metadata/instance/{path}?{version}")
        assert (status, json.loads(body)) == (404, {"error": "Not found"}), path
    status, body = _raw_get(replay.port, f"/metadata/instance/compute/n%61me?{version}")
    assert (status, body) == (200, b"myvm")
