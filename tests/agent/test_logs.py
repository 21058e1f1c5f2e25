"""The agent's JSON log lines are the ones structlog wrote, byte for byte (issue 31).

``forewarn.agent.logs`` writes them itself, so an idle agent does not hold structlog;
each line here is compared with the one structlog's pipeline of before (add_log_level,
an ISO UTC TimeStamper, JSONRenderer, PrintLogger) writes for the same calls, the
timestamp aside (each pipeline reads the clock itself): its form is held instead.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from forewarn.agent import logs

STAMP = re.compile(r'"timestamp": "(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z)"')


class Shown:
    def __structlog__(self) -> str:
        return "shown its own way"


def calls(log: Any) -> None:
    """The same calls, made on either logger."""
    log.info("agent starting", endpoint="http://127.0.0.1:1", dry_run=False, metrics=None,
             rules=1, restored_events=0)  # fmt: skip
    event = log.bind(vm="web-0").bind(event_id="E1", rule="rules[0]")
    event.info("event seen", type="Reboot", resources=["web-0", "wéb-1"], approval="solo")
    event.warning("50% done; retrying", error='HTTP 503 "busy"\nnext line', seconds=1.5)
    event.error("event flow failed", error=ValueError("bad"), path=Path("/x"), own=Shown())
    event.info("rebound", vm="web-1", rule="other")  # a call's field replaces a bound one
    event.debug("below the level")


def structlog_lines(level: int) -> str:
    """The lines structlog's configuration of before writes for ``calls``."""
    stream = io.StringIO()
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(stream),
        cache_logger_on_first_use=False,
    )
    calls(structlog.get_logger("forewarn.agent").bind())
    return stream.getvalue()


@pytest.fixture
def configure() -> Iterator[Callable[..., None]]:
    yield logs.configure_logging
    logs._sink = None
    structlog.reset_defaults()


@pytest.mark.parametrize(("level", "number"), [("info", 20), ("debug", 10), ("error", 40)])
def test_json_lines_are_structlogs_byte_for_byte(
    configure: Callable[..., None], level: str, number: int
) -> None:
    ours = io.StringIO()
    configure("json", level, ours)
    calls(logs.logger())
    theirs = structlog_lines(number)
    assert STAMP.sub("T", ours.getvalue()) == STAMP.sub("T", theirs)
    lines = ours.getvalue().splitlines()
    assert len(lines) == {"info": 5, "debug": 6, "error": 1}[level]
    assert all(STAMP.search(line) for line in lines)


def test_a_json_line_holds_the_fields_in_structlogs_order(configure: Callable[..., None]) -> None:
    out = io.StringIO()
    configure("json", "info", out)
    logs.logger(vm="web-0").bind(event_id="E1").warning("approved", seconds=0.5, vm="web-1")
    line = json.loads(out.getvalue())
    assert list(line) == ["vm", "event_id", "seconds", "event", "level", "timestamp"]
    assert line["vm"] == "web-1" and line["level"] == "warning" and line["event"] == "approved"


def test_console_lines_are_still_structlogs_renderer(configure: Callable[..., None]) -> None:
    out = io.StringIO()
    configure("console", "info", out)
    logs.logger(vm="web-0").info("identity known", rules=1)
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\dT[\d:.]+Z \[info\s*\] identity known\s+rules=1 vm=web-0\n", out.getvalue()
    ), out.getvalue()
