"""``forewarn scenario list|show|run|weather``: play platform behaviour against a server.

``run`` exits 0 when every expectation held, 1 when one did not (a step the server refused,
a wait that timed out and an unmet expectation all count), and 2 when the scenario could
not be played at all (a mistake in the file, no server there), so a CI job can tell a
failed rehearsal from a broken one.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from forewarn.cli.api import control_client
from forewarn.cli.errors import fail
from forewarn.cli.junit import Case, write_junit
from forewarn.cli.output import Column, print_json, table
from forewarn.controlapi import ControlError
from forewarn.fabric.catalogue import CATALOGUE, OperationKind
from forewarn.fleet.azure import DEFAULT_RESOURCE_GROUP, DEFAULT_SUBSCRIPTION
from forewarn.scenarios import (
    SELECTORS,
    ArmAccess,
    ArrivalResult,
    Run,
    Runner,
    Scenario,
    ScenarioError,
    Step,
    StepResult,
    arrivals,
    find_scenario,
    format_duration,
    library_names,
    library_scenario,
    parse_scenario,
    reaction_lines,
)
from forewarn.scenarios.model import PickSpec
from forewarn.scenarios.reaction import NOT_JUDGED

__all__ = ["scenario"]

#: ``run``: every expectation held / one did not / the scenario could not be played.
HELD, NOT_HELD, UNPLAYABLE = 0, 1, 2


def _load(name_or_file: str) -> Scenario:
    try:
        return find_scenario(name_or_file)
    except ScenarioError as exc:
        fail(str(exc), UNPLAYABLE)


@click.group()
def scenario() -> None:
    """Play named platform behaviour or scenario files against a running server."""


@scenario.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_(as_json: bool) -> None:
    """The named scenarios."""
    rows = [(name, library_scenario(name).description) for name in library_names()]
    if as_json:
        print_json([{"name": n, "description": d} for n, d in rows])
        return
    table("Named scenarios", [Column("Name", "key"), Column("What it plays", "list")],
          [list(row) for row in rows])  # fmt: skip


def _target_text(target: object) -> str:
    if isinstance(target, PickSpec):
        return (
            f"{target.pick} ({SELECTORS[target.pick][1]})"
            if target.pick in SELECTORS
            else target.pick
        )
    if isinstance(target, tuple):
        return ", ".join(target)
    return str(target)


def _timing(step: Step) -> str:
    """When a step's operation shows and how long it is announced for (platform time)."""
    if step.do is None or step.do not in {k.value for k in OperationKind}:
        return ""
    spec = CATALOGUE[OperationKind(step.do)]
    if spec.created_started:
        notice = "created Started"
    else:
        notice = f"notice {format_duration(spec.notice if step.notice is None else step.notice)}"
    duration = spec.wire_duration if step.duration is None else step.duration
    shown = f", DurationInSeconds {duration}" if duration >= 0 else ""
    return f"{spec.event_type.value}, {notice}{shown}"


def _when(step: Step) -> str:
    if step.at is not None:
        return f"+{format_duration(step.at)}"
    if step.after is not None:
        return f"after {format_duration(step.after)}"
    return "then"


@scenario.command()
@click.argument("name_or_file")
def show(name_or_file: str) -> None:
    """The timeline of a named scenario or a scenario file (no server needed)."""
    found = _load(name_or_file)
    click.echo(f"{found.name}: {found.description}" if found.description else found.name)
    if found.target is not None:
        click.echo(f"target: {_target_text(found.target)} (--target replaces it)")
    rows = []
    for step in found.steps:
        what = step.summary().replace("$target", "TARGET")
        if step.within is not None:
            what += f" (within {format_duration(step.within)})"
        rows.append([str(step.index + 1), _when(step), what, _timing(step)])
    table("Steps (platform time)", [Column("#"), Column("When"), Column("Does", "list"),
                                    Column("Event", "phrase")], rows)  # fmt: skip
    if found.weather is not None:
        click.echo(found.weather.describe())
    if found.expectations:
        click.echo("expects:")
        for e in found.expectations:
            checks = {
                k: getattr(e.spec, k)
                for k in e.spec.__struct_fields__
                if getattr(e.spec, k) is not None and k not in ("operation", "vm")
            }
            about = e.spec.operation or e.spec.vm
            click.echo(f"  {about}: " + "; ".join(_check_text(k, v) for k, v in checks.items()))


def _check_text(key: str, value: object) -> str:
    if value is True:
        return key.replace("_", " ")
    if isinstance(value, list):
        return f"{key} {', '.join(map(str, value)) or 'none'}"
    return f"{key} {value}"


