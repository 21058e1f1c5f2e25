"""Running handlers: time limits from the deadline, results on disk, metrics and logs.

A handler's limit is its own ``timeout``, cut to the event's deadline (NotBefore minus
``safety_margin``); once the deadline has passed, handlers still run (a late drain beats
none) but for at most ``late_timeout`` seconds. The run's start is on disk before the
handler starts and its end before anyone acts on it, so a restart knows exactly which
handlers finished, and which a crash interrupted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from forewarn.agent.config_schema import OnCrash
from forewarn.agent.events import EventView
from forewarn.agent.handlers import Handler, HandlerContext, HandlerFailed
from forewarn.agent.handlers.process import KILL_GRACE
from forewarn.agent.orphans import alive, end_group, start_time
from forewarn.agent.services import Services

__all__ = ["Outcome", "Services", "deadline_of", "run_handler", "run_handlers"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one handler run ended: ``ok``, ``failed``, ``timeout``, ``crashed``, ``dry-run``."""

    handler: str
    result: str
    detail: str

    @property
    def ok(self) -> bool:
        return self.result in ("ok", "dry-run")


def deadline_of(event: EventView, margin: float) -> datetime | None:
    """NotBefore minus the safety margin (None when the event has no NotBefore)."""
    if event.not_before is None:
        return None
    return event.not_before - timedelta(seconds=margin)


def _limit(svc: Services, handler: Handler, deadline: datetime | None) -> float:
    if deadline is None:
        return handler.timeout
    left = svc.clock.seconds_until(deadline)
    if left <= 0:
        return min(handler.timeout, svc.config.late_timeout)
    return min(handler.timeout, left)


async def run_handler(
    svc: Services, event: EventView, phase: str, position: int, handler: Handler
) -> Outcome:
    """Run one handler under its limit and record it; cancellation leaves it unfinished."""
    log = svc.log.bind(event_id=event.event_id, handler=handler.name, phase=phase)
    deadline = deadline_of(event, svc.config.safety_margin) if phase == "prepare" else None
    limit = _limit(svc, handler, deadline)
    if svc.config.dry_run:
        log.info("dry run: would run handler", kind=handler.kind, timeout=round(limit, 3))
        svc.metrics.handler_runs.labels(handler.name, phase, "dry-run").inc()
        return Outcome(handler.name, "dry-run", "")
    attempt = svc.state.run_started(event.event_id, phase, position, handler.name, svc.clock.time())
    await svc.state.durable()  # on disk before the handler starts
    log.info("handler started", kind=handler.kind, attempt=attempt, timeout=round(limit, 3))
    started = svc.clock.monotonic()
    ctx = HandlerContext(
        event=event,
        vm_name=svc.vm_name,
        phase=phase,
        deadline=deadline,
        expires=started + limit,
        clock=svc.clock,
        on_process=lambda pid: svc.state.run_process(
            event.event_id, phase, position, pid, start_time(pid)
        ),
    )
    try:
        detail = await asyncio.wait_for(handler.run(ctx), limit)
        result = "ok"
    except TimeoutError:
        result, detail = "timeout", f"still running after {limit:.1f} s"
    except HandlerFailed as exc:
        result, detail = "failed", str(exc)
    except asyncio.CancelledError:
        log.warning("handler abandoned", seconds=round(svc.clock.monotonic() - started, 3))
        raise
    except Exception as exc:  # a handler bug must not take the agent down
        result, detail = "failed", f"{type(exc).__name__}: {exc}"
    seconds = svc.clock.monotonic() - started
    svc.state.run_finished(event.event_id, phase, position, result, detail, svc.clock.time())
    await svc.state.durable()  # on disk before anyone acts on the result
    svc.metrics.handler_runs.labels(handler.name, phase, result).inc()
    svc.metrics.handler_seconds.labels(handler.name, phase).observe(seconds)
    if result == "ok":
        log.info("handler succeeded", seconds=round(seconds, 3), detail=detail)
    else:
        log.warning("handler " + result, seconds=round(seconds, 3), detail=detail)
    return Outcome(handler.name, result, detail)


async def _previous(
    svc: Services, event: EventView, phase: str, position: int, handler: Handler, on_crash: OnCrash
) -> Outcome | None:
    """The recorded result of this run before a restart, or None to run it (again).

    An interrupted run whose process still runs (the agent was killed, not its handler)
    is ended first, so the retried handler never runs beside it."""
    run = svc.state.runs(event.event_id, phase).get(position)
    if run is None:
        return None
    log = svc.log.bind(event_id=event.event_id, handler=handler.name, phase=phase)
    if not run.interrupted:
        log.info("handler already ran before a restart", result=run.result)
        return Outcome(handler.name, run.result or "failed", run.detail or "")
    if run.pid is not None and alive(run.pid, run.pid_start or ""):
        log.warning("ending the handler process a crash left running", pid=run.pid)
        await end_group(run.pid, run.pid_start or "", KILL_GRACE)
    svc.metrics.handler_runs.labels(handler.name, phase, "crashed").inc()
    if on_crash == OnCrash.RETRY:
        log.warning(
            "handler was interrupted before it finished; running it again", attempt=run.attempt
        )
        return None
    log.warning(
        "handler was interrupted before it finished; counted as failed", attempt=run.attempt
    )
    detail = f"interrupted by a crash (attempt {run.attempt})"
    svc.state.run_finished(event.event_id, phase, position, "crashed", detail, svc.clock.time())
    await svc.state.durable()
    return Outcome(handler.name, "crashed", detail)


async def run_handlers(
    svc: Services,
    current: Callable[[], EventView],
    phase: str,
    steps: list[tuple[int, Handler]],
    *,
    parallel: bool,
    on_crash: OnCrash,
    may_start: Callable[[], bool],
    stop_at_failure: bool = True,
) -> list[Outcome]:
    """Run ``steps`` (position, handler) in order, or all at once when ``parallel``.

    In order, the first failure stops the rest (``stop_at_failure``): later handlers may
    rely on earlier ones. ``may_start`` is asked before each start; when it says no, the
    remaining handlers are not started (the event went Started, or the agent stops).
    """

    async def one(position: int, handler: Handler) -> Outcome:
        previous = await _previous(svc, current(), phase, position, handler, on_crash)
        if previous is not None:
            return previous
        return await run_handler(svc, current(), phase, position, handler)

    if parallel:
        todo = [(p, h) for p, h in steps]
        if not todo or not may_start():
            return []
        return list(await asyncio.gather(*(one(p, h) for p, h in todo)))
    outcomes: list[Outcome] = []
    for position, handler in steps:
        if not may_start():
            break
        outcome = await one(position, handler)
        outcomes.append(outcome)
        if not outcome.ok and stop_at_failure:
            break
    return outcomes
