"""``forewarn replay``: the shipped capture of the contract's payloads, the endpoint's
request rules, approvals, NotBefore shifting, and recordings that cannot be replayed."""

from __future__ import annotations

import asyncio
import time
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from forewarn.cli import main
from forewarn.client import (
    AsyncScheduledEventsClient,
    Document,
    EventStatus,
    EventType,
    ScheduledEventsClient,
)
from forewarn.replay import (
    RecordingError,
    captured_text,
    parse_recording,
    read_recording,
    shift_not_before,
)

FREEZE = "602D9444-D2CD-49C7-8624-8643E7171297"
REBOOT = "F020BA2E-3BC0-4C40-A10B-86575A9EABD5"


def test_the_shipped_capture_holds_the_contracts_payloads() -> None:
    recording = parse_recording(captured_text("contract"), "capture contract")
    name, frames = recording.for_vm(None)
    assert name == "myvm"
    latest = [f for f in frames if f.api_version == "2020-07-01"]
    assert [f.incarnation for f in latest] == list(range(6, 13))
    scheduled = latest[1]
    assert scheduled.body.startswith(b'{"DocumentIncarnation":7,"Events":[{"EventId":')
    [event] = scheduled.document.events
    assert (event.event_type, event.status) == ("Freeze", "Scheduled")
    assert event.not_before is not None
    assert f"{event.not_before:%a, %d %b %Y %H:%M:%S}" == "Mon, 19 Sep 2016 18:29:47"
    assert event.description == "Host server is undergoing maintenance."
    assert scheduled.t == event.not_before.timestamp() - 15 * 60  # 15 minutes' notice
    oldest = [f for f in frames if f.api_version == "2017-03-01"]
    assert oldest[1].document.events[0].resources == ("_myvm",)
    assert b"EventSource" not in oldest[1].body


Seen = list[tuple[int, tuple[tuple[str, EventType, EventStatus], ...]]]


def _events(doc: Document) -> tuple[int, tuple[tuple[str, EventType, EventStatus], ...]]:
    return doc.incarnation, tuple((e.event_id, e.event_type, e.status) for e in doc.events)


def _watch_blocking(url: str) -> Seen:
    seen: Seen = []
    with ScheduledEventsClient(url) as client:
        assert client.instance().compute_name == "myvm"
        for change in client.watch(interval=0.02):
            seen.append(_events(change.document))
            if change.document.incarnation == 12:
                break
    return seen


async def _watch_async(url: str) -> Seen:
    seen: Seen = []
    async with AsyncScheduledEventsClient(url) as client:
        assert (await client.instance()).compute_name == "myvm"
        async for change in client.watch(interval=0.02):
            seen.append(_events(change.document))
            if change.document.incarnation == 12:
                break
    return seen


@pytest.mark.parametrize("twin", ["blocking", "async"])
def test_a_client_watches_the_capture_go_by(start_replay: Any, twin: str) -> None:
    """The capture at scale 2000 (6,060 s in 3 s), as each of forewarn's own clients sees
    it (the VM commands' blocking one, the agent's async one: each its own HTTP/1.1)."""
    replay = start_replay("--example", "contract", "--time-scale", "2000", "--start",
                          "first-request", "--rate-limit", "0")  # fmt: skip
    if twin == "blocking":
        seen = _watch_blocking(replay.url)
    else:
        seen = asyncio.run(_watch_async(replay.url))
    assert seen[0] == (6, ())
    assert seen[-1] == (12, ())
    expected = {
        7: ((FREEZE, EventType.FREEZE, EventStatus.SCHEDULED),),
        8: ((FREEZE, EventType.FREEZE, EventStatus.STARTED),),
        9: (),
        10: ((REBOOT, EventType.REBOOT, EventStatus.SCHEDULED),),
        11: ((REBOOT, EventType.REBOOT, EventStatus.STARTED),),
    }
    for incarnation, events in seen[1:-1]:
        assert expected[incarnation] == events
    assert [n for n, _ in seen] == sorted(n for n, _ in seen)


def test_the_endpoints_rules_hold_in_a_replay(start_replay: Any) -> None:
    replay = start_replay(
        "--example", "contract", "--time-scale", "0.001", "--rate-limit", "0"
    )  # stays on 6
    ok = replay.get()
    assert ok.status_code == 200
    assert ok.content == b'{"DocumentIncarnation":6,"Events":[]}'
    assert ok.headers["etag"] == '"6"'
    assert ok.headers["content-type"] == "application/json; charset=utf-8"
    assert replay.get(**{"If-None-Match": '"6"'}).status_code == 304
    assert replay.get(**{"If-None-Match": '"5"'}).status_code == 200
    missing = replay.get(api_version=None)
    assert missing.status_code == 400
    assert missing.json()["error"].startswith("Bad request. api-version was not specified")
    assert replay.get(api_version="latest").status_code == 400
    assert replay.get(Metadata="false").json() == {
        "error": "Bad request. Required metadata header not specified"
    }
    assert replay.get(**{"X-Forwarded-For": "10.0.0.1"}).status_code == 400
    assert replay.post({"StartRequests": [{"EventId": FREEZE}]}).status_code == 400  # not shown
    assert replay.post({"nope": 1}).json() == {"error": "StartRequests is missing"}