class _Progress:
    """Progress of a run: a live line on a terminal, plain lines in a pipe."""

    def __init__(self, console: Console, total_steps: int) -> None:
        self.console = console
        self.run: Run | None = None
        self.total = total_steps
        self.live = console.is_terminal
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.task = self.progress.add_task("starting", total=None)

    def __enter__(self) -> _Progress:
        if self.live:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self.progress.stop()

    def _clock(self, now: float) -> str:
        assert self.run is not None
        return f"T+{format_duration(self.run.platform(now))}"

    def _say(self, line: str) -> None:
        self.console.print(line, highlight=False, markup=False, soft_wrap=True)

    def began(self, run: Run) -> None:
        self.run = run
        kind = "virtual clock" if run.virtual else "real clock"
        self._say(f"{run.scenario.name}: {kind}, time scale {run.time_scale:g}")

    def step(self, step: Step, result: StepResult) -> None:
        late = f" (late by {format_duration(result.late)})" if result.late >= 1 else ""
        outcome = f" FAILED: {result.error}" if result.error else ""
        op = f" [{result.operation}]" if result.operation else ""
        self._say(f"{self._clock(result.t)} step {step.index + 1}/{self.total}: "
                  f"{result.summary}{op}{late}{outcome}")  # fmt: skip

    def arrival(self, result: ArrivalResult) -> None:
        a = result.arrival
        outcome = f"skipped: {result.skipped}" if result.skipped else str(result.operation)
        self._say(f"{self._clock(result.t)} weather: {a.kind} on {a.target} ({outcome})")

    def waiting(self, what: str) -> None:
        self.progress.update(self.task, description=f"waiting for {what}")
        if not self.live:
            self._say(f"waiting for {what}")

    def tick(self, now: float) -> None:
        if self.live and self.run is not None:
            self.progress.update(self.task, description=f"{self._clock(now)}")


