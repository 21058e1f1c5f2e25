"""One event's life in the agent: prepare, approve, wait for it to leave, recover.

The daemon creates a flow for each new event a rule took and feeds it every later view
of the event (``update``) and its departure (``gone``). Each step first asks the state
file whether it already happened, so a flow restarted after a crash resumes where it
stopped and never repeats a finished handler or an approval.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TypeVar

from forewarn.agent.approval import GroupState, Step, group, plan
from forewarn.agent.config_schema import Approval
from forewarn.agent.coordination import Claim, CoordinationError, Vote
from forewarn.agent.events import EventView, wire_event
from forewarn.agent.handler_runs import Outcome, Services, run_handlers
from forewarn.agent.rules import Decision
from forewarn.agent.text import one_line
from forewarn.client.errors import BadRequestError

__all__ = ["EventFlow", "FlowStopped"]

_T = TypeVar("_T")

#: The state file's note while an approval POST is out (a restart never sends another).
SENT = "approval sent (no answer yet)"


class FlowStopped(Exception):
    """The agent is shutting down: the flow ends here and resumes after a restart."""


class EventFlow:
    """Drives one event; ``run()`` is its task."""

    def __init__(
        self,
        svc: Services,
        event: EventView,
        decision: Decision,
        first_seen: float,
        *,
        started_when_seen: bool = False,
    ) -> None:
        self.svc = svc
        self.event = event
        self.decision = decision
        self.first_seen = first_seen
        self.log = svc.log.bind(event_id=event.event_id, rule=decision.rule)
        self.gone = False
        self.stopping = False
        self.busy = False
        #: The wait under way for news of the event (a future: 10,000 live events each
        #: holding an asyncio.Event and a wait_for task cost ~1.3 KB apiece).
        self._wake: asyncio.Future[None] | None = None
        self._preparing = False
        self._missed = False
        #: A rule may take events already Started when first seen; their handlers still run.
        self._started_first = started_when_seen

    # ------------------------------------------------------------ fed by the daemon

    @property
    def event_id(self) -> str:
        return self.event.event_id

    def started(self) -> bool:
        return str(self.event.status) == "Started"

    def update(self, event: EventView) -> None:
        """A newer view of the event (status, NotBefore may have changed)."""
        was_started = self.started()
        self.event = event
        if self.started() and not was_started:
            now = self.svc.clock.time()
            self.svc.state.mark(self.event_id, "started_seen_at", now)
            self.log.info("event started")
            if self._preparing:
                self._report_missed()
        self._changed()

    def _report_missed(self) -> None:
        if not self._missed:
            self._missed = True
            self.svc.state.mark(self.event_id, "missed_at", self.svc.clock.time())
            self.svc.metrics.missed.inc()
            self.log.warning("missed: the event started before its handlers were done")

    def left(self) -> None:
        """The event is no longer in the document (over, or canceled)."""
        if not self.gone:
            self.gone = True
            self.svc.state.mark(self.event_id, "gone_at", self.svc.clock.time())
            self.log.info("event left the document")
        self._changed()

    def stop(self) -> None:
        """Shutting down: finish what runs, start nothing new."""
        self.stopping = True
        self._changed()

    def _changed(self) -> None:
        """Wake the wait under way, if any (news while busy is read after, as before)."""
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    async def _wait_change(self, timeout: float | None) -> None:
        if self.stopping:  # stop() came while the flow was busy
            raise FlowStopped
        self._wake = asyncio.get_running_loop().create_future()
        try:
            if timeout is None:  # most live events: waiting, with no timer held
                await self._wake
            else:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout):
                        await self._wake
        finally:
            self._wake = None
        if self.stopping:
            raise FlowStopped

    # ------------------------------------------------------------ the flow

    async def run(self) -> None:
        try:
            ok, failure, decided = await self._prepare()
            if decided and not self.gone and not self.started():
                await self._approve(ok, failure)
            while not self.gone:
                await self._wait_change(None)
            await self._recover()
        except FlowStopped:
            self.log.info("flow paused by shutdown")

    def _may_start(self) -> bool:
        return not (self.stopping or self.gone or (self.started() and not self._started_first))

    async def _run_steps(self, steps: list[tuple[int, str]]) -> list[Outcome]:
        handlers = [(pos, self.svc.handlers[name]) for pos, name in steps]
        self.busy = True
        try:
            return await run_handlers(
                self.svc,
                lambda: self.event,
                "prepare",
                handlers,
                parallel=self.decision.parallel,
                on_crash=self.decision.on_crash,
                may_start=self._may_start,
            )
        finally:
            self.busy = False

    async def _prepare(self) -> tuple[bool, str, bool]:
        """Run the rule's handlers: (all succeeded, first failure, whether that settles it)."""
        svc, decision = self.svc, self.decision
        record = svc.state.event(self.event_id)
        if record is not None and record.handled_at is not None:
            ok = record.outcome == "ok"
            return ok, "" if ok else f"handlers {record.outcome} before a restart", True
        steps = list(enumerate(decision.handlers))
        receipt = [(p, n) for p, n in steps if svc.handlers[n].on_receipt]
        later = [(p, n) for p, n in steps if not svc.handlers[n].on_receipt]
        self._preparing = True
        try:
            outcomes = await self._run_steps(receipt)
            if all(o.ok for o in outcomes) and later:
                await self._wait_for_schedule()
                outcomes += await self._run_steps(later)
        finally:
            self._preparing = False
        if self.stopping:
            raise FlowStopped
        failed = next((o for o in outcomes if not o.ok), None)
        complete = len(outcomes) == len(steps)
        ok = failed is None and complete
        decided = complete or failed is not None  # else the event moved on before they ran
        if failed is not None:
            outcome, failure = (
                "failed",
                f"handler {failed.handler} {failed.result}: {failed.detail}",
            )
        elif not complete:
            outcome = "canceled" if self.gone else "missed"
            if not self.gone:
                self._report_missed()
            failure = f"the event {'left' if self.gone else 'started'} before its handlers ran"
        else:
            outcome, failure = "ok", ""
        svc.state.mark(self.event_id, "handled_at", svc.clock.time(), outcome)
        await svc.state.durable()  # on disk before the approval acts on it
        if self.event.not_before is not None and steps:
            svc.metrics.margin.observe(max(0.0, svc.clock.seconds_until(self.event.not_before)))
        self.log.info("handlers done", outcome=outcome, failure=failure or None)
        return ok, failure, decided

    async def _wait_for_schedule(self) -> None:
        """Sleep until ``act_minutes_before`` NotBefore (NotBefore may move meanwhile)."""
        minutes = self.decision.act_minutes_before
        if minutes is None:
            return
        logged = False
        while self._may_start():
            not_before = self.event.not_before
            if not_before is None:
                return
            wait = self.svc.clock.seconds_until(not_before - timedelta(minutes=minutes))
            if wait <= 0:
                return
            if not logged:
                self.log.info("handlers scheduled", start_in_seconds=round(wait, 3))
                logged = True
            await self._wait_change(wait)

    async def _approve(self, ok: bool, failure: str) -> None:
        svc, decision = self.svc, self.decision
        record = svc.state.event(self.event_id)
        if record is not None and record.approval == SENT and record.approved_at is None:
            self.log.warning(
                "the approval may have gone out before a restart; not sending another"
                " (the event starts at NotBefore at the latest)"
            )
            return
        if record is not None and (record.approved_at is not None or record.approval):
            return  # decided before a restart
        step = plan(decision.approval, ok, failure, self.event, svc.vm_name)
        if step.step == Step.SKIP:
            svc.state.note_approval(self.event_id, f"not approved: {one_line(step.reason)}")
            if decision.approval != Approval.NEVER:
                svc.metrics.approvals.labels(decision.approval.value, "declined").inc()
            self.log.info("not approving", reason=one_line(step.reason))
            return
        if step.step == Step.APPROVE:
            await self._send_approval()
            return
        await self._coordinate(step.ready, step.reason)

    async def _retrying(self, what: str, action: Callable[[], Awaitable[_T]]) -> _T | None:
        """Retry ``action`` every poll interval until it works or the event moves on."""
        interval = self.svc.config.poll_interval
        while True:
            try:
                return await action()
            except Exception as exc:
                kind = "coordination" if isinstance(exc, CoordinationError) else "approval"
                self.svc.metrics.errors.labels(kind).inc()
                self.log.warning(f"{what} failed; retrying", error=str(exc))
            await self._wait_change(interval)
            if self.gone or self.started():
                return None

    async def _send_approval(self, claimed: bool = False) -> None:
        """POST the approval, at most once even across crashes.

        A ``claimed`` (coordinated) approval first marks the group's claim done, so no
        other agent posts it; then the state file notes the POST before it goes out, so a
        restart never sends a second one (if it dies mid-POST, the event may start at
        NotBefore instead, as without an agent).
        """
        svc, mode = self.svc, self.decision.approval.value
        if svc.config.dry_run:
            self.log.info("dry run: would approve the event")
            svc.metrics.approvals.labels(mode, "dry-run").inc()
            return
        if self.gone or self.started():
            return
        if claimed:
            settled = await self._retrying("marking the claim done", self._settle)
            if not settled:
                if settled is not None:
                    self.log.warning("claim lost: another agent of the group approves")
                return
        svc.state.note_approval(self.event_id, SENT)
        await svc.state.durable()  # on disk before the POST goes out
        refused = ""

        async def approve() -> bool:
            nonlocal refused
            try:
                await svc.approve(self.event_id)
            except BadRequestError as exc:
                refused = str(exc)  # the event started or left meanwhile: nothing to approve
            return True

        self.busy = True
        try:
            done = await self._retrying("approval", approve)
        finally:
            self.busy = False
        if not done:
            self.log.info("the event started before the approval went through")
            return
        if refused:
            svc.state.note_approval(self.event_id, f"approval refused: {one_line(refused)}")
            self.log.info("the endpoint refused the approval", error=one_line(refused))
            return
        now = svc.clock.time()
        svc.state.mark(self.event_id, "approved_at", now, "approved")
        svc.metrics.approvals.labels(mode, "approved").inc()
        svc.metrics.detection_to_approval.observe(max(0.0, now - self.first_seen))
        self.log.info("approved", seconds_since_detection=round(now - self.first_seen, 3))

    async def _claim(self) -> Claim:
        coordinator, coordination = self.svc.coordinator, self.svc.config.coordination
        assert coordinator is not None and coordination is not None
        return await coordinator.claim(self.event_id, self.svc.vm_name, coordination.claim_lease)

    async def _settle(self) -> bool:
        coordinator = self.svc.coordinator
        assert coordinator is not None
        return await coordinator.settle(self.event_id, self.svc.vm_name)

    async def _approve_group(self) -> None:
        """The group is complete: whoever claims the approval posts it; the others watch."""
        waiting_for = ""
        while True:
            claim = await self._retrying("claiming the approval", self._claim)
            if claim is None:
                return
            if claim.ours or (claim.done and claim.holder == self.svc.vm_name):
                # (done by this VM, yet not noted as sent: it died before the POST went out)
                await self._send_approval(claimed=True)
                return
            if claim.done:
                by = claim.holder or "another agent"
                self.svc.state.note_approval(self.event_id, f"approved by {by}")
                self.log.info("the group's approval was posted", by=by)
                return
            if waiting_for != claim.holder:
                waiting_for = claim.holder
                self.log.info("another agent of the group approves", by=claim.holder)
            await self._wait_change(self.svc.config.poll_interval)
            if self.gone or self.started():
                return

    async def _coordinate(self, ready: bool, reason: str) -> None:
        svc = self.svc
        coordinator = svc.coordinator
        assert coordinator is not None  # config.check() requires [coordination]
        if svc.config.dry_run:
            self.log.info("dry run: would vote", ready=ready, reason=reason)
            svc.metrics.approvals.labels("coordinated", "dry-run").inc()
            return

        async def vote() -> dict[str, Vote]:
            return await coordinator.record(
                self.event_id, svc.vm_name, ready, reason, svc.clock.time()
            )

        votes = await self._retrying("recording the vote", vote)
        if votes is None:
            return
        self.log.info("vote recorded", ready=ready, reason=reason)
        if not ready:
            svc.state.note_approval(self.event_id, f"voted not ready: {reason}")
            svc.metrics.approvals.labels("coordinated", "declined").inc()
            return
        while True:
            state = group(self.event.resources, votes)
            if state.state == GroupState.COMPLETE:
                self.log.info("group complete", detail=state.detail)
                await self._approve_group()
                return
            if state.state == GroupState.BLOCKED:
                svc.state.note_approval(self.event_id, f"not approved: {one_line(state.detail)}")
                svc.metrics.approvals.labels("coordinated", "blocked").inc()
                self.log.warning("group will not be ready", detail=state.detail)
                return
            await self._wait_change(svc.config.poll_interval)
            if self.gone or self.started():
                self.log.info("the event moved on while the group waited", detail=state.detail)
                return
            fresh = await self._retrying("reading votes", lambda: coordinator.votes(self.event_id))
            if fresh is None:
                return
            votes = fresh

    async def _recover(self) -> None:
        svc = self.svc
        record = svc.state.event(self.event_id)
        if record is not None and record.recovered_at is not None:
            return
        acted = bool(svc.state.runs(self.event_id, "prepare")) or svc.config.dry_run
        if self.decision.recovery and acted:
            steps = [(p, svc.handlers[n]) for p, n in enumerate(self.decision.recovery)]
            self.busy = True
            try:
                outcomes = await run_handlers(
                    svc,
                    lambda: self.event,
                    "recover",
                    steps,
                    parallel=False,
                    on_crash=self.decision.on_crash,
                    may_start=lambda: not self.stopping,
                    stop_at_failure=False,
                )
            finally:
                self.busy = False
            if self.stopping and len(outcomes) < len(steps):
                raise FlowStopped
            result = "ok" if all(o.ok for o in outcomes) else "failed"
            svc.metrics.recoveries.labels(result).inc()
            self.log.info("recovery done", result=result)
        svc.state.mark(self.event_id, "recovered_at", svc.clock.time())
        if svc.coordinator is not None and self.decision.approval == Approval.COORDINATED:
            try:
                await svc.coordinator.forget(self.event_id)
            except CoordinationError as exc:
                self.log.info("could not drop the event's votes (they expire)", error=str(exc))

    def snapshot(self) -> dict[str, object]:
        """What /status shows of this flow."""
        return {
            "event": wire_event(self.event),
            "rule": self.decision.rule,
            "busy": self.busy,
            "gone": self.gone,
        }
