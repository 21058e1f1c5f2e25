"""Running handlers: limits from the deadline, results recorded, interrupted runs found."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import httpx
import structlog

from forewarn.agent.clock import AgentClock
from forewarn.agent.config_schema import AgentConfig, ExecSpec, OnCrash
from forewarn.agent.handler_runs import Services, run_handler, run_handlers
from forewarn.agent.handlers import ExecHandler
from forewarn.agent.httpserver import HealthServer
from forewarn.agent.metrics import AgentMetrics
from forewarn.agent.state import State
from tests.agent.helpers import event

NOW = datetime(2030, 1, 1, tzinfo=UTC).timestamp()


def services(**config: Any) -> Services:
    async def approve(event_id: str) -> None:
        raise AssertionError("nothing approves here")

    return Services(
        config=AgentConfig(**config),
        vm_name="web-0",
        clock=AgentClock(wall=lambda: NOW),  # wall time frozen; monotonic time real
        state=State(":memory:"),
        metrics=AgentMetrics(),
        handlers={},
        coordinator=None,
        approve=approve,
        log=structlog.get_logger().bind(),
    )


SLEEPER = ExecHandler("sleeper", ExecSpec(argv=["sleep", "30"], timeout=60))


async def test_a_handler_never_runs_past_not_before_minus_the_margin() -> None:
    svc = services(safety_margin=10.5)
    ev = event(not_before=NOW + 11)  # 0.5 s before the deadline (NotBefore: whole seconds)
    outcome = await run_handler(svc, ev, "prepare", 0, SLEEPER)
    assert (outcome.result, outcome.detail) == ("timeout", "still running after 0.5 s")
    run = svc.state.runs(ev.event_id, "prepare")[0]
    assert (run.result, run.handler, run.interrupted) == ("timeout", "sleeper", False)
    assert svc.metrics.handler_runs.labels("sleeper", "prepare", "timeout").value == 1


async def test_past_the_deadline_a_handler_gets_late_timeout() -> None:
    svc = services(safety_margin=10.0, late_timeout=0.3)
    outcome = await run_handler(svc, event(not_before=NOW - 60), "prepare", 0, SLEEPER)
    assert outcome.detail == "still running after 0.3 s"


async def test_recovery_has_no_deadline_only_the_handler_timeout() -> None:
    svc = services()
    quick = ExecHandler("quick", ExecSpec(argv=["true"], timeout=0.4))
    outcome = await run_handler(svc, event(not_before=NOW - 60), "recover", 0, quick)
    assert outcome.result == "ok"


async def test_interrupted_runs_are_retried_or_failed_per_rule() -> None:
    svc = services()
    ev = event()
    quick = ExecHandler("quick", ExecSpec(argv=["true"]))
    svc.state.seen(ev.event_id, vm_name="web-0", rule="r", ignored=False, event_type="Reboot",
                   event={}, at=NOW)  # fmt: skip
    svc.state.run_started(ev.event_id, "prepare", 0, "quick", NOW)  # as if the agent died
    outcomes = await run_handlers(svc, lambda: ev, "prepare", [(0, quick)], parallel=False,
                                  on_crash=OnCrash.FAIL, may_start=lambda: True)  # fmt: skip
    assert [(o.result, o.detail) for o in outcomes] == [
        ("crashed", "interrupted by a crash (attempt 1)")
    ]
    other = event("E2")
    svc.state.run_started(other.event_id, "prepare", 0, "quick", NOW)
    outcomes = await run_handlers(svc, lambda: other, "prepare", [(0, quick)], parallel=False,
                                  on_crash=OnCrash.RETRY, may_start=lambda: True)  # fmt: skip
    assert [o.result for o in outcomes] == ["ok"]
    assert svc.state.runs(other.event_id, "prepare")[0].attempt == 2


async def test_in_order_the_first_failure_stops_the_rest() -> None:
    svc = services()
    fail = ExecHandler("fail", ExecSpec(argv=["false"]))
    quick = ExecHandler("quick", ExecSpec(argv=["true"]))
    ev = event()
    outcomes = await run_handlers(svc, lambda: ev, "prepare", [(0, fail), (1, quick)],
                                  parallel=False, on_crash=OnCrash.RETRY,
                                  may_start=lambda: True)  # fmt: skip
    assert [o.handler for o in outcomes] == ["fail"]
    outcomes = await run_handlers(svc, lambda: event("E3"), "recover", [(0, fail), (1, quick)],
                                  parallel=False, on_crash=OnCrash.RETRY, may_start=lambda: True,
                                  stop_at_failure=False)  # fmt: skip
    assert [(o.handler, o.ok) for o in outcomes] == [("fail", False), ("quick", True)]


async def test_dry_run_runs_and_records_nothing() -> None:
    svc = services(dry_run=True)
    outcome = await run_handler(svc, event(), "prepare", 0, SLEEPER)
    assert outcome.result == "dry-run" and outcome.ok
    assert svc.state.runs(event().event_id, "prepare") == {}


async def test_the_health_listener() -> None:
    ready = [False]
    server = HealthServer(
        "127.0.0.1:0",
        metrics=lambda: b"forewarn_agent_ready 0.0\n",
        ready=lambda: (ready[0], "ready" if ready[0] else "the endpoint has not answered yet"),
        status=lambda: {"vm": "web-0", "events": []},
    )
    await server.start()
    base = f"http://127.0.0.1:{server.port}"
    async with httpx.AsyncClient(base_url=base, trust_env=False) as http:
        metrics = await http.get("/metrics")
        assert metrics.status_code == 200 and metrics.text == "forewarn_agent_ready 0.0\n"
        assert metrics.headers["content-type"].startswith("text/plain; version=")
        assert (await http.get("/healthz")).text == "ok\n"
        unready = await http.get("/readyz")
        assert (unready.status_code, unready.text) == (503, "the endpoint has not answered yet\n")
        ready[0] = True
        assert (await http.get("/readyz")).status_code == 200
        assert (await http.get("/status")).json() == {"vm": "web-0", "events": []}
        assert (await http.get("/nope")).status_code == 404
        assert (await http.post("/metrics")).status_code == 405
        head = await http.head("/metrics")
        assert head.status_code == 200 and head.content == b""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"nonsense\r\n\r\n")
    assert (await reader.read()).startswith(b"HTTP/1.1 400 Bad Request")
    writer.close()
    await server.close()
