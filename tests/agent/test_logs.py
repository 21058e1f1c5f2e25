"""The agent's log lines: JSON objects (the bound fields, the call's, then event, level,
timestamp) or console lines, filtered by level, one line per call whatever a field holds."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from forewarn.agent import logs

STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z")


def calls(log: Any) -> None:
    log.info("agent starting", endpoint="http://127.0.0.1:1", dry_run=False, metrics=None,
             rules=1, restored_events=0)  # fmt: skip
    event = log.bind(vm="web-0").bind(event_id="E1", rule="rules[0]")
    event.info("event seen", type="Reboot", resources=["web-0", "wéb-1"], approval="solo")
    event.warning("50% done; retrying", error='HTTP 503 "busy"\nnext line', seconds=1.5)
    event.error("event flow failed", error=ValueError("bad"), path=Path("/x"))
    event.info("rebound", vm="web-1", rule="other")  # a call's field replaces a bound one
    event.debug("below the level")


@pytest.fixture
def configure() -> Iterator[Callable[..., None]]:
    before = logs._sink
    yield logs.configure_logging
    logs._sink = before


@pytest.mark.parametrize(("level", "count"), [("info", 5), ("debug", 6), ("error", 1)])
def test_json_lines_hold_every_field_at_or_above_the_level(
    configure: Callable[..., None], level: str, count: int
) -> None:
    out = io.StringIO()
    configure("json", level, out)
    calls(logs.logger())
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(lines) == count
    assert all(STAMP.fullmatch(line["timestamp"]) for line in lines)
    by_event = {line["event"]: line for line in lines}
    if level == "error":
        assert list(by_event) == ["event flow failed"]
    else:
        seen = by_event["event seen"]
        assert seen["resources"] == ["web-0", "wéb-1"] and seen["vm"] == "web-0"
        assert by_event["50% done; retrying"]["error"] == 'HTTP 503 "busy"\nnext line'
        assert by_event["rebound"]["vm"] == "web-1" and by_event["rebound"]["rule"] == "other"
        assert by_event["agent starting"]["metrics"] is None
    failed = by_event["event flow failed"]
    assert (failed["error"], failed["path"]) == ("ValueError('bad')", "PosixPath('/x')")
    assert failed["level"] == "error"


def test_a_json_line_holds_the_fields_in_order(configure: Callable[..., None]) -> None:
    out = io.StringIO()
    configure("json", "info", out)
    logs.logger(vm="web-0").bind(event_id="E1").warning("approved", seconds=0.5, vm="web-1")
    line = json.loads(out.getvalue())
    assert list(line) == ["vm", "event_id", "seconds", "event", "level", "timestamp"]
    assert line["vm"] == "web-1" and line["level"] == "warning" and line["event"] == "approved"


def test_console_lines(configure: Callable[..., None]) -> None:
    out = io.StringIO()
    configure("console", "info", out)
    logs.logger(vm="web-0").info("identity known", rules=1)
    logs.logger().debug("not shown")
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\dT[\d:.]+Z \[info\s*\] identity known\s+rules=1 vm=web-0\n", out.getvalue()
    ), out.getvalue()
