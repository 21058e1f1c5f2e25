"""Playing a scenario against a running server, through its control API.

Scenario times are platform time; the server's clock runs with its ``--time-scale``, so
every duration is divided by it. On a real clock the engine sleeps (and polls the live
events, to take each changed document); on a virtual clock it moves the clock itself, from
one due transition to the next, observing after each, so a scenario of days plays in a
moment and no document goes unseen. Waiting for approvals is the one wait that must not
move a virtual clock (NotBefore would pass): there the engine polls in real time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from forewarn.contract.durations import format_duration
from forewarn.controlapi import ControlClient, ControlRefused
from forewarn.fabric.catalogue import OperationKind
from forewarn.fabric.clock import monotonic
from forewarn.scenarios.arm_calls import ArmAccess, call_arm
from forewarn.scenarios.expect import Check, OperationFacts, evaluate
from forewarn.scenarios.faultsteps import fault_body
from forewarn.scenarios.fleetview import FleetView
from forewarn.scenarios.model import PickSpec, Scenario, ScenarioError, Step
from forewarn.scenarios.outcome import ArrivalResult, NullReporter, Reporter, Run, StepResult
from forewarn.scenarios.reaction import fleet_reactions
from forewarn.scenarios.targets import resolve
from forewarn.scenarios.timeline import Observer
from forewarn.scenarios.weather import Arrival, arrivals

__all__ = ["Runner"]

#: How long a wait may take when the step does not say (platform time): past the
#: longest notice (7 days) and the longest hold.
DEFAULT_WITHIN = 8 * 86400.0
#: Real seconds between polls on a real clock (and while waiting for approvals).
POLL = 0.1
#: How long after a due transition a real-clock run looks (reading the events fires a
#: late timer, so the transition has happened by then).
TRANSITION_LAG = 0.005
#: The most history entries one request may return (the control API's own bound).
HISTORY_LIMIT = 10_000

_KINDS = frozenset(k.value for k in OperationKind)
_ENDED = ("completed", "canceled")


@dataclass
class _Tracked:
    """A named operation (a rollout: all of its batches) and what is known of it."""

    name: str
    first: str
    rollout: str | None
    ops: dict[str, dict[str, Any]] = field(default_factory=dict)


class Runner:
    """Plays scenarios through ``control``; ``target`` replaces a scenario's ``$target``.

    ``on_tick(now)`` is called after every observation (tests look at the endpoint then).
    """

    def __init__(
        self,
        control: ControlClient,
        *,
        target: str | None = None,
        reporter: Reporter | None = None,
        on_tick: Callable[[float], None] | None = None,
        poll: float = POLL,
        reset: bool = False,
        arm: ArmAccess | None = None,
    ) -> None:
        self.control = control
        #: The server's ARM listener, for ``arm:`` steps (None: the server has none).
        self.arm = arm
        self.target = target
        #: Reset the fleet before playing, whatever the scenario says (``--reset``).
        self.reset = reset
        self.reporter: Reporter = reporter or NullReporter()
        self.on_tick = on_tick
        self.poll = poll

    def plan_fleet(self) -> FleetView:
        """The server's fleet, as targets are chosen from it."""
        return FleetView.from_topology(self.control.topology())

    def run(self, scenario: Scenario) -> Run:
        """Play ``scenario`` to its end; ScenarioError when it cannot be played at all."""
        calls = [s for s in scenario.steps if s.arm is not None]
        if calls and self.arm is None:
            raise ScenarioError(
                f"step {calls[0].index + 1} calls ARM, but this server has no ARM listener "
                "(serve with --arm-bind; give its URL and CA)"
            )
        if self.reset or scenario.reset:
            self.control.reset()  # before the fleet is read: every VM is back
        return _Play(self, scenario).play()


