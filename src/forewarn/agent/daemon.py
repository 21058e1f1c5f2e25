"""The agent daemon: poll the endpoint, hand each event to its flow, serve health, stop cleanly.

One asyncio loop runs the watch of the document, one ``EventFlow`` task per event a rule
took, and the health/metrics listener. Endpoint errors never end the daemon: the watch
restarts after one poll interval, flows carry on, and ``/readyz`` says 503 until the
endpoint answers again.

Work per turn of the loop is bounded whatever the document holds: a document is taken
``PER_TURN`` events at a time by a task of its own (the watch keeps polling meanwhile,
and hands over only the newest document), the state file's writes of a turn share one
commit, and approvals share POSTs (``batching``), so /healthz, /readyz and SIGTERM are
answered while a document of 10,000 events is worked through.

An idle agent holds only what polling needs: the flows' modules load with the first
event a rule takes, a coordination backend only when a rule coordinates.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from forewarn.agent.batching import ApprovalBatcher
from forewarn.agent.clock import AgentClock
from forewarn.agent.config_schema import AgentConfig, Approval, OnDeleted, Shutdown
from forewarn.agent.events import EventView, stored_event, wire_event
from forewarn.agent.handlers import HandlerFailed, build_handlers
from forewarn.agent.heap import trim
from forewarn.agent.httpserver import HealthServer
from forewarn.agent.logs import logger
from forewarn.agent.metrics import AgentMetrics, NoMetrics
from forewarn.agent.rules import RuleBook
from forewarn.agent.sdnotify import notify, watchdog_interval
from forewarn.agent.services import Services
from forewarn.agent.state import EventRecord, State
from forewarn.client import (
    AsyncScheduledEventsClient,
    ClientError,
    Document,
    DocumentError,
    InvalidEndpoint,
    NotFoundError,
    resolve_endpoint,
)

if TYPE_CHECKING:
    from forewarn.agent.coordination import Coordinator
    from forewarn.agent.flow import EventFlow
    from forewarn.client import AsyncTransport, DocumentRecorder

__all__ = ["PER_TURN", "Agent", "AgentError"]

_T = TypeVar("_T")

#: Events of a document looked at per turn of the loop (then it answers others).
PER_TURN = 50


async def _in_turns(items: Iterable[_T]) -> AsyncIterator[_T]:
    """``items``, letting the loop turn after every ``PER_TURN`` of them."""
    for count, item in enumerate(items, 1):
        yield item
        if count % PER_TURN == 0:
            await asyncio.sleep(0)


class AgentError(Exception):
    """The agent cannot start (bad handler target, state file, listener address)."""


class Agent:
    """One VM's agent. ``run(stop)`` returns after ``stop`` is set and shutdown is done."""

    def __init__(
        self,
        config: AgentConfig,
        *,
        clock: AgentClock | None = None,
        transport: AsyncTransport | None = None,
    ) -> None:
        self.config = config
        self.clock = clock or AgentClock()
        self.metrics: AgentMetrics = AgentMetrics() if config.metrics_bind else NoMetrics()
        self.vm_name = ""
        self.log: Any = logger()
        self.rules = RuleBook(config)
        self._transport = transport
        self._flows: dict[str, EventFlow] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._ignored: set[str] = set()
        self._restored: dict[str, EventRecord] | None = None
        self._last_ok: float | None = None
        self._stopping = False
        self._said_deleted = False
        #: Why the endpoint's last answer was no document (HTML, garbage), until one is.
        self._bad_document: str | None = None
        self._recorder: DocumentRecorder | None = None
        self._approvals: ApprovalBatcher | None = None
        #: The newest document the reconciler has not taken yet, and its wake-up.
        self._latest: Document | None = None
        self._news = asyncio.Event()
        self.health: HealthServer | None = None
        self.endpoint = ""
        try:
            self.handlers = build_handlers(config)
        except HandlerFailed as exc:
            raise AgentError(f"handler: {exc}") from None

    # ------------------------------------------------------------ health

    def _answered(self, status: int | None) -> None:
        result = "error" if status is None else str(status)
        self.metrics.polls.labels(result).inc()
        if status is not None and (200 <= status < 300 or status == 304):
            self._last_ok = self.clock.monotonic()
            self.metrics.last_poll.set(self.clock.time())

    def readiness(self) -> tuple[bool, str]:
        """Ready while the VM's name is known and the endpoint answered lately."""
        if self._stopping:
            return False, "shutting down"
        if not self.vm_name:
            return False, "this VM's name is not known yet"
        if self._last_ok is None:
            return False, "the endpoint has not answered yet"
        if self._bad_document is not None:
            return False, f"the endpoint answers no scheduled-events document: {self._bad_document}"
        silent = self.clock.monotonic() - self._last_ok
        limit = max(5.0, 3 * self.config.poll_interval)
        if silent > limit:
            return False, f"no answer from the endpoint for {silent:.0f} s"
        return True, "ready"

    def status(self) -> dict[str, Any]:
        ready, why = self.readiness()
        return {
            "vm": self.vm_name,
            "ready": ready,
            "why": why,
            "dry_run": self.config.dry_run,
            "events": [flow.snapshot() for flow in self._flows.values()],
            "ignored": sorted(self._ignored),
        }

    # ------------------------------------------------------------ main

    def _client(self) -> AsyncScheduledEventsClient:
        try:
            url = resolve_endpoint(self.config.endpoint or None)
        except InvalidEndpoint as exc:
            raise AgentError(str(exc)) from None
        self.endpoint = url
        return AsyncScheduledEventsClient(
            url,
            api_version=self.config.api_version,
            transport=self._transport,
            local_address=None if self._transport else (self.config.local_address or None),
            observer=self._answered,
        )

    def _coordinator(self) -> Coordinator | None:
        uses = any(r.approval == Approval.COORDINATED for r in self.config.rules)
        if self.config.coordination is None or not uses:
            return None
        from forewarn.agent.coordination import connect

        backend = self.config.coordination.backend
        try:
            return connect(self.config.coordination)
        except ModuleNotFoundError as exc:  # the VM install leaves both drivers out
            raise AgentError(
                f"coordination backend {backend} needs the {exc.name} package: "
                f"install forewarn with its [{backend}] extra: "
                f"pip install '<its wheel or checkout>[{backend}]'"
            ) from None

    async def run(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set, then shut down by the configured policy."""
        config = self.config
        try:
            state = State(":memory:" if config.dry_run else config.state_path, group_commit=True)
        except Exception as exc:
            raise AgentError(str(exc)) from None
        self.metrics.ready.set_function(lambda: 1.0 if self.readiness()[0] else 0.0)
        self.metrics.active.set_function(lambda: float(len(self._flows)))
        if config.metrics_bind:
            self.health = HealthServer(
                config.metrics_bind, self.metrics.render, self.readiness, self.status
            )
            try:
                await self.health.start()
            except OSError as exc:
                state.close()
                why = os.strerror(exc.errno) if exc.errno else str(exc)
                raise AgentError(f"metrics_bind {config.metrics_bind}: {why}") from None
        try:
            coordinator = self._coordinator()  # connects on first use: nothing to close
            client = self._client()
            self._approvals = ApprovalBatcher(client.approve)
            if config.record:
                from forewarn.client import DocumentRecorder  # what replay plays, if asked

                try:
                    self._recorder = DocumentRecorder(config.record, config.api_version)
                except OSError as exc:
                    raise AgentError(f"record {config.record}: {exc.strerror or exc}") from None
        except AgentError:
            state.close()
            if self.health is not None:
                await self.health.close()
            raise
        self._restored = {r.event_id: r for r in state.events(open_only=True)}
        self.log.info(
            "agent starting",
            endpoint=self.endpoint,
            dry_run=config.dry_run,
            metrics=f"{self.health.host}:{self.health.port}" if self.health else None,
            rules=len(config.rules),
            restored_events=len(self._restored),
        )
        if not config.rules:
            self.log.warning("no rules: every event is only logged and ignored")
        poller = asyncio.create_task(self._main(client, state, coordinator))
        stopper = asyncio.create_task(stop.wait())
        pinger = asyncio.create_task(self._watchdog())
        await asyncio.wait({poller, stopper}, return_when=asyncio.FIRST_COMPLETED)
        self._stopping = True
        notify("STOPPING=1")
        stopper.cancel()
        failure = poller.exception() if poller.done() and not poller.cancelled() else None
        if failure is None:
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poller
        else:
            self.log.error("agent failed", error=f"{type(failure).__name__}: {failure}")
        await self._shutdown()
        await self._approvals.close()
        await client.aclose()
        if coordinator is not None:
            await coordinator.close()
        if self.health is not None:
            await self.health.close()
        pinger.cancel()
        state.close()
        if self._recorder is not None:
            self._recorder.close()
        self.log.info("agent stopped")
        if failure is not None:
            raise AgentError(f"{type(failure).__name__}: {failure}") from failure

    async def _deleted(self) -> bool:
        """The endpoint answers 404: the platform deleted this VM. Say so once, then exit
        (True) or idle, polling every minute until it answers again (``on_deleted``)."""
        if not self._said_deleted:
            self._said_deleted = True
            self.log.warning(
                "the platform deleted this VM (the endpoint answers 404)",
                action=self.config.on_deleted.value,
            )
        if self.config.on_deleted == OnDeleted.EXIT:
            return True
        await self.clock.sleep(max(60.0, self.config.poll_interval))
        return False

    async def _watchdog(self) -> None:
        """Ping systemd's watchdog while the event loop runs (a hung agent is restarted)."""
        interval = watchdog_interval()
        while interval is not None:
            notify("WATCHDOG=1")
            await self.clock.sleep(interval)

    async def _identify(self, client: AsyncScheduledEventsClient) -> str:
        """The VM's name: instance metadata's compute.name, else ``vm_name`` of the config."""
        while True:
            try:
                instance = await client.instance()
            except ClientError as exc:
                if self.config.vm_name:
                    self.log.info(
                        "instance metadata unavailable; using vm_name from the config",
                        error=str(exc),
                    )
                    return self.config.vm_name
                self.metrics.errors.labels("identity").inc()
                self.log.warning("cannot learn this VM's name yet", error=str(exc))
                await self.clock.sleep(self.config.poll_interval)
                continue
            name = instance.compute_name
            if self.config.vm_name and self.config.vm_name != name:
                self.log.warning(
                    "vm_name of the config differs from instance metadata; using instance metadata",
                    config=self.config.vm_name,
                    instance=name,
                )
            return name

    async def _main(
        self, client: AsyncScheduledEventsClient, state: State, coordinator: Coordinator | None
    ) -> None:
        self.vm_name = await self._identify(client)
        self.log = logger(vm=self.vm_name)
        self.metrics.info.labels(vm=self.vm_name).set(1)
        self.log.info("identity known")
        notify(f"READY=1\nSTATUS=watching the endpoint for {self.vm_name}")
        trim()  # start-up is over: what it freed goes back to the system
        assert self._approvals is not None
        svc = Services(
            config=self.config,
            vm_name=self.vm_name,
            clock=self.clock,
            state=state,
            metrics=self.metrics,
            handlers=self.handlers,
            coordinator=coordinator,
            approve=self._approvals.approve,
            log=self.log,
        )
        reconciler = asyncio.create_task(self._reconciler(svc), name="reconciler")
        try:
            await self._watch(client)
        finally:
            reconciler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reconciler

    async def _watch(self, client: AsyncScheduledEventsClient) -> None:
        """Poll until the VM is deleted (on_deleted = exit); each new document goes to
        the reconciler, which may still be at work on an older one."""
        interval = self.config.poll_interval
        recorder = self._recorder
        if recorder is not None:
            recorder.vm = self.vm_name
        while True:
            try:
                async for change in client.watch(interval, on_document=recorder):
                    if recorder is not None and recorder.error:
                        self.log.warning("recording failed", error=recorder.error)
                    self._bad_document = None
                    self._latest = change.document
                    self._news.set()
            except NotFoundError:
                if await self._deleted():
                    return
                continue
            except ClientError as exc:
                if isinstance(exc, DocumentError):  # 200, but HTML or garbage: not ready
                    self._bad_document = " ".join(str(exc).split())[:200]
                self.metrics.errors.labels("endpoint").inc()
                self.log.warning("endpoint error", status=exc.status, error=str(exc)[:300])
            except Exception as exc:  # never let one bad poll end the daemon
                self.metrics.errors.labels("internal").inc()
                self.log.error("poll failed", error=f"{type(exc).__name__}: {exc}")
            await self.clock.sleep(interval)

    # ------------------------------------------------------------ events

    async def _reconciler(self, svc: Services) -> None:
        """Reconcile the newest document, each in turn; a failed pass is tried again one
        poll interval later (unless a newer document came meanwhile)."""
        while True:
            await self._news.wait()
            self._news.clear()
            document, self._latest = self._latest, None
            if document is None:
                continue
            try:
                await self._reconcile(svc, document)
            except Exception as exc:  # never let one bad document end the daemon
                self.metrics.errors.labels("internal").inc()
                self.log.error("reconcile failed", error=f"{type(exc).__name__}: {exc}")
                await self.clock.sleep(self.config.poll_interval)
                if self._latest is None:
                    self._latest = document
                    self._news.set()

    async def _reconcile(self, svc: Services, document: Document) -> None:
        """Bring flows in line with the document: new, changed and departed events.

        ``PER_TURN`` events at a time, so the flows woken meanwhile run between them."""
        current: dict[str, EventView] = {e.event_id: e for e in document.events}
        restored, self._restored = self._restored or {}, None
        async for event_id, event in _in_turns(current.items()):
            flow = self._flows.get(event_id)
            if flow is not None:
                if flow.event != event:  # an unchanged event does not wake its flow
                    flow.update(event)
            elif event_id not in self._ignored:
                self._new(svc, event, restored.get(event_id))
        async for event_id, record in _in_turns(restored.items()):
            if event_id not in current:  # left while the agent was down
                if record.ignored:
                    svc.state.mark(event_id, "gone_at", self.clock.time())
                else:
                    self._start(svc, record, stored_event(record.event)).left()
        async for event_id in _in_turns([e for e in self._flows if e not in current]):
            flow = self._flows.get(event_id)
            if flow is not None:
                flow.left()
        async for event_id in _in_turns([e for e in self._ignored if e not in current]):
            self._ignored.discard(event_id)
            svc.state.mark(event_id, "gone_at", self.clock.time())

    def _new(self, svc: Services, event: EventView, record: EventRecord | None) -> None:
        if record is not None:
            if record.ignored:
                self._ignored.add(event.event_id)
                return
            self._start(svc, record, stored_event(record.event)).update(event)
            return
        decision = self.rules.decide(event, self.vm_name)
        now = self.clock.time()
        svc.state.seen(
            event.event_id,
            vm_name=self.vm_name,
            rule=decision.rule,
            ignored=decision.ignore,
            event_type=str(event.event_type),
            event=wire_event(event),
            at=now,
        )
        self.metrics.events_seen.labels(str(event.event_type), decision.rule).inc()
        log = self.log.bind(event_id=event.event_id, rule=decision.rule)
        if decision.ignore:
            self._ignored.add(event.event_id)
            log.info(
                "event ignored",
                type=str(event.event_type),
                status=str(event.status),
                resources=list(event.resources),
            )
            return
        log.info(
            "event seen",
            type=str(event.event_type),
            status=str(event.status),
            resources=list(event.resources),
            handlers=list(decision.handlers),
            approval=decision.approval.value,
        )
        record = svc.state.event(event.event_id)
        assert record is not None
        self._start(svc, record, event)

    def _start(self, svc: Services, record: EventRecord, event: EventView) -> EventFlow:
        # An event's machinery (handler runs, approval, coordination) loads with the
        # first event a rule takes: most of an agent's life has none.
        from forewarn.agent.flow import EventFlow

        decision = self.rules.named(record.rule)
        if decision is None:
            decision = self.rules.decide(event, self.vm_name)
            self.log.warning(
                "the event's rule is gone from the config; decided again",
                event_id=record.event_id,
                old=record.rule,
                new=decision.rule,
            )
        flow = EventFlow(
            svc,
            event,
            decision,
            record.first_seen,
            started_when_seen=record.event.get("EventStatus") == "Started",
        )
        self._flows[event.event_id] = flow
        task = asyncio.create_task(flow.run(), name=f"event {event.event_id}")
        self._tasks[event.event_id] = task
        task.add_done_callback(lambda t, eid=event.event_id: self._done(eid, t))  # type: ignore[misc]
        return flow

    def _done(self, event_id: str, task: asyncio.Task[None]) -> None:
        self._flows.pop(event_id, None)
        self._tasks.pop(event_id, None)
        if not task.cancelled() and task.exception() is not None:
            self.metrics.errors.labels("flow").inc()
            self.log.error("event flow failed", event_id=event_id, error=repr(task.exception()))

    async def _shutdown(self) -> None:
        tasks = list(self._tasks.values())
        if not tasks:
            return
        for flow in self._flows.values():
            flow.stop()
        policy = self.config.shutdown
        if policy == Shutdown.FINISH:
            busy = sum(1 for f in self._flows.values() if f.busy)
            self.log.info(
                "shutdown: letting running handlers finish",
                busy=busy,
                timeout=self.config.shutdown_timeout,
            )
            _, pending = await asyncio.wait(tasks, timeout=self.config.shutdown_timeout)
        else:
            pending = set(tasks)
        for task in pending:
            task.cancel()
        if pending:
            self.log.warning("shutdown: abandoning handlers", count=len(pending))
        await asyncio.gather(*tasks, return_exceptions=True)
