"""Scenario files: a YAML timeline of operations, waits and expectations, checked on load.

    name: drain-drill
    steps:
      - {at: +1m, do: platform-reboot, on: web, as: rollout}
      - {wait: ended, for: rollout, within: 2h}
    expect:
      - {operation: rollout, state: completed}

The file is parsed into the msgspec Structs below, then checked (operation names come
from the fabric's catalogue, so a scenario can never name an operation the platform does
not know), and compiled into a ``Scenario``: steps with their times in platform seconds.
Every mistake is one line naming the file, the line and the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from forewarn.contract.durations import parse_duration
from forewarn.fabric.catalogue import OperationKind
from forewarn.fleet.yamlfile import YamlError, line_of, read_yaml
from forewarn.scenarios.faultsteps import FaultSpec, FaultStepError, check_fault, fault_summary
from forewarn.scenarios.weather import Weather, parse_weather

__all__ = [
    "ACTIONS",
    "ARM_ACTIONS",
    "CONDITIONS",
    "START_REASONS",
    "ArmStepSpec",
    "ExpectSpec",
    "Expectation",
    "PickSpec",
    "Scenario",
    "ScenarioError",
    "ScenarioSpec",
    "Step",
    "StepSpec",
    "WeatherSpec",
    "compile_scenario",
    "load_scenario_file",
    "parse_scenario",
]

#: What a step may do to a named operation's events (the control API's event actions).
ACTIONS = ("approve", "start", "cancel", "complete")
#: What a step may wait for, on a named operation (a rollout: its whole walk).
CONDITIONS = ("approved", "started", "ended")
#: How an operation may have started (``expect: started``); ``at_once`` covers events
#: created Started (hardware failure, auto-approval) and operations with no notice.
START_REASONS = ("approved", "not_before", "forced", "at_once")
STATES = ("scheduled", "started", "completed", "canceled")
#: What an ``arm:`` step may ask ARM to do to a VM (as azure-mgmt-compute's begin_*).
ARM_ACTIONS = ("restart", "redeploy", "reimage")

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,39}")


class ScenarioError(ValueError):
    """A scenario that cannot be loaded or played; the message says where and why."""


def _doc(text: str) -> msgspec.Meta:
    return msgspec.Meta(description=text)


Duration = float | str


class PickSpec(msgspec.Struct, forbid_unknown_fields=True):
    """A target chosen from the running server's fleet (see ``targets.SELECTORS``)."""

    pick: Annotated[str, _doc("What to pick, e.g. host, shared-host, spot-vm.")]


class ArmStepSpec(msgspec.Struct, forbid_unknown_fields=True):
    """A call to the server's ARM listener: ``{action: restart, vm: web-0}``."""

    action: Annotated[str, _doc("restart, redeploy or reimage (a VM action of ARM).")]
    vm: Annotated[str, _doc("The VM it acts on ($target allowed).")]


class StepSpec(
    msgspec.Struct,
    forbid_unknown_fields=True,
    omit_defaults=True,
    rename={"as_": "as", "for_": "for"},
):
    """One step: at a time, do an operation or an event action, and/or wait."""

    at: Annotated[Duration | None, _doc("When, from the start (platform time): +15m.")] = None
    after: Annotated[Duration | None, _doc("When, from the end of the previous step.")] = None
    do: Annotated[
        str | None, _doc("An operation (user-reboot, ...) or approve|start|cancel|complete.")
    ] = None
    on: Annotated[
        str | list[str] | PickSpec | None,
        _doc(
            "The target: a VM, host or scope (or VMs; $target; {pick: ...}); for an "
            "event action, the name (as:) of an earlier operation."
        ),
    ] = None
    notice: Annotated[Duration | None, _doc("Notice instead of the operation's usual.")] = None
    duration: Annotated[int | None, _doc("DurationInSeconds its events announce.")] = None
    description: Annotated[str | None, _doc("Description its events show.")] = None
    as_: Annotated[str | None, _doc("A name for the operation, for waits and expectations.")] = None
    count: Annotated[int | None, _doc("An event action on only the first N live events.")] = None
    wait: Annotated[
        Duration | None,
        _doc(
            "Wait for approved, started or ended (of this step's operation, or for:), or a "
            "duration."
        ),
    ] = None
    for_: Annotated[str | None, _doc("The named operation the wait is about.")] = None
    within: Annotated[Duration | None, _doc("How long the wait may take (platform time).")] = None
    fault: Annotated[FaultSpec | None, _doc("Inject an endpoint fault (see FaultSpec).")] = None
    clear_faults: Annotated[bool | None, _doc("true: clear every injected fault.")] = None
    arm: Annotated[
        ArmStepSpec | None, _doc("A call through ARM instead of do: (as: names its operation).")
    ] = None