class _Play:
    """One run's state (the runner itself holds only settings)."""

    def __init__(self, runner: Runner, scenario: Scenario) -> None:
        self.runner = runner
        self.control = runner.control
        self.scenario = scenario
        clock = self.control.clock()
        self.virtual = bool(clock["virtual"])
        self.scale = float(clock["time_scale"])
        self.now = float(clock["now"])
        self._mono0, self._real0 = monotonic(), self.now
        self.fleet = runner.plan_fleet()
        self.observer = Observer(self.control, self.fleet)
        self.run_ = Run(scenario, self.now, self.scale, self.virtual, self.observer.timeline)
        self.tracked: dict[str, _Tracked] = {}
        self.created: list[str] = []  # every operation this run created (weather included)
        self.rollouts: set[str] = set()
        self.pending: list[tuple[float, Arrival]] = []
        self._reasons: dict[str, str] = {}
        self._target: str | None = None
        self._next_due: float | None = None
        weather = scenario.weather
        if weather is not None:
            begin = self.now + weather.at / self.scale
            try:
                planned = arrivals(weather, self.fleet)
            except ValueError as exc:
                raise ScenarioError(str(exc)) from None
            self.pending = [(begin + a.at / self.scale, a) for a in planned]
            self.weather_end = begin + weather.duration / self.scale

    # ---------------------------------------------------------------- time

    def _sync(self) -> None:
        """The server's time now (and, on a virtual clock, its next due transition)."""
        if self.virtual:
            clock = self.control.clock()
            self.now, self._next_due = float(clock["now"]), clock["next_due"]
        else:
            self.now = self._real0 + (monotonic() - self._mono0)

    def _observe(self) -> None:
        self.observer.observe(self.now)
        if self.runner.on_tick is not None:
            self.runner.on_tick(self.now)
        self.runner.reporter.tick(self.now)

    def _fire_arrivals(self) -> int:
        """Create every weather operation due by now; how many were due."""
        fired = 0
        while self.pending and self.pending[0][0] <= self.now + 1e-9:
            fired += 1
            _, arrival = self.pending.pop(0)
            result = ArrivalResult(arrival, self.now)
            body = {"kind": arrival.kind, "target": arrival.target}
            try:
                op = self.control.create(body)
            except ControlRefused as exc:  # a VM busy (409), deleted, or no longer eligible
                result.skipped = str(exc)  # the server's message and its HTTP status
            else:
                result.operation = op["id"]
                self.created.append(op["id"])
                if op.get("rollout_id"):
                    self.rollouts.add(op["rollout_id"])
            self.run_.weather.append(result)
            self.runner.reporter.arrival(result)
            self._observe()
        return fired

    def pass_time(
        self,
        until: float | None,
        stop: Callable[[], bool] | None = None,
        *,
        move_clock: bool = True,
        real_limit: float | None = None,
    ) -> bool:
        """Let time pass until ``until`` (server clock) or until ``stop()``; True if
        stopped. ``move_clock=False``: a virtual clock stands still, and the wait ends
        after ``real_limit`` real seconds (waiting for VMs, not for time)."""
        idle = 0
        deadline = None if real_limit is None else monotonic() + real_limit
        fresh = False  # an advance just told the time and the next due transition
        while True:
            if not fresh:
                self._sync()
            fresh = False
            if self._fire_arrivals():
                self._sync()  # the new operations have transitions of their own
            self._observe()
            if stop is not None and stop():
                return True
            if until is not None and self.now >= until - 1e-9:
                return False
            next_arrival = self.pending[0][0] if self.pending else None
            if self.virtual and move_clock:
                candidates = [t for t in (self._next_due, next_arrival, until) if t is not None]
                if not candidates:
                    return False  # nothing will ever happen
                step = max(0.0, min(candidates) - self.now)
                idle = idle + 1 if step == 0 else 0
                if idle > 3:  # a timer that cannot fire (the store refuses writes): wait
                    time.sleep(self.runner.poll)
                clock = self.control.advance(step)
                self.now, self._next_due = float(clock["now"]), clock["next_due"]
                fresh = True
            else:
                if deadline is not None and monotonic() >= deadline:
                    return False
                pause = self.runner.poll
                if not self.virtual:  # wake for the next transition, not a poll later
                    due = self.control.clock()["next_due"]
                    wake = None if due is None else due + TRANSITION_LAG
                    for t in (next_arrival, until, wake):
                        if t is not None:
                            pause = min(pause, max(0.0, t - self.now))
                time.sleep(pause)

    # ---------------------------------------------------------------- operations

    def _refresh(self, tracked: _Tracked) -> list[dict[str, Any]]:
        if tracked.rollout is not None:
            ops = [op for op in self.control.operations() if op["rollout_id"] == tracked.rollout]
        else:
            ops = [self.control.operation(tracked.first)]
        tracked.ops = {op["id"]: op for op in ops}
        return ops

    def start_reason(self, op: dict[str, Any]) -> str | None:
        """Why ``op`` started (``approved``, ``not_before``, …), from the history."""
        if op["id"] not in self._reasons and op["state"] != "scheduled":
            for entry in self.control.history(operation_id=op["id"], limit=HISTORY_LIMIT):
                if entry["kind"] == "operation.started":
                    self._reasons[op["id"]] = str(entry["detail"].get("reason"))
        return self._reasons.get(op["id"])

    def condition(self, tracked: _Tracked, wanted: str) -> bool | str:
        """True when ``wanted`` holds, False while it may, a reason when it never will."""
        ops = self._refresh(tracked)
        states = [op["state"] for op in ops]
        if wanted == "ended":
            return all(state in _ENDED for state in states)
        if wanted == "started":
            if any(state in ("started", "completed") for state in states):
                return True
            return (
                "it was canceled before it started"
                if all(s == "canceled" for s in states)
                else False
            )
        for op in ops:  # approved: every batch so far started because it was approved
            if op["state"] == "scheduled":
                return False
            if op["state"] == "canceled":
                return "it was canceled"
            reason = self.start_reason(op)
            if reason not in ("approved", "auto_approved"):
                return f"it started without every approval ({reason})"
        return True

    def resolve(self, target: str | tuple[str, ...] | PickSpec) -> str | tuple[str, ...]:
        """Names for a step's target; ``$target`` is chosen once per run (a pick made
        again later could choose another VM: the first one may be deleted by then)."""
        if target == "$target" or (isinstance(target, tuple) and "$target" in target):
            if self._target is None:
                given = self.runner.target or self.scenario.target
                if given is None:
                    raise ScenarioError("the scenario uses $target: give one with --target")
                chosen = resolve(given, self.fleet, None)
                assert isinstance(chosen, str)
                self._target = chosen
            if isinstance(target, tuple):
                return tuple(self._target if t == "$target" else t for t in target)
            return self._target
        return resolve(target, self.fleet, None)

    def _create(self, step: Step, result: StepResult) -> None:
        assert step.do is not None and step.target is not None
        target = self.resolve(step.target)
        body: dict[str, Any] = {"kind": step.do}
        if isinstance(target, tuple):
            body["vms"] = list(target)
        else:
            body["target"] = target
        if step.notice is not None:
            body["notice_seconds"] = step.notice / self.scale
        if step.duration is not None:
            body["duration_seconds"] = step.duration
        if step.description is not None:
            body["description"] = step.description
        op = self.control.create(body)
        result.operation = op["id"]
        result.summary = f"{step.do} {op['target']}" + (f" as {step.name}" if step.name else "")
        self.created.append(op["id"])
        if op.get("rollout_id"):
            self.rollouts.add(op["rollout_id"])
        if step.name is not None:
            self.tracked[step.name] = _Tracked(step.name, op["id"], op.get("rollout_id"))
            self.tracked[step.name].ops[op["id"]] = op

    def _arm(self, step: Step, result: StepResult) -> None:
        """Call ARM; the operation it created is the one no earlier listing had."""
        assert step.arm is not None and self.runner.arm is not None
        vm = self.resolve(step.arm.vm)
        assert isinstance(vm, str)
        before = {op["id"] for op in self.control.operations()}
        call_arm(self.runner.arm, step.arm.action, vm)
        new = [op for op in self.control.operations() if op["id"] not in before]
        named = f" as {step.name}" if step.name else ""
        result.summary = f"arm {step.arm.action} {vm}{named}"
        for op in new:
            self.created.append(op["id"])
        if new:
            result.operation = new[0]["id"]
        if step.name is not None:
            if not new:
                raise ScenarioError(f"ARM {step.arm.action} {vm} created no operation")
            self.tracked[step.name] = _Tracked(step.name, new[0]["id"], new[0].get("rollout_id"))
            self.tracked[step.name].ops[new[0]["id"]] = new[0]

    def _act(self, step: Step, result: StepResult) -> None:
        assert step.do is not None and isinstance(step.target, str)
        tracked = self.tracked.get(step.target)
        if tracked is None:
            raise ScenarioError(f"operation {step.target!r} was never created")
        ops = {op["id"] for op in self._refresh(tracked)}
        wanted = {"approve": "Scheduled", "cancel": "Scheduled", "start": "Scheduled"}
        live = [
            e
            for e in self.control.events()
            if e["operation_id"] in ops
            and e["status"] == wanted.get(step.do, "Started")
            and not (step.do == "approve" and e["approved_by"])
        ]
        if step.do == "start":
            live = live[:1]  # starting one event starts its whole operation
        if step.count is not None:
            live = live[: step.count]
        if not live and step.do == "approve":  # the VMs were quicker: nothing left to do
            result.summary = f"approve {step.target}: every event was approved already"
            return
        if not live:
            raise ScenarioError(f"{step.target} has no event to {step.do} now")
        for event in live:
            self.control.event_action(event["id"], step.do)
        result.summary = f"{step.do} {len(live)} event(s) of {step.target}"

    # ---------------------------------------------------------------- steps

    def _step(self, step: Step, previous_end: float) -> float:
        if step.at is not None:
            due = self.run_.start + step.at / self.scale
        elif step.after is not None:
            due = previous_end + step.after / self.scale
        else:
            due = self.now
        if due > self.now:
            self.pass_time(until=due)
        result = StepResult(step.index, step.summary(), self.now)
        result.late = max(0.0, (self.now - due) * self.scale)
        try:
            if step.do in _KINDS:
                self._create(step, result)
            elif step.is_action:
                self._act(step, result)
            elif step.fault is not None:
                fault = self.control.add_fault(fault_body(step.fault, step.fault_for))
                result.summary = f"{step.summary()} ({fault['id']})"
            elif step.clear_faults:
                cleared = self.control.clear_faults()
                result.summary = f"cleared {len(cleared)} fault(s)"
            elif step.arm is not None:
                self._arm(step, result)
        except (ScenarioError, ControlRefused) as exc:  # a refusal says its HTTP status
            result.error = str(exc)
            self.run_.checks.append(
                Check(f"step {step.index + 1}: {result.summary}", False, result.error)
            )
        self.run_.steps.append(result)
        self.runner.reporter.step(step, result)
        self._sync()
        self._observe()
        if step.wait is not None and result.error is None:
            self._wait(step)
        elif step.pause is not None:
            self.pass_time(until=self.now + step.pause / self.scale)
        return self.now

    def _wait(self, step: Step) -> None:
        assert step.wait is not None and step.wait_for is not None
        within = DEFAULT_WITHIN if step.within is None else step.within
        what = (
            f"step {step.index + 1}: {step.wait_for} {step.wait} within {format_duration(within)}"
        )
        tracked = self.tracked.get(step.wait_for)
        if tracked is None:
            self.run_.checks.append(Check(what, False, f"{step.wait_for} was never created"))
            return
        self.runner.reporter.waiting(f"{step.wait_for} {step.wait}")
        outcome: list[bool | str] = [False]

        def stop() -> bool:
            outcome[0] = self.condition(tracked, step.wait or "")
            return outcome[0] is not False

        start = self.now
        if step.wait == "approved" and self.virtual:
            self.pass_time(None, stop, move_clock=False, real_limit=within / self.scale)
        else:
            self.pass_time(self.now + within / self.scale, stop)
        took = format_duration((self.now - start) * self.scale)
        if outcome[0] is True:
            self.run_.checks.append(Check(what, True, f"after {took}"))
        elif outcome[0] is False:
            self.run_.checks.append(Check(what, False, f"not after {took}"))
        else:
            self.run_.checks.append(Check(what, False, str(outcome[0])))

    def _settle(self) -> None:
        """Let every operation the run created end (bounded like a wait)."""

        def ended() -> bool:
            ops = self.control.operations()
            mine = set(self.created)
            return all(
                op["state"] in _ENDED
                for op in ops
                if op["id"] in mine or op["rollout_id"] in self.rollouts
            )

        self.runner.reporter.waiting("every operation to end")
        if not self.pass_time(self.now + DEFAULT_WITHIN / self.scale, ended):
            self.run_.checks.append(
                Check(
                    "every operation ended", False, "some were still under way when the run stopped"
                )
            )

    def play(self) -> Run:
        run = self.run_
        self.observer.start(self.now)
        self.runner.reporter.began(run)
        self._observe()  # the fleet as it was before the first step
        end = self.now
        for step in self.scenario.steps:
            end = self._step(step, end)
        if self.scenario.weather is not None:
            self.runner.reporter.waiting("the weather to pass")
            self.pass_time(until=self.weather_end)
        if self.scenario.settle:
            self._settle()
        facts = {name: self._facts(t) for name, t in self.tracked.items()}
        run.operations = {name: f.ops for name, f in facts.items()}
        statuses = {vm["name"]: vm["status"] for vm in self.control.vms()}
        run.checks.extend(
            evaluate(
                self.scenario.expectations, facts, run.timeline, statuses, self.scale, self._vm_name
            )
        )
        self._sync()
        names = {op["id"]: name for name, ops in run.operations.items() for op in ops}
        names |= {t.rollout: name for name, t in self.tracked.items() if t.rollout}
        run.reactions = fleet_reactions(self.control, names, self.created)
        run.end = self.now
        return run

    def _vm_name(self, name: str) -> str:
        if name != "$target":
            return name
        try:
            chosen = self.resolve("$target")
        except ScenarioError as exc:
            return f"$target ({exc})"
        return chosen if isinstance(chosen, str) else name

    def _facts(self, tracked: _Tracked) -> OperationFacts:
        ops = self._refresh(tracked)
        scopes: list[str] = []
        for op in ops:
            for entry in self.control.history(operation_id=op["id"], limit=HISTORY_LIMIT):
                if entry["kind"] == "event.scheduled" and entry["scope_id"]:
                    scopes.append(entry["scope_id"])
        reasons = [self.start_reason(op) for op in ops]
        return OperationFacts(tracked.name, ops, reasons, scopes, self.fleet)