def test_approvals_are_checked_and_printed_but_change_nothing(start_replay: Any) -> None:
    replay = start_replay(
        "--example", "contract", "--time-scale", "30", "--linger", "0.5", "--rate-limit", "0"
    )
    deadline = time.monotonic() + 30
    while replay.get().json()["DocumentIncarnation"] < 7:  # 60 s at scale 30: 2 s
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert replay.post({"StartRequests": [{"EventId": FREEZE.lower()}]}).status_code == 200
    assert replay.get().json()["Events"][0]["EventStatus"] == "Scheduled"  # a replay is fixed
    replay.proc.terminate()
    lines = replay.finish()
    assert f"replay: myvm approved {FREEZE.lower()} (incarnation 7)" in lines
    assert any(
        line == "replay: +60.0s incarnation 7 [2020-07-01]: Freeze Scheduled (myvm) "
        "NotBefore 18:29:47"
        for line in lines
    )


def test_shift_times_keeps_notice_ahead_of_the_clients_clock(start_replay: Any) -> None:
    """At scale 60, the 15 minutes' notice becomes 15 s ahead of now."""
    replay = start_replay(
        "--example", "contract", "--time-scale", "60", "--shift-times", "--rate-limit", "0"
    )
    deadline = time.monotonic() + 30
    while not (doc := replay.get().json())["Events"]:  # the Freeze comes after 1 s
        assert time.monotonic() < deadline
        time.sleep(0.05)
    not_before = parsedate_to_datetime(doc["Events"][0]["NotBefore"]).timestamp()
    assert 5 < not_before - time.time() <= 15.5


def test_a_date_the_wire_model_keeps_as_text_is_replayed_as_recorded() -> None:
    """Real payloads may carry dates no parser knows; the wire model keeps them in
    ``extra``, so the recording loads and the replay serves them unshifted."""
    body = (
        b'{"DocumentIncarnation":2,"Events":[{"EventId":"A","NotBefore":"next tuesday"},'
        b'{"EventId":"B","NotBefore":"Mon, 19 Sep 2016 18:29:47 GMT"}]}'
    )
    line = '{"t": 1, "body": ' + body.decode() + "}\n"
    (frame,) = parse_recording(line, "odd").for_vm(None)[1]
    assert frame.document.events[0].extra == {"NotBefore": "next tuesday"}
    shifted = msgspec.json.decode(shift_not_before(body, lambda t: t + 3600))
    assert [e["NotBefore"] for e in shifted["Events"]] == [
        "next tuesday",
        "Mon, 19 Sep 2016 19:29:47 GMT",
    ]


def test_each_line_must_be_a_document_or_a_count(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(
        '# a comment\n\n{"t": 1, "body": {"DocumentIncarnation": 1, "Events": []}}\n'
        '{"t": 2, "body": {"DocumentIncarnation": 2, "Events": "none"}}\n',
        "utf-8",
    )
    with pytest.raises(RecordingError) as info:
        read_recording(path)
    assert str(info.value) == (
        f"{path}, line 4: body is not a Scheduled Events document: Events must be a list"
    )
    path.write_text('{"t": "soon", "body": {}}\n', "utf-8")
    with pytest.raises(RecordingError, match=r"line 1: Expected `float`, got `str` - at `\$.t`"):
        read_recording(path)
    path.write_text('{"t": 1, "vm": "a"}\n', "utf-8")
    with pytest.raises(RecordingError, match="line 1: neither a body, a count nor an exchange"):
        read_recording(path)


def test_a_recording_of_several_vms_needs_vm(tmp_path: Path, start_replay: Any) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(
        '{"t": 1, "vm": "a", "body": {"DocumentIncarnation": 1, "Events": []}}\n'
        '{"t": 1, "vm": "b", "body": {"DocumentIncarnation": 1, "Events": []}}\n'
        '{"t": 2, "vm": "a", "api_version": "2020-07-01", "incarnation": 1, "served": 9}\n',
        "utf-8",
    )
    recording = read_recording(path)
    with pytest.raises(RecordingError, match=r"holds documents of 2 VMs \(a, b\); choose one"):
        recording.for_vm(None)
    with pytest.raises(RecordingError, match="has no documents of VM 'c'; it has a, b"):
        recording.for_vm("c")
    assert [f.t for f in recording.for_vm("A")[1]] == [1.0]  # the count line is no document


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        ([], 2, "give a FILE to replay, or --example NAME (not both)"),
        (["missing.jsonl"], 1, "cannot read missing.jsonl: No such file or directory"),
        (["--example", "contract", "--vm", "other"], 1, "has no documents of VM 'other'"),
        (["--example", "contract", "--time-scale", "0"], 2, "0.0 is not a positive number"),
        (["--example", "contract", "--imds-bind", "nowhere"], 1, "must look like HOST:PORT"),
    ],
)
def test_replay_mistakes_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], code: int, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["replay", *args])
    assert result.exit_code == code
    [line] = result.output.splitlines()
    assert line.startswith("forewarn: error: ")
    assert message in line