def _report(run: Run, console: Console) -> None:
    rows = [["ok" if c.ok else "FAILED", c.what, c.detail] for c in run.checks]
    if rows:
        table("Expectations", [Column("", "word"), Column("Check", "list"),
                               Column("Found", "list")], rows)  # fmt: skip
    failed = sum(not c.ok for c in run.checks)
    skipped = sum(1 for a in run.weather if a.skipped)
    weather = f"; weather: {len(run.weather)} operations, {skipped} skipped" if run.weather else ""
    played = f"T+{format_duration(run.platform(run.end))} of platform time"
    if failed:
        verdict = f"{failed} of {len(run.checks)} checks did NOT hold"
    else:
        verdict = f"every expectation held ({len(run.checks)} checks)"
    console.print(
        f"{run.scenario.name}: {verdict}, {played}{weather}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    head, reacted = reaction_lines(run.reactions)
    lines = [head] + [
        textwrap.fill(line, width=console.width, initial_indent="  ", subsequent_indent="    ",
                      break_on_hyphens=False)
        for line in reacted
    ]  # fmt: skip
    console.print("\n".join(lines), highlight=False, markup=False, soft_wrap=True)


def _as_json(run: Run) -> dict[str, Any]:
    vms = sorted({vm for ops in run.operations.values() for op in ops for vm in op["vms"]})
    return {
        "scenario": run.scenario.name,
        "ok": run.ok,
        "virtual": run.virtual,
        "time_scale": run.time_scale,
        "platform_seconds": run.platform(run.end),
        "steps": [
            {"step": s.index + 1, "summary": s.summary, "at": run.platform(s.t),
             "late": s.late, "operation": s.operation, "error": s.error}
            for s in run.steps
        ],
        "weather": [
            {"at": run.platform(a.t), "kind": a.arrival.kind, "target": a.arrival.target,
             "operation": a.operation, "skipped": a.skipped}
            for a in run.weather
        ],
        "checks": [{"what": c.what, "ok": c.ok, "found": c.detail} for c in run.checks],
        "fleet_reaction": None if run.reactions is None else [
            {"name": r.name, "operation": r.operation, "verdict": r.verdict,
             "progress": r.progress, "judged": False}
            for r in run.reactions
        ],
        "operations": run.operations,
        "seen": {vm: run.timeline.states(vm) for vm in vms},
    }  # fmt: skip


def _play(
    ctx: click.Context,
    found: Scenario,
    target: str | None,
    as_json: bool,
    junit_file: Path | None = None,
    reset: bool = False,
    arm: ArmAccess | None = None,
) -> None:
    console = Console(stderr=as_json, color_system=None if not sys.stdout.isatty() else "auto")
    with _Progress(console, len(found.steps)) as progress:
        try:
            run = Runner(
                control_client(ctx), target=target, reporter=progress, reset=reset, arm=arm
            ).run(found)
        except (ScenarioError, ControlError) as exc:  # no server there, a broken file…
            fail(str(exc), UNPLAYABLE)
    if junit_file is not None:
        write_junit(junit_file, f"forewarn scenario {run.scenario.name}", _cases(run))
    if as_json:
        print_json(_as_json(run))
    else:
        _report(run, console)
    sys.exit(HELD if run.ok else NOT_HELD)


def _cases(run: Run) -> list[Case]:
    """A refused step, then each expectation, as JUnit test cases; then how the fleet
    reacted to each operation, as the report grades it, skipped (not judged here)."""
    name = run.scenario.name
    cases = [
        Case(f"{name}.steps", f"step {s.index + 1}: {s.summary}", "failed", s.error)
        for s in run.steps
        if s.error
    ]
    cases += [
        Case(f"{name}.expectations", c.what, "passed" if c.ok else "failed", c.detail)
        for c in run.checks
    ]
    cases += [  # the report's verdict, which the expectations do not judge: skipped
        Case(f"{name}.fleet-reaction", f"how the fleet reacted to {r.name}", "skipped",
             f"{NOT_JUDGED}; forewarn report: {r.verdict}, {r.progress}")
        for r in run.reactions or []
    ]  # fmt: skip
    return cases


@scenario.command()
@click.argument("name_or_file")
@click.option("--target", default=None, help="What $target means (a VM, host or scope).")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
@click.option(
    "--junit",
    "junit_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write JUnit XML: a test case per expectation (and per refused step).",
)
@click.option(
    "--reset", is_flag=True, help="Reset the fleet first (forewarn fleet reset): a fresh drill."
)
@click.option("--arm", "arm_url", default=None, help="The server's ARM URL, for arm: steps.")
@click.option(
    "--arm-ca",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="The CA file its ARM line says to trust.",
)
@click.option(
    "--arm-subscription",
    default=DEFAULT_SUBSCRIPTION,
    show_default=True,
    help="The fleet's subscription (the server's ARM line).",
)
@click.option("--arm-resource-group", default=DEFAULT_RESOURCE_GROUP, show_default=True,
              help="The fleet's resource group (the server's ARM line).")  # fmt: skip
@click.pass_context
def run(
    ctx: click.Context,
    name_or_file: str,
    target: str | None,
    as_json: bool,
    junit_file: Path | None,
    reset: bool,
    arm_url: str | None,
    arm_ca: str | None,
    arm_subscription: str,
    arm_resource_group: str,
) -> None:
    """Play NAME_OR_FILE against the running server (`forewarn scenario list`: names).

    Exit code 0 when every expectation held, 1 when one did not, 2 when the scenario
    could not be played.
    """
    if (arm_url is None) != (arm_ca is None):
        raise click.UsageError("give --arm and --arm-ca together (the ARM line of serve)")
    arm = None
    if arm_url is not None and arm_ca is not None:
        arm = ArmAccess(arm_url, arm_ca, arm_subscription, arm_resource_group)
    _play(ctx, _load(name_or_file), target, as_json, junit_file, reset, arm)


def _rates(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for value in values:
        kind, sep, rate = value.partition("=")
        if not sep:
            raise click.BadParameter(
                f"{value!r} must look like OPERATION=RATE, e.g. live-migration=2/h"
            )
        out[kind.strip()] = rate.strip()
    return out


@scenario.command()
@click.option("--seed", type=int, default=0, help="The same seed gives the same operations.")
@click.option("--duration", required=True, help="How long (platform time): 6h, 3d.")
@click.option(
    "--rate",
    "rates",
    multiple=True,
    callback=_rates,
    metavar="OPERATION=RATE",
    help="Arrivals per host, e.g. live-migration=2/h, spot-eviction=0.5/d (repeatable).",
)
@click.option("--dry-run", is_flag=True, help="Print the operations it would bring, and stop.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def weather(
    ctx: click.Context,
    seed: int,
    duration: str,
    rates: dict[str, str],
    dry_run: bool,
    as_json: bool,
) -> None:
    """Seeded random maintenance for soak tests, at given rates per host.

    The same seed on the same fleet gives the same operations at the same times (from
    the start); an operation that finds its VM busy or gone is skipped and counted.
    """
    if not rates:
        raise click.UsageError("give at least one --rate OPERATION=RATE")
    name = f"weather-{seed}"
    raw = {"name": name, "weather": {"seed": seed, "duration": duration, "rates": rates}}
    try:
        found = parse_scenario(raw, name, "weather")
    except ScenarioError as exc:
        raise click.BadParameter(str(exc).removeprefix("weather: ")) from None
    assert found.weather is not None
    if not dry_run:
        _play(ctx, found, None, as_json)
        return
    try:
        fleet = Runner(control_client(ctx)).plan_fleet()
        planned = arrivals(found.weather, fleet)
    except (ValueError, ControlError) as exc:
        fail(str(exc), UNPLAYABLE)
    if as_json:
        print_json([{"at": a.at, "kind": a.kind, "target": a.target, "host": a.host}
                    for a in planned])  # fmt: skip
        return
    table(
        found.weather.describe(),
        [Column("At", "word"), Column("Operation"), Column("Target", "key"), Column("Host")],
        [[f"+{format_duration(a.at)}", a.kind, a.target, a.host] for a in planned],
    )
    click.echo(f"{len(planned)} operations")