class ExpectSpec(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """What must hold once the scenario has played: about an operation or a VM."""

    operation: Annotated[str | None, _doc("A named operation (as:) the checks are about.")] = None
    vm: Annotated[str | None, _doc("A VM the checks are about.")] = None
    state: Annotated[
        Literal["scheduled", "started", "completed", "canceled"] | None, _doc("Its final state.")
    ] = None
    started: Annotated[
        str | list[str] | None, _doc("How it started: approved, not_before, forced, at_once.")
    ] = None
    events: Annotated[int | None, _doc("How many events it raised (one per scope, host, UD).")] = (
        None
    )
    one_event_per_scope: Annotated[bool | None, _doc("Each scope it touched got one event.")] = None
    sequential: Annotated[bool | None, _doc("A rollout's batches never overlapped.")] = None
    notice_at_least: Annotated[Duration | None, _doc("NotBefore was at least this far ahead.")] = (
        None
    )
    unnotified: Annotated[list[str] | None, _doc("The VMs that got no notice ([]: none).")] = None
    vms_saw: Annotated[
        list[str] | None,
        _doc("What each VM it touched saw of its events, in order: Freeze Scheduled, ..."),
    ] = None
    saw: Annotated[
        list[str] | None, _doc("What the VM saw of the events listing it, in order ([]: nothing).")
    ] = None
    status: Annotated[Literal["running", "deleted"] | None, _doc("The VM's final status.")] = None


class WeatherSpec(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Seeded random operations: arrivals per host and per operation, for soak tests."""

    duration: Annotated[Duration, _doc("How long the weather lasts (platform time).")]
    rates: Annotated[dict[str, Duration], _doc("Operation → arrivals per host: 2/h, 0.5/d.")]
    seed: Annotated[int, _doc("The same seed gives the same operations at the same times.")] = 0
    hosts: Annotated[
        dict[str, dict[str, Duration]] | None, _doc("Per-host rates instead of the fleet-wide.")
    ] = None
    at: Annotated[Duration, _doc("When it begins, from the start of the scenario.")] = 0


class ScenarioSpec(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A scenario file."""

    name: Annotated[str | None, _doc("Its name (default: the file's name).")] = None
    description: Annotated[str, _doc("What it rehearses.")] = ""
    target: Annotated[
        str | PickSpec | None, _doc("What $target means (forewarn scenario run --target).")
    ] = None
    steps: Annotated[list[StepSpec], _doc("The timeline.")] = []
    expect: Annotated[list[ExpectSpec], _doc("What must hold at the end.")] = []
    weather: WeatherSpec | None = None
    settle: Annotated[
        bool, _doc("After the steps, wait until every operation it started has ended.")
    ] = True
    reset: Annotated[
        bool, _doc("Start from a reset fleet (forewarn fleet reset): every VM back, no event.")
    ] = False


@dataclass(frozen=True, slots=True)
class Step:
    """A compiled step: times in platform seconds; ``target`` still unresolved."""

    index: int
    at: float | None
    after: float | None
    do: str | None
    target: str | tuple[str, ...] | PickSpec | None
    notice: float | None
    duration: int | None
    description: str | None
    name: str | None
    count: int | None
    wait: str | None
    pause: float | None
    wait_for: str | None
    within: float | None
    #: An endpoint fault to inject, and how long it lasts (platform seconds; None: until
    #: cleared).
    fault: FaultSpec | None = None
    fault_for: float | None = None
    clear_faults: bool = False
    #: An ``arm:`` step: the action and the VM (None otherwise).
    arm: ArmStepSpec | None = None

    @property
    def is_action(self) -> bool:
        """An event action on a named operation (approve, start, cancel, complete)."""
        return self.do in ACTIONS

    def summary(self) -> str:
        """What the step does, in a few words."""
        parts = []
        if self.do is not None:
            target = self.target
            if isinstance(target, PickSpec):
                shown = f"a {target.pick}"
            elif isinstance(target, tuple):
                shown = ", ".join(target)
            else:
                shown = str(target)
            parts.append(f"{self.do} {shown}" + (f" as {self.name}" if self.name else ""))
        if self.fault is not None:
            parts.append(fault_summary(self.fault, self.fault_for))
        if self.clear_faults:
            parts.append("clear every fault")
        if self.arm is not None:
            named = f" as {self.name}" if self.name else ""
            parts.append(f"arm {self.arm.action} {self.arm.vm}{named}")
        if self.wait is not None:
            parts.append(f"wait until {self.wait_for} {self.wait}")
        if self.pause is not None:
            parts.append(f"wait {self.pause:g}s")
        return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class Expectation:
    """A compiled expectation (``spec`` holds the checks; durations parsed)."""

    index: int
    spec: ExpectSpec
    notice_at_least: float | None = None


@dataclass(frozen=True, slots=True)
class Scenario:
    """A checked scenario, ready to play against any fleet that has its targets."""

    name: str
    description: str
    target: str | PickSpec | None
    steps: tuple[Step, ...]
    expectations: tuple[Expectation, ...]
    weather: Weather | None
    settle: bool
    source: str = ""
    #: Reset the fleet before the first step (``reset: true``, ``scenario run --reset``).
    reset: bool = False
    names: frozenset[str] = field(default_factory=frozenset)


class _Located(ScenarioError):
    def __init__(self, message: str, path: str) -> None:
        super().__init__(f"{message} - at `{path}`")
        self.path = path


def _duration(value: object, path: str, what: str) -> float:
    try:
        return parse_duration(value, what)
    except ValueError as exc:
        raise _Located(str(exc), path) from None


def _fault(spec: StepSpec, where: str) -> float | None:
    """A step's ``fault:`` / ``clear_faults:`` checked; how long the fault lasts."""
    if spec.clear_faults is False:
        raise _Located("clear_faults: true clears every fault (or leave it out)", where)
    if spec.fault is None:
        return None
    if spec.clear_faults:
        raise _Located("a step injects a fault or clears faults, not both", where + ".fault")
    if spec.do is not None:
        raise _Located(
            "a fault step does not also do an operation (give it its own step)", where + ".fault"
        )
    try:
        return check_fault(spec.fault)
    except FaultStepError as exc:
        raise _Located(str(exc), where + ".fault" + exc.key) from None


def _step(spec: StepSpec, index: int, names: set[str]) -> Step:
    where = f"$.steps[{index}]"
    kinds = {k.value for k in OperationKind}
    if spec.at is not None and spec.after is not None:
        raise _Located("give at or after, not both", where + ".after")
    fault_for = _fault(spec, where)
    if (
        spec.do is None
        and spec.wait is None
        and spec.arm is None
        and spec.fault is None
        and not spec.clear_faults
    ):
        raise _Located(
            "a step needs do: (an operation or event action), arm:, wait:, fault: or clear_faults:",
            where,
        )
    if spec.arm is not None:
        _arm_step(spec, where)
    if spec.do is not None and spec.do not in kinds and spec.do not in ACTIONS:
        known = ", ".join([*sorted(kinds), *ACTIONS])
        raise _Located(f"unknown operation {spec.do!r}; known: {known}", where + ".do")
    target: str | tuple[str, ...] | PickSpec | None = None
    if spec.do is not None:
        if spec.on is None or spec.on == [] or spec.on == "":
            raise _Located(f"{spec.do} needs on: (what it acts on)", where)
        target = tuple(spec.on) if isinstance(spec.on, list) else spec.on
        if spec.do in ACTIONS:
            if not isinstance(target, str) or target not in names:
                raise _Located(
                    f"{spec.do} acts on the events of an earlier operation: name it as it was "
                    f"named with as: ({', '.join(sorted(names)) or 'none so far'})",
                    where + ".on",
                )
            for key in ("notice", "duration", "description", "as_"):
                if getattr(spec, key) is not None:
                    raise _Located(f"{key.rstrip('_')} is for operations, not {spec.do}", where)
    if spec.count is not None and (spec.do not in ACTIONS or spec.count < 1):
        raise _Located("count (at least 1) is for event actions only", where + ".count")
    if spec.as_ is not None:
        if (spec.do is None and spec.arm is None) or spec.do in ACTIONS:
            raise _Located("as: names an operation a step starts", where + ".as")
        if not _NAME.fullmatch(spec.as_):
            raise _Located(
                f"name {spec.as_!r} must be a letter then letters, digits, - or _", where + ".as"
            )
        if spec.as_ in names:
            raise _Located(f"the name {spec.as_!r} is used twice", where + ".as")
        names.add(spec.as_)
    wait = pause = None
    wait_for = spec.for_
    if spec.wait is not None:
        if isinstance(spec.wait, str) and spec.wait.strip().lower() in CONDITIONS:
            wait = spec.wait.strip().lower()
            acted_on = target if spec.do in ACTIONS and isinstance(target, str) else None
            wait_for = wait_for or spec.as_ or acted_on
            if wait_for is None:
                raise _Located(
                    f"wait: {wait} is about a named operation: add for: NAME (or as: NAME)",
                    where + ".wait",
                )
            if wait_for not in names:
                raise _Located(f"no operation named {wait_for!r} so far", where + ".for")
        else:
            try:
                pause = parse_duration(spec.wait, "wait")
            except ValueError:
                raise _Located(
                    f"wait {spec.wait!r} is neither {', '.join(CONDITIONS)} nor a duration",
                    where + ".wait",
                ) from None
    elif spec.for_ is not None or spec.within is not None:
        raise _Located("for: and within: go with wait:", where)
    return Step(
        index=index,
        at=None if spec.at is None else _duration(spec.at, where + ".at", "at"),
        after=None if spec.after is None else _duration(spec.after, where + ".after", "after"),
        do=spec.do,
        target=target,
        notice=None if spec.notice is None else _duration(spec.notice, where + ".notice", "notice"),
        duration=spec.duration,
        description=spec.description,
        name=spec.as_,
        count=spec.count,
        wait=wait,
        pause=pause,
        wait_for=wait_for,
        within=None if spec.within is None else _duration(spec.within, where + ".within", "within"),
        fault=spec.fault,
        fault_for=fault_for,
        clear_faults=bool(spec.clear_faults),
        arm=spec.arm,
    )


def _arm_step(spec: StepSpec, where: str) -> None:
    """An ``arm:`` step is a call of its own: no do:/on: beside it, a known action."""
    assert spec.arm is not None
    if spec.do is not None or spec.on is not None:
        raise _Located("give do: or arm:, not both (arm: names its vm:)", where + ".arm")
    for key in ("notice", "duration", "description", "count"):
        if getattr(spec, key) is not None:
            raise _Located(f"{key} is not something an ARM call takes", where + f".{key}")
    if spec.arm.action not in ARM_ACTIONS:
        raise _Located(
            f"unknown ARM action {spec.arm.action!r}; known: {', '.join(ARM_ACTIONS)}",
            where + ".arm.action",
        )
    if not spec.arm.vm:
        raise _Located("arm: needs vm: (the VM it acts on)", where + ".arm.vm")


def _expectation(spec: ExpectSpec, index: int, names: set[str]) -> Expectation:
    where = f"$.expect[{index}]"
    if (spec.operation is None) == (spec.vm is None):
        raise _Located("an expectation is about one operation: or one vm:", where)
    given = {k for k in spec.__struct_fields__ if getattr(spec, k) is not None} - {
        "operation",
        "vm",
    }
    allowed = {"saw", "status"} if spec.vm is not None else (
        {"state", "started", "events", "one_event_per_scope", "sequential", "notice_at_least",
         "unnotified", "vms_saw"}
    )  # fmt: skip
    if not given:
        raise _Located("an expectation needs at least one check", where)
    wrong = sorted(given - allowed)
    if wrong:
        about = "a VM" if spec.vm is not None else "an operation"
        raise _Located(
            f"{wrong[0]} is not a check of {about} (use {', '.join(sorted(allowed))})",
            where + f".{wrong[0]}",
        )
    if spec.operation is not None and spec.operation not in names:
        raise _Located(
            f"no operation named {spec.operation!r} (name one with as:)", where + ".operation"
        )
    started = [spec.started] if isinstance(spec.started, str) else spec.started or []
    for reason in started:
        if reason not in START_REASONS:
            raise _Located(
                f"started must be one of {', '.join(START_REASONS)}, not {reason!r}",
                where + ".started",
            )
    for key in ("saw", "vms_saw"):
        for state in getattr(spec, key) or ():
            if not re.fullmatch(
                r"(Freeze|Reboot|Redeploy|Preempt|Terminate) (Scheduled|Started)", state
            ):
                raise _Located(
                    f"{state!r} is not an event state like 'Freeze Scheduled' or 'Reboot Started'",
                    where + f".{key}",
                )
    notice = None
    if spec.notice_at_least is not None:
        notice = _duration(spec.notice_at_least, where + ".notice_at_least", "notice_at_least")
    return Expectation(index, spec, notice)


def compile_scenario(spec: ScenarioSpec, name: str, source: str = "") -> Scenario:
    """Check ``spec`` and compile it; ScenarioError (``_Located``: with its path)."""
    if spec.name is not None:
        name = spec.name
    if not _NAME.fullmatch(name):
        raise _Located(
            f"scenario name {name!r} must be a letter then letters, digits, - or _", "$.name"
        )
    names: set[str] = set()
    steps = tuple(_step(s, i, names) for i, s in enumerate(spec.steps))
    expectations = tuple(_expectation(e, i, names) for i, e in enumerate(spec.expect))
    weather = None
    if spec.weather is not None:
        try:
            w = spec.weather
            weather = parse_weather(
                seed=w.seed, duration=w.duration, rates=w.rates, hosts=w.hosts, at=w.at
            )
        except ValueError as exc:
            raise _Located(str(exc), "$.weather") from None
    if not steps and weather is None:
        raise _Located("a scenario needs steps: or weather:", "$")
    uses_target = (
        any(s.target == "$target" for s in steps)
        or any(isinstance(s.target, tuple) and "$target" in s.target for s in steps)
        or any(e.spec.vm == "$target" for e in expectations)
        or any(s.arm is not None and s.arm.vm == "$target" for s in steps)
    )
    if uses_target and spec.target is None:
        raise _Located("steps use $target, but target: is not given", "$.target")
    return Scenario(
        name=name,
        description=spec.description,
        target=spec.target,
        steps=steps,
        expectations=expectations,
        weather=weather,
        settle=spec.settle,
        reset=spec.reset,
        source=source,
        names=frozenset(names),
    )


def _where(origin: str, source: str | None, exc: Exception) -> str:
    """``scenario file x.yaml, line 7`` when the entry's line is known."""
    path = exc.path if isinstance(exc, _Located) else _msgspec_path(str(exc))
    line = line_of(source, path) if source is not None and path is not None else None
    return origin if line is None else f"{origin}, line {line}"


def _msgspec_path(message: str) -> str | None:
    found = re.search(r" - at `(\$[^`]*)`$", message)
    path = found.group(1) if found else None
    unknown = re.match(r"^Object contains unknown field `([^`]+)`", message)
    if unknown:
        return f"{path or '$'}.{unknown.group(1)}"
    return path


def _bare_on(raw: Any) -> Any:
    """YAML 1.1 reads a bare ``on:`` key as ``true``: give steps their ``on`` back."""
    if isinstance(raw, dict) and isinstance(raw.get("steps"), list):
        steps = [
            {("on" if key is True else key): value for key, value in step.items()}
            if isinstance(step, dict) and True in step and "on" not in step
            else step
            for step in raw["steps"]
        ]
        return {**raw, "steps": steps}
    return raw


def parse_scenario(
    raw: Any, name: str, origin: str = "scenario", source: str | None = None
) -> Scenario:
    """Validate and compile plain data (from YAML) as a scenario; ``source`` is the file
    it came from, so that errors name the line."""
    try:
        spec = msgspec.convert(_bare_on(raw), ScenarioSpec)
        return compile_scenario(spec, name, origin)
    except (msgspec.ValidationError, ScenarioError) as exc:
        raise ScenarioError(f"{_where(origin, source, exc)}: {exc}") from None


def load_scenario_file(path: str | Path) -> Scenario:
    """Read, check and compile a scenario file."""
    try:
        raw = read_yaml(path)
    except OSError as exc:
        raise ScenarioError(f"cannot read scenario file {path}: {exc.strerror or exc}") from None
    except YamlError as exc:
        raise ScenarioError(f"scenario file {exc}") from None
    return parse_scenario(raw, Path(path).stem, f"scenario file {path}", str(path))
