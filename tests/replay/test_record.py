"""``forewarn serve --record``: a line when a VM's document changes, with how often the
previous one was served; and what the file holds replays as it was served."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from forewarn.cli import main
from tests.support.serverproc import VIRTUAL, ServerProcess

WEB_0, WEB_3 = "127.1.0.1", "127.1.0.4"
JSON = {"Content-Type": "application/json"}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def _drive(server: ServerProcess) -> dict[str, Any]:
    """web-0 and web-3 poll through a user reboot of web-0 on the virtual clock; returns
    the bodies web-0 was served, by incarnation, and the clock's start."""
    t0 = server.control("GET", "/api/v1/clock").json()["now"]
    bodies: dict[int, bytes] = {}

    def poll(address: str, times: int = 1, **kwargs: Any) -> None:
        for _ in range(times):
            response = server.imds(vm_address=address, **kwargs)
            assert response.status_code in (200, 304), response.text
            if response.status_code == 200 and address == WEB_0:
                bodies.setdefault(response.json()["DocumentIncarnation"], response.content)

    def advance(seconds: float) -> None:
        server.control("POST", "/api/v1/clock/advance", json={"seconds": seconds}, headers=JSON)

    poll(WEB_0, 3)
    poll(WEB_3)
    advance(60)
    op = server.control(
        "POST", "/api/v1/operations", json={"kind": "user-reboot", "target": "web-0"}, headers=JSON
    ).json()
    poll(WEB_0, 2)
    advance(100)
    poll(WEB_0, headers={"If-None-Match": '"2"'})  # a 304 is a serving too
    poll(WEB_0, api_version="2019-01-01")  # another api-version: another document
    event = op["event_ids"][0]
    server.control("POST", f"/api/v1/events/{event}/approve", json={}, headers=JSON)
    poll(WEB_0)
    advance(700)  # the reboot is over (10 min Started): the event is gone
    poll(WEB_0)
    return {"t0": t0, "bodies": bodies}


def test_a_line_per_change_of_document_and_the_count_of_servings(
    start_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    record = tmp_path / "served.jsonl"
    server = start_server([*VIRTUAL, "--record", str(record)])
    driven = _drive(server)
    assert server.kill(signal.SIGTERM) == 0
    t0, bodies = driven["t0"], driven["bodies"]
    lines = _lines(record)
    web0 = [
        (round(x["t"] - t0), x["api_version"], x["incarnation"], x.get("served", "doc"))
        for x in lines
        if x["vm"] == "web-0"
    ]
    assert web0 == [
        (0, "2020-07-01", 1, "doc"),
        (60, "2020-07-01", 1, 3),
        (60, "2020-07-01", 2, "doc"),
        (160, "2020-07-01", 2, 3),  # two 200s and a 304
        (160, "2019-01-01", 2, "doc"),
        (160, "2019-01-01", 2, 1),
        (160, "2020-07-01", 3, "doc"),
        (860, "2020-07-01", 3, 1),
        (860, "2020-07-01", 4, "doc"),
        (860, "2020-07-01", 4, 1),  # written as the server stops
    ]
    web3 = [(x["incarnation"], x.get("served", "doc")) for x in lines if x["vm"] == "web-3"]
    assert web3 == [(1, "doc"), (1, 1)]
    served = {
        x["incarnation"]: json.dumps(x["body"], separators=(",", ":")).encode()
        for x in lines
        if x["vm"] == "web-0" and "body" in x and x["api_version"] == "2020-07-01"
    }
    assert served == bodies  # the very bytes each VM got


def test_recording_replays_as_it_was_served(
    start_server: Callable[..., ServerProcess], start_replay: Any, tmp_path: Path
) -> None:
    record = tmp_path / "served.jsonl"
    server = start_server([*VIRTUAL, "--record", str(record)])
    bodies = _drive(server)["bodies"]
    server.kill(signal.SIGTERM)
    replay = start_replay(
        str(record),
        "--vm",
        "WEB-0",
        "--time-scale",
        "200",
        "--start",
        "first-request",
        "--rate-limit",
        "0",
        "--recorded-times",
    )
    seen = replay.watch(until=4)
    expected = [bodies[n] for n in (1, 2, 3, 4)]
    assert seen[0][1] == expected[0]  # the replay began with this client's first request
    assert seen[-1][1] == expected[-1]
    assert [b for b in expected if b in {body for _, body in seen}] == [b for _, b in seen]
    # 860 s of the recording at scale 200: the last document comes 4.3 s after the first.
    assert seen[-1][0] - seen[0][0] >= 860 / 200 - 0.25
    old = replay.get(api_version="2019-01-01").json()
    assert old["DocumentIncarnation"] == 4  # rendered from the 2020-07-01 documents
    assert "EventSource" not in json.dumps(old)


def test_record_is_a_serve_setting_from_flag_config_file_and_environment(tmp_path: Path) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text(f"record: {tmp_path / 'a.jsonl'}\n", "utf-8")
    runner = CliRunner()
    from_file = runner.invoke(main, ["serve", "--config", str(config), "--print-config"])
    assert f"record: {tmp_path / 'a.jsonl'}" in from_file.output
    env = {"FOREWARN_SERVE_RECORD": str(tmp_path / "b.jsonl")}
    from_env = runner.invoke(main, ["serve", "--print-config"], env=env)
    assert f"record: {tmp_path / 'b.jsonl'}" in from_env.output
    flag = runner.invoke(
        main, ["serve", "--config", str(config), "--record", "c.jsonl", "--print-config"], env=env
    )
    assert "record: c.jsonl" in flag.output
    assert "record: null" in runner.invoke(main, ["serve", "--print-config"]).output


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ("missing-dir/served.jsonl", "there is no directory missing-dir"),
        (".", "is a directory"),
    ],
)
def test_a_record_file_that_cannot_be_written_stops_serve_before_anything_is_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record: str, problem: str
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["serve", "--db", "x.db", "--record", record])
    assert result.exit_code in (1, 2)
    assert problem in result.output
    assert not (tmp_path / "x.db").exists()
    assert os.listdir(tmp_path) == []


def test_record_needs_a_single_worker() -> None:
    result = CliRunner().invoke(
        main,
        ["serve", "--store", "postgresql://x@127.0.0.1/x", "--workers", "2", "--record", "r"],
    )
    assert result.exit_code == 2
    assert "--record needs --workers 1" in result.output
